"""Datasets: create (namespace created on first use), list, read, change the description and
schema, rename (the dataset or its namespace), delete (`datawell.lifecycle`)."""

from __future__ import annotations

from datetime import datetime

from pydantic import Field
from starlette.requests import Request

from datawell import lifecycle
from datawell.api.routing import Router
from datawell.api.schemas import ApiModel
from datawell.lifecycle import Stores
from datawell.services import Services
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


class DatasetCreateRequest(ApiModel):
    data_description: str = Field(
        "", max_length=MAX_DESCRIPTION, description="Describes the dataset to help the AI system understand context."
    )
    schema_definition: dict[str, str] = Field(
        description="Maps field names to descriptions that guide structuring of extracted data. Field names are "
        "column names: letters, digits and '_', not starting with a digit or '__', unique ignoring case.",
        # Checked by create, which names every bad field and why.
        json_schema_extra={
            "minProperties": 1,
            "maxProperties": MAX_FIELDS,
            "propertyNames": {"pattern": FIELD_PATTERN_TEXT},
        },
    )


class DatasetResponse(ApiModel):
    id: str
    owner: str
    namespace: str
    dataset_name: str
    data_description: str
    schema_definition: dict[str, str]
    field_types: dict[str, str] = Field(description="Column types inferred at ingestion; empty until data arrives.")
    created_at: datetime
    updated_at: datetime

    @classmethod
    def of(cls, namespace: NamespaceRef, record: Dataset | DatasetSummary) -> DatasetResponse:
        return cls(
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


class DatasetList(ApiModel):
    data: list[DatasetResponse]


@router.operation(
    "POST",
    "/ingest/new/{namespace}/{datasetName}",
    summary="Create a dataset",
    body=DatasetCreateRequest,
    response=DatasetResponse,
    status=201,
    errors=(409, 415, 422),
)
async def create(request: Request, user: User, body: DatasetCreateRequest) -> DatasetResponse:
    """Creates a dataset owned by the caller in the caller's namespace, creating the namespace on first use."""
    async with request.state.services.db.session() as session:
        namespace = await ensure_namespace(session, user, request.path_params["namespace"])
        dataset = await create_dataset(
            session, namespace, request.path_params["datasetName"], body.data_description, body.schema_definition, user
        )
        return DatasetResponse.of(namespace, dataset.record)


@router.operation(
    "GET",
    "/datasets/{username}/{namespace}",
    summary="List the datasets of a namespace",
    response=DatasetList,
    errors=(403, 404),
)
async def list_namespace(request: Request, user: User) -> DatasetList:
    """Lists the datasets of a namespace the caller owns or holds a grant on."""
    params = request.path_params
    namespace, datasets = await readable_datasets(
        request.state.services.db.direct, user, params["username"], params["namespace"]
    )
    return DatasetList(data=[DatasetResponse.of(namespace, d) for d in datasets])


@router.operation(
    "GET",
    "/datasets/{username}/{namespace}/{datasetName}",
    summary="Read a dataset",
    response=DatasetResponse,
    errors=(403, 404),
)
async def read(request: Request, user: User) -> DatasetResponse:
    """Reads one dataset: its description, schema and inferred field types."""
    params = request.path_params
    namespace, dataset = await readable_dataset(
        request.state.services.db.direct, user, params["username"], params["namespace"], params["datasetName"]
    )
    return DatasetResponse.of(namespace, dataset)


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


class NamespaceResponse(ApiModel):
    owner: str
    name: str


class DeletedResponse(ApiModel):
    rows_deleted: int
    vectors_deleted: int
    links_deleted: int
    uploads_deleted: int
    objects_deleted: int
    examples_deleted: int = Field(description="Verified examples whose query named the dataset.")
    ingestions_ended: int = Field(description="Queued or running attempts stopped.")


def stores(request: Request) -> Stores:
    services: Services = request.state.services
    return Stores(services.db, services.rows, services.vectors, services.objects)


def _coordinate(request: Request) -> tuple[str, str, str]:
    params = request.path_params
    return params["username"], params["namespace"], params["datasetName"]


@router.operation(
    "PUT",
    "/data/{username}/{namespace}/{datasetName}/inferDefinition",
    summary="Update a dataset's description and schema",
    body=DefinitionUpdate,
    query=DefinitionQuery,
    response=DatasetResponse,
    errors=(403, 404, 409, 415, 422),
)
async def update_definition(
    request: Request, user: User, body: DefinitionUpdate, query: DefinitionQuery
) -> DatasetResponse:
    """Changes the description, the schema, or both (needs write access to the namespace)."""
    dataset = await lifecycle.update_definition(
        stores(request),
        user,
        *_coordinate(request),
        body.data_description,
        body.schema_definition,
        force=query.force,
    )
    return DatasetResponse.of(dataset.namespace, dataset.record)


@router.operation(
    "POST",
    "/data/{username}/{namespace}/{datasetName}/rename",
    summary="Rename a dataset",
    body=RenameRequest,
    text_field="name",
    response=DatasetResponse,
    errors=(403, 404, 409, 415, 422),
)
async def rename(request: Request, user: User, body: RenameRequest) -> DatasetResponse:
    """Renames the dataset (JSON `{"name": ...}`, or the new name as text/plain); its links and
    the verified examples naming it follow. 409 when the namespace has a dataset of that name."""
    dataset = await lifecycle.rename_dataset(stores(request), user, *_coordinate(request), body.name)
    return DatasetResponse.of(dataset.namespace, dataset.record)


@router.operation(
    "POST",
    "/data/{username}/{namespace}/rename",
    summary="Rename a namespace",
    body=RenameRequest,
    text_field="name",
    response=NamespaceResponse,
    errors=(403, 404, 409, 415, 422),
)
async def rename_namespace(request: Request, user: User, body: RenameRequest) -> NamespaceResponse:
    """Renames the namespace (JSON `{"name": ...}`, or the new name as text/plain); links and
    verified examples follow. 409 when the owner has a namespace of that name."""
    params = request.path_params
    renamed = await lifecycle.rename_namespace(
        stores(request), user, params["username"], params["namespace"], body.name
    )
    return NamespaceResponse(owner=renamed.owner, name=renamed.name)


async def _delete(request: Request, user: User) -> DeletedResponse:
    deleted = await lifecycle.delete_dataset(stores(request), user, *_coordinate(request))
    return DeletedResponse(
        rows_deleted=deleted.rows,
        vectors_deleted=deleted.vectors,
        links_deleted=deleted.links,
        uploads_deleted=deleted.uploads,
        objects_deleted=deleted.objects,
        examples_deleted=deleted.examples,
        ingestions_ended=deleted.ingestions_ended,
    )


@router.operation(
    "DELETE",
    "/data/{username}/{namespace}/{datasetName}",
    summary="Delete a dataset",
    response=DeletedResponse,
    errors=(403, 404),
)
async def delete(request: Request, user: User) -> DeletedResponse:
    """Irreversibly deletes the dataset with its rows, vectors, links, uploaded files and the
    verified examples naming it, ending its queued and running ingestions; the name is free
    at once."""
    return await _delete(request, user)


@router.operation(
    "DELETE",
    "/data/{username}/{namespace}/{datasetName}/balefire",
    summary="Delete a dataset (DataLinks path)",
    response=DeletedResponse,
    errors=(403, 404),
)
async def balefire(request: Request, user: User) -> DeletedResponse:
    """The DataLinks SDK's path of `DELETE /data/{username}/{namespace}/{datasetName}`."""
    return await _delete(request, user)
