"""The DataLinks SDK's ingestion: JSON rows and text enter the same pipeline as uploaded files
(`/ingest/...`), `/finish` is `/complete` with the SDK's extra fields, `/infer/...` previews
rows and infers a schema or description."""

from __future__ import annotations

import asyncio
import json
from typing import Any, Literal

from pydantic import Field
from sqlalchemy.ext.asyncio import AsyncSession
from starlette.requests import Request

from datawell.api.datalinks.links import rebuild
from datawell.api.datasets import MAX_DESCRIPTION
from datawell.api.ingestions import WRITABLE_INGESTION
from datawell.api.routing import Context, PathModel, Router
from datawell.api.schemas import ApiModel, WholeNumber
from datawell.api.uploads import MULTIPART_PATH, CompletedPart, complete_upload, completes
from datawell.errors import IngestionFailed, InvalidInput, NotFound, SubError
from datawell.ingest.fieldtypes import TypeInference
from datawell.ingest.mapping import similarity_mapping
from datawell.ingest.worker import queue_work
from datawell.runs import CurateRequest, Runs
from datawell.services import Services
from datawell.storage import ingestions
from datawell.storage.access import ensure_namespace, find_namespace
from datawell.storage.datasets import DatasetRef, check_schema, create_dataset, find_dataset
from datawell.storage.tables import Ingestion, User, utcnow
from datawell.storage.uploads import object_key

router = Router("datalinks")


JSON_ROWS_NAME = "rows.jsonl"
TEXT_NAME = "text.txt"
WAIT_SECONDS = 0.1  # how often a JSON ingestion looks whether its rows are stored
MAX_WAIT_SECONDS = 600.0  # the SDK's read timeout: an answer later than this is read by nobody


class OwnDatasetPath(PathModel):
    """`/ingest/{namespace}/{datasetName}`: a dataset of the caller's own namespace."""

    namespace: str
    dataset_name: str


class InferStep(ApiModel):
    """One step of the SDK's `Pipeline` (`to_dict()`: camelCase keys and `type`)."""

    model_config = ApiModel.model_config | {"extra": "allow"}
    type: Literal["table", "rows", "normalise", "normalize", "validate", "reverseGeo"]
    derive_from: str | None = None
    target_cols: dict[str, str | None] | None = None
    model: str | None = None
    provider: str | None = None
    helper_prompt: str | None = None


class Infer(ApiModel):
    steps: list[InferStep] = Field(default_factory=list)


class IngestRowsRequest(ApiModel):
    data: list[dict[str, Any]] = Field(min_length=1, description="The rows (JSON objects).")
    infer: Infer | None = None
    link: dict[str, dict[str, Any] | None] | None = Field(
        None, description="`{ExactMatch: {...}, GeoMatch: {...}}`: link candidates to compute once the rows are stored."
    )
    curate: bool | None = Field(None, description="Let the curator select and activate links once the rows are stored.")
    data_description: str | None = Field(None, max_length=MAX_DESCRIPTION)
    schema_definition: dict[str, str] | None = None
    additional_instructions: str | None = None


class Indexed(ApiModel):
    indexed: int = Field(description="Rows stored by this request.")


class FinishRequest(ApiModel):
    upload_id: str = Field(min_length=1)
    key: str = Field(min_length=1)
    parts: list[CompletedPart] | None = None
    name: str | None = Field(None, description="Name of the ingestion (the file's name by default).")
    infer: Infer | None = None
    link: dict[str, dict[str, Any] | None] | None = None
    infer_batch_size: WholeNumber | None = Field(None, description="Accepted; the pipeline sizes its own batches.")
    data_description: str | None = Field(None, max_length=MAX_DESCRIPTION)
    schema_definition: dict[str, str] | None = None


class Finished(ApiModel):
    id: str = Field(description="The ingestion attempt created for the file.")
    upload_id: str
    key: str
    status: str


class InferRequest(ApiModel):
    sample: list[dict[str, Any]] = Field(min_length=1)
    model: str | None = None
    provider: str | None = None
    current_value: dict[str, Any] | None = None


class InferredSchema(ApiModel):
    model_config = ApiModel.model_config | {"alias_generator": None}
    schema_: dict[str, str] = Field(alias="schema")


class InferredDescription(ApiModel):
    data_description: str
    schema_definition: dict[str, str]


class PreviewRequest(ApiModel):
    data: list[dict[str, Any]] = Field(min_length=1)
    infer: Infer | None = None


