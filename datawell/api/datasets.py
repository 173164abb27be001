"""Datasets: create (namespace created on first use), list, read, change the description and
schema, rename (the dataset or its namespace), delete (`datawell.lifecycle`)."""

from __future__ import annotations

from collections.abc import Callable

from pydantic import BaseModel, Field
from starlette.requests import Request

from datawell import lifecycle
from datawell.api.routing import Context, DatasetPath, Endpoint, NamespacePath, PathModel, Router
from datawell.api.schemas import ApiModel
from datawell.client.models import Dataset as DatasetResponse
from datawell.client.models import DatasetList
from datawell.client.models import Deleted as DeletedResponse
from datawell.client.models import NamespaceInfo as NamespaceResponse
from datawell.lifecycle import Stores
from datawell.storage.access import NamespaceRef, ensure_namespace
from datawell.storage.datasets import (
    FIELD_PATTERN_TEXT,
    MAX_FIELDS,
    DatasetSummary,
    create_dataset,
    readable_dataset,
    readable_datasets,
)
from datawell.storage.tables import Dataset, User
from datawell.storage.users import NAME_PATTERN

router = Router("datasets")

MAX_DESCRIPTION = 10000


class NewDatasetPath(PathModel):
    namespace: str = Field(description="One of the caller's namespaces, created on first use")
    dataset_name: str


class DatasetCreateRequest(ApiModel):
    data_description: str = Field(
        "", max_length=MAX_DESCRIPTION, description="Describes the dataset to help the AI system understand context."
    )
    schema_definition: dict[str, str] = Field(
        default_factory=dict,
        description="Maps field names to descriptions that guide structuring of extracted data. Field names are "
        "column names: letters, digits and '_', not starting with a digit or '__', unique ignoring case. Omitted "
        "or empty: the dataset takes its fields from the first JSON rows ingested into it (`POST /ingest/...`) "
        "or from a `schemaDefinition` given when an upload finishes.",
        # Checked by create, which names every bad field and why.
        json_schema_extra={
            "maxProperties": MAX_FIELDS,
            "propertyNames": {"pattern": FIELD_PATTERN_TEXT},
        },
    )


def dataset_response(namespace: NamespaceRef, record: Dataset | DatasetSummary) -> DatasetResponse:
    return DatasetResponse(
        id=record.id,
        owner=namespace.owner,
        namespace=namespace.name,
        dataset_name=record.name,
        data_description=record.description,
        schema_definition=record.schema_definition,
        field_types=record.field_types,
        created_at=record.created_at,
        updated_at=record.updated_at,
    )


@router.post(
    "/ingest/new/{namespace}/{datasetName}",
    DatasetResponse,
    body=DatasetCreateRequest,
    status=201,
    errors=(409,),
    params=NewDatasetPath,
)
async def create(
    request: Request, ctx: Context, user: User, body: DatasetCreateRequest, path: NewDatasetPath
) -> DatasetResponse:
    """Create a dataset

    Creates a dataset owned by the caller in the caller's namespace, creating the namespace on first use."""
    async with ctx.services.db.session() as session:
        namespace = await ensure_namespace(session, user, path.namespace)
        dataset = await create_dataset(
            session, namespace, path.dataset_name, body.data_description, body.schema_definition, user
        )
        return dataset_response(namespace, dataset.record)


@router.get("/datasets/{username}/{namespace}", DatasetList, errors=(403, 404), params=NamespacePath)
async def list_namespace(request: Request, ctx: Context, user: User, path: NamespacePath) -> DatasetList:
    """List the datasets of a namespace

    Lists the datasets of a namespace the caller owns or holds a grant on."""
    # The hot read: access and data in one round trip (docs/decisions.md, "API read speed").
    namespace, datasets = await readable_datasets(ctx.services.db.direct, user, path.username, path.namespace)
    return DatasetList(data=[dataset_response(namespace, d) for d in datasets])


@router.get("/datasets/{username}/{namespace}/{datasetName}", DatasetResponse, errors=(403, 404), params=DatasetPath)
async def read(request: Request, ctx: Context, user: User, path: DatasetPath) -> DatasetResponse:
    """Read a dataset

    Reads one dataset: its description, schema and inferred field types."""
    namespace, dataset = await readable_dataset(
        ctx.services.db.direct, user, path.username, path.namespace, path.dataset_name
    )
    return dataset_response(namespace, dataset)


