"""Datasets: create (namespace created on first use), list and read."""

from __future__ import annotations

from datetime import datetime

from pydantic import Field
from starlette.requests import Request

from datawell.api.routing import Context, DatasetPath, NamespacePath, PathModel, Router
from datawell.api.schemas import ApiModel
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
    params=NewDatasetPath,
)
async def create(
    request: Request, ctx: Context, user: User, body: DatasetCreateRequest, path: NewDatasetPath
) -> DatasetResponse:
    """Creates a dataset owned by the caller in the caller's namespace, creating the namespace on first use."""
    async with ctx.services.db.session() as session:
        namespace = await ensure_namespace(session, user, path.namespace)
        dataset = await create_dataset(
            session, namespace, path.dataset_name, body.data_description, body.schema_definition, user
        )
        return DatasetResponse.of(namespace, dataset.record)


@router.operation(
    "GET",
    "/datasets/{username}/{namespace}",
    summary="List the datasets of a namespace",
    response=DatasetList,
    errors=(403, 404),
    params=NamespacePath,
)
async def list_namespace(request: Request, ctx: Context, user: User, path: NamespacePath) -> DatasetList:
    """Lists the datasets of a namespace the caller owns or holds a grant on."""
    # The hot read: access and data in one round trip (docs/decisions.md, "API read speed").
    namespace, datasets = await readable_datasets(ctx.services.db.direct, user, path.username, path.namespace)
    return DatasetList(data=[DatasetResponse.of(namespace, d) for d in datasets])


@router.operation(
    "GET",
    "/datasets/{username}/{namespace}/{datasetName}",
    summary="Read a dataset",
    response=DatasetResponse,
    errors=(403, 404),
    params=DatasetPath,
)
async def read(request: Request, ctx: Context, user: User, path: DatasetPath) -> DatasetResponse:
    """Reads one dataset: its description, schema and inferred field types."""
    namespace, dataset = await readable_dataset(
        ctx.services.db.direct, user, path.username, path.namespace, path.dataset_name
    )
    return DatasetResponse.of(namespace, dataset)