def rows_of(body: IngestRowsRequest | PreviewRequest) -> tuple[list[dict[str, Any]], list[str], dict[str, str]]:
    """The rows to store, the texts to extract rows from (a `table` step), and the fields a
    `normalise` step names; a step Datawell cannot run is refused."""
    rows = body.data
    texts: list[str] = []
    targets: dict[str, str] = {}
    for index, step in enumerate(body.infer.steps if body.infer else []):
        where = f"infer.steps.{index}"
        if step.type == "rows":
            rows = [item for row in rows for item in derived(row, step.derive_from, where)]
        elif step.type == "table":
            texts = [str(value) for row in rows if (value := row.get(step.derive_from or "")) not in (None, "")]
            if not texts:
                raise InvalidInput(
                    "nothing to extract rows from",
                    sub_errors=[SubError("no_text", f"{where}.deriveFrom: no row has text in {step.derive_from!r}")],
                )
        elif step.type in ("normalise", "normalize"):
            targets = {name: description or "" for name, description in (step.target_cols or {}).items()}
        elif step.type == "reverseGeo":
            raise InvalidInput(
                "reverse geocoding is not available: no geocoder is configured",
                sub_errors=[SubError("unsupported_step", f"{where}: reverseGeo needs a geocoder")],
            )
        # validate: every value is checked against its field's type as the pipeline stores it
    return rows, texts, targets


def derived(row: dict[str, Any], key: str | None, where: str) -> list[dict[str, Any]]:
    value = row.get(key or "")
    if isinstance(value, dict):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(item, dict) for item in value):
        raise InvalidInput(
            "the rows to derive are not a list of objects",
            sub_errors=[SubError("not_rows", f"{where}.deriveFrom: {key!r} does not hold a list of objects")],
        )
    return value


def fields_of(rows: list[dict[str, Any]]) -> dict[str, str]:
    """The fields rows bring, in the order they first appear (keys starting `_` are metadata)."""
    fields: dict[str, str] = {}
    for row in rows:
        for name in row:
            if not name.startswith("_"):
                fields.setdefault(name, "")
    return fields


async def writable_or_new(
    session: AsyncSession, user: User, namespace: str, name: str, description: str | None, schema: dict[str, str]
) -> DatasetRef:
    """The caller's dataset, created with `schema` when it does not exist yet; a dataset
    without fields takes `schema` (and the description, when it has none)."""
    ns = await find_namespace(session, user.username, namespace)
    dataset = None if ns is None else await find_dataset(session, ns, name)
    if dataset is None:
        ns = await ensure_namespace(session, user, namespace)
        return await create_dataset(session, ns, name, description or "", schema, user)
    record = dataset.record
    if not record.schema_definition:
        check_schema(schema)
        record.schema_definition = schema
    if description and not record.description:
        record.description = description
    return dataset


async def stored(services: Services, ingestion_id: str) -> int:
    """Wait until the attempt's rows are published (or it ends); how many it stored. The
    attempt stays queued if no worker takes it within the wait: the answer says so."""
    deadline = asyncio.get_running_loop().time() + MAX_WAIT_SECONDS
    while True:
        async with services.db.session() as session:
            attempt = await ingestions.get_ingestion(session, ingestion_id)
        if attempt is None:
            raise NotFound(f"ingestion {ingestion_id} does not exist")
        published = (attempt.mapping or {}).get("published")
        if published is not None:
            return int(published["rows"])
        if attempt.status == ingestions.SUCCEEDED:
            return attempt.processed_rows
        if attempt.status in (ingestions.FAILED, ingestions.CANCELLED):
            raise IngestionFailed(f"ingestion {ingestion_id} {attempt.status.lower()}: {attempt.status_message}")
        if asyncio.get_running_loop().time() > deadline:
            raise IngestionFailed(
                f"ingestion {ingestion_id} is still {attempt.status.lower()} after {MAX_WAIT_SECONDS:.0f} s: "
                "follow it in the dataset's ingestion attempts"
            )
        await asyncio.sleep(WAIT_SECONDS)


@router.post(
    "/ingest/{namespace}/{datasetName}", Indexed, body=IngestRowsRequest, errors=(403, 404, 500), params=OwnDatasetPath
)
async def ingest_rows(
    request: Request, ctx: Context, user: User, body: IngestRowsRequest, path: OwnDatasetPath
) -> Indexed:
    """Ingest JSON rows

    Stores the rows through the same pipeline as an uploaded file (one ingestion attempt,
    listed with the dataset's attempts) and answers once they are stored. The dataset is the
    caller's; it is created on first use (its fields: `schemaDefinition`, a `normalise`
    step's `targetCols`, or the rows' keys). `infer.steps`: `rows` takes the rows from a field
    holding a list, `table` extracts rows from a text field with the model, `normalise` maps
    the rows' keys onto its target fields, `validate` keeps the type checks every ingestion
    makes; `reverseGeo` is refused (no geocoder). `link` computes link candidates and `curate`
    lets the curator activate links once the rows are stored."""
    services: Services = ctx.services
    rows, texts, targets = rows_of(body)
    schema = body.schema_definition or targets or fields_of(rows)
    description = "\n\n".join(filter(None, [body.data_description, body.additional_instructions])) or None
    async with services.db.session() as session:
        dataset = await writable_or_new(session, user, path.namespace, path.dataset_name, description, schema)
    if texts:
        name, payload = TEXT_NAME, "\n\n".join(texts).encode()
    else:
        name = JSON_ROWS_NAME
        payload = "".join(json.dumps(row, ensure_ascii=False, default=str) + "\n" for row in rows).encode()
    key = object_key(dataset, name)
    await services.objects.put(key, payload)
    attempt = await queue_work(
        services, lambda session: ingestions.enqueue(session, dataset.record, key, name, len(payload), user)
    )
    indexed = await stored(services, attempt.id)
    if body.link or body.curate:
        await link_after(ctx, user, dataset, body.link, activate=bool(body.curate))
    return Indexed(indexed=indexed)