class DefinitionUpdate(ApiModel):
    data_description: str | None = Field(None, max_length=MAX_DESCRIPTION, description="The new description.")
    schema_definition: dict[str, str] | None = Field(
        None,
        description="The whole new schema, field name -> description. A new field becomes a nullable (text) "
        "column; a field left out is removed, which is refused (409) while rows hold values in it unless force=true.",
        json_schema_extra={
            "minProperties": 1,
            "maxProperties": MAX_FIELDS,
            "propertyNames": {"pattern": FIELD_PATTERN_TEXT},
        },
    )


class DefinitionQuery(ApiModel):
    force: bool = Field(False, description="Remove fields even though rows hold values in them (the values go).")


class RenameRequest(ApiModel):
    # Checked by the rename, which says what a name may hold.
    name: str = Field(description="The new name.", json_schema_extra={"pattern": NAME_PATTERN.pattern})


def stores(ctx: Context) -> Stores:
    return Stores(ctx.services.db, ctx.services.rows, ctx.services.vectors, ctx.services.objects)


def _coordinate(user: User, path: DatasetPath) -> tuple[str, str, str]:
    return path.owner_for(user), path.namespace, path.dataset_name


@router.put(
    "/data/{username}/{namespace}/{datasetName}/inferDefinition",
    DatasetResponse,
    body=DefinitionUpdate,
    query=DefinitionQuery,
    errors=(403, 404, 409),
    params=DatasetPath,
)
async def update_definition(
    request: Request, ctx: Context, user: User, body: DefinitionUpdate, query: DefinitionQuery, path: DatasetPath
) -> DatasetResponse:
    """Update a dataset's description and schema

    Changes the description, the schema, or both (needs write access to the namespace)."""
    dataset = await lifecycle.update_definition(
        stores(ctx),
        user,
        *_coordinate(user, path),
        body.data_description,
        body.schema_definition,
        force=query.force,
    )
    return dataset_response(dataset.namespace, dataset.record)


def renames(path: str, response: type[BaseModel], params: type[PathModel]) -> Callable[[Endpoint], Endpoint]:
    """A rename's route: the new name as JSON `{"name": ...}` or text/plain (the DataLinks SDK's),
    access checked by `lifecycle` (403, 404), 409 when the name is taken."""
    return router.post(path, response, body=RenameRequest, text_field="name", errors=(403, 404, 409), params=params)


@renames("/data/{username}/{namespace}/{datasetName}/rename", DatasetResponse, DatasetPath)
async def rename(request: Request, ctx: Context, user: User, body: RenameRequest, path: DatasetPath) -> DatasetResponse:
    """Rename a dataset

    Renames the dataset (JSON `{"name": ...}`, or the new name as text/plain); its links and
    the verified examples naming it follow. 409 when the namespace has a dataset of that name."""
    dataset = await lifecycle.rename_dataset(stores(ctx), user, *_coordinate(user, path), body.name)
    return dataset_response(dataset.namespace, dataset.record)


@renames("/data/{username}/{namespace}/rename", NamespaceResponse, NamespacePath)
async def rename_namespace(
    request: Request, ctx: Context, user: User, body: RenameRequest, path: NamespacePath
) -> NamespaceResponse:
    """Rename a namespace

    Renames the namespace (JSON `{"name": ...}`, or the new name as text/plain); links and
    verified examples follow. 409 when the owner has a namespace of that name."""
    renamed = await lifecycle.rename_namespace(stores(ctx), user, path.owner_for(user), path.namespace, body.name)
    return NamespaceResponse(owner=renamed.owner, name=renamed.name)


async def _delete(ctx: Context, user: User, path: DatasetPath) -> DeletedResponse:
    return await lifecycle.delete_dataset(stores(ctx), user, *_coordinate(user, path))


@router.delete("/data/{username}/{namespace}/{datasetName}", DeletedResponse, errors=(403, 404), params=DatasetPath)
async def delete(request: Request, ctx: Context, user: User, path: DatasetPath) -> DeletedResponse:
    """Delete a dataset

    Irreversibly deletes the dataset with its rows, vectors, links, uploaded files and the
    verified examples naming it, ending its queued and running ingestions; the name is free
    at once."""
    return await _delete(ctx, user, path)


@router.delete(
    "/data/{username}/{namespace}/{datasetName}/balefire", DeletedResponse, errors=(403, 404), params=DatasetPath
)
async def balefire(request: Request, ctx: Context, user: User, path: DatasetPath) -> DeletedResponse:
    """Delete a dataset (DataLinks path)

    The DataLinks SDK's path of `DELETE /data/{username}/{namespace}/{datasetName}`."""
    return await _delete(ctx, user, path)