async def link_after(
    ctx: Context, user: User, dataset: DatasetRef, link: dict[str, Any] | None, *, activate: bool
) -> None:
    """After an ingestion: `curate` runs the curator on the dataset (activating what it
    selects); `link` alone keeps the candidates of the asked kinds as suggestions."""
    if activate:
        runs: Runs = ctx.runs
        run = await runs.start_curator(
            CurateRequest(user=user, namespace=dataset.namespace, dataset=dataset.name, activate=True)
        )
        result = await run.result()
        if result.failure is not None:
            raise result.failure.error
        return
    await rebuild(ctx.services, dataset, link, save=True)


@completes(router, MULTIPART_PATH + "/finish", Finished, FinishRequest)
async def finish(request: Request, ctx: Context, user: User, body: FinishRequest, dataset: DatasetRef) -> Finished:
    """Finish a multipart upload (DataLinks SDK)

    `complete` with the SDK's fields: `name` names the ingestion; `dataDescription` and
    `schemaDefinition` describe a dataset that has no fields yet (a dataset without fields
    needs `schemaDefinition` here); `infer`, `link` and `inferBatchSize` are accepted, and the
    pipeline's own structuring applies (docs/datalinks.md)."""
    services: Services = ctx.services
    async with services.db.session() as session:
        record = dataset.record
        session.add(record)
        if body.schema_definition and not record.schema_definition:
            check_schema(body.schema_definition)
            record.schema_definition = body.schema_definition
        if body.data_description and not record.description:
            record.description = body.data_description
        if not record.schema_definition:
            raise InvalidInput(
                "the dataset has no fields yet",
                sub_errors=[SubError("no_schema", "schemaDefinition: name the fields to structure the file into")],
            )
    ingestion = await complete_upload(services, dataset, user, body.upload_id, body.key, body.parts, body.name)
    return Finished(id=ingestion.id, upload_id=body.upload_id, key=body.key, status=ingestion.status)


@router.post("/ingestionTracking/{ingestionId}/seen", status=204, resolve=WRITABLE_INGESTION)
async def seen(request: Request, ctx: Context, user: User, ingestion: Ingestion) -> None:
    """Mark an ingestion as seen

    Sets the attempt's `attributes.seenAt` to now."""
    async with ctx.services.db.session() as session:
        session.add(ingestion)
        ingestion.seen_at = utcnow()


@router.post("/infer/preview", list[dict[str, Any]], body=PreviewRequest)
async def preview(request: Request, ctx: Context, user: User, body: PreviewRequest) -> list[dict[str, Any]]:
    """Preview rows as an ingestion would take them

    The rows after the `infer` steps that need no model (`rows`, `normalise` by name),
    nothing stored; a `table` step is refused here (it extracts with the model at ingestion)."""
    rows, texts, targets = rows_of(body)
    if texts:
        raise InvalidInput(
            "a table step runs only at ingestion",
            sub_errors=[SubError("unsupported_step", "infer: preview takes rows, normalise and validate steps")],
        )
    if not targets:
        return rows
    mapping = similarity_mapping(targets, list(fields_of(rows)))
    return [{target: row.get(column) for target, column in mapping.items() if column is not None} for row in rows]


@router.post("/infer/schema", InferredSchema, body=InferRequest)
async def infer_schema(request: Request, ctx: Context, user: User, body: InferRequest) -> InferredSchema:
    """Infer the field types of sample rows

    Each field's type as ingestion would infer it from these rows (integer, real, text,
    boolean, timestamp)."""
    fields = fields_of(body.sample)
    inference = TypeInference(fields)
    for name in fields:
        # A nested value is stored as its JSON text, as a JSON Lines file's would be.
        values = [row.get(name) for row in body.sample]
        inference.observe(name, [json.dumps(v) if isinstance(v, dict | list) else v for v in values])
    return InferredSchema(schema_=inference.result())


@router.post("/infer/description", InferredDescription, body=InferRequest)
async def infer_description(request: Request, ctx: Context, user: User, body: InferRequest) -> InferredDescription:
    """Infer a description and schema of sample rows

    A description and a field schema for the sample: the current value's, completed with
    each field's inferred type."""
    current = body.current_value or {}
    schema = dict(current.get("schema") or {})
    types = (await infer_schema(request, ctx, user, body)).schema_
    for name, kind in types.items():
        schema.setdefault(name, f"{name.replace('_', ' ')} ({kind})")
    description = current.get("description") or f"{len(body.sample)} sample rows with fields {', '.join(types)}"
    return InferredDescription(data_description=description, schema_definition=schema)
