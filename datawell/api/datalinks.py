"""The DataLinks SDK's paths and shapes (docs/datalinks.md), on the services the SPEC routes use:
JSON rows enter the same ingestion pipeline as uploaded files, `/finish` is `/complete` with
the SDK's extra fields, and the listings read the same dataset records and grants.

A path's username `self` is the caller's (`api.routing.current_user`), so `/data/self/...`
is the caller's own data. The query language, `/query` and `/query/ask` live in
`api.datalinks_query`."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

from pydantic import Field
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm.attributes import flag_modified
from starlette.requests import Request
from starlette.responses import JSONResponse

from datawell.api.datasets import MAX_DESCRIPTION
from datawell.api.ingestions import WRITABLE_INGESTION
from datawell.api.routing import (
    READABLE_DATASET,
    READABLE_NAMESPACE,
    WRITABLE_DATASET,
    Context,
    NamespaceNamed,
    NamespacePath,
    PathModel,
    Resolver,
    Router,
    named_user,
    namespace_for,
)
from datawell.api.routing import DatasetPath as RoutedDatasetPath
from datawell.api.schemas import ApiModel, WholeNumber
from datawell.api.uploads import CompletedPart, complete_upload
from datawell.errors import Conflict, Forbidden, IngestionFailed, InvalidInput, NotFound, SubError
from datawell.ingest.fieldtypes import TypeInference
from datawell.ingest.mapping import similarity_mapping
from datawell.ingest.worker import queue_work
from datawell.ontology.candidate import Candidate
from datawell.ontology.candidates import find_candidates
from datawell.ontology.links import (
    ACTIVE,
    SUGGESTED,
    FieldRef,
    MatchType,
    NewLink,
    bump_version,
    list_links,
    save_links,
)
from datawell.runs import CurateRequest, Runs
from datawell.services import Services
from datawell.storage import ingestions
from datawell.storage.access import (
    NamespaceRef,
    Permission,
    authorize,
    ensure_namespace,
    find_namespace,
    list_grants,
    readable_namespaces,
    remove_grant,
    set_grant,
)
from datawell.storage.datasets import DatasetRef, check_schema, create_dataset, find_dataset, list_datasets
from datawell.storage.tables import Dataset, Ingestion, Link, Token, User, utcnow
from datawell.storage.uploads import object_key
from datawell.storage.users import check_name, find_user, list_tokens

router = Router("datalinks")

DATASET_PATH = "/data/{username}/{namespace}/{datasetName}"
PRIVATE: Literal["Private"] = "Private"  # DataLinks removed public datasets: every dataset is shared per user
ROLES = {"viewer": Permission.READ, "editor": Permission.WRITE}
TOKEN_TTL = timedelta(days=365)  # a token created without `expires_at`
JSON_ROWS_NAME = "rows.jsonl"
TEXT_NAME = "text.txt"
WAIT_SECONDS = 0.1  # how often a JSON ingestion looks whether its rows are stored
MAX_WAIT_SECONDS = 600.0  # the SDK's read timeout: an answer later than this is read by nobody


# --- shapes -------------------------------------------------------------------------------


class UserPath(PathModel):
    user: str


class UserNamespacePath(NamespaceNamed):
    """`/schema/{user}/{namespace}/...`: the user owns the namespace."""

    user: str

    def owner_for(self, user: User) -> str:
        return self.user


class OwnDatasetPath(PathModel):
    """`/ingest/{namespace}/{datasetName}`: a dataset of the caller's own namespace."""

    namespace: str
    dataset_name: str


class DatasetDescription(ApiModel):
    name: str
    namespace: str
    owner: str
    visibility: Literal["Public", "Private"] = PRIVATE


class DatasetMetadata(ApiModel):
    column_names: list[str]
    row_count: int
    data_description: str | None = None
    schema_definition: dict[str, str] | None = None


class DatasetInfo(ApiModel):
    dataset: DatasetDescription
    metadata: DatasetMetadata


class NamespaceItem(ApiModel):
    name: str
    owner: str


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


class SortOrder(ApiModel):
    order: list[str] = Field(min_length=1)


class CurrentUser(ApiModel):
    id: str
    username: str
    name: str | None = None
    email: str | None = None


class PermissionEntry(ApiModel):
    username: str
    namespace: str
    dataset: str | None = None


class TokenCreate(ApiModel):
    model_config = ApiModel.model_config | {"alias_generator": None}
    name: str = Field(min_length=1, max_length=200)
    expires_at: str | None = None
    access_restricted_to: list[PermissionEntry] | None = Field(None, alias="accessRestrictedTo")


class UserToken(ApiModel):
    """As the SDK reads it: snake_case keys."""

    model_config = ApiModel.model_config | {"alias_generator": None}
    id: str
    name: str
    created_at: str
    expires_at: str
    last_used_at: str | None = None
    token: str | None = Field(None, description="The secret; only in the answer that creates the token.")


class TokenPermissions(ApiModel):
    restricted: bool
    permissions: list[PermissionEntry] | None = None


class Share(ApiModel):
    username: str = Field(min_length=1)
    role: Literal["viewer", "editor"]


class AccessGrant(ApiModel):
    username: str
    role: Literal["viewer", "editor"]


class ApiLink(ApiModel):
    origin: str
    destination: str
    hits: WholeNumber = Field(ge=0, le=2**62)
    match_type: str


class ColumnId(ApiModel):
    username: str
    namespace: str
    dataset: str
    column_name: str


class AddLink(ApiModel):
    model_config = ApiModel.model_config | {"alias_generator": None}
    origin: ColumnId = Field(alias="from")
    to: ColumnId
    match_type: Literal["ExactMatch", "GeoMatch"] = Field(alias="matchType")
    options: dict[str, Any] | None = None


class LinkData(ApiModel):
    data: list[dict[str, Any]] = Field(default_factory=list)
    link: dict[str, dict[str, Any] | None] | None = None


class OntologyChange(ApiModel):
    add: list[ApiLink] | None = None
    remove: list[ApiLink] | None = None


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


# --- datasets -----------------------------------------------------------------------------


def describe(namespace: NamespaceRef, dataset: Dataset) -> DatasetDescription:
    return DatasetDescription(name=dataset.name, namespace=namespace.name, owner=namespace.owner)


async def readable_listing(session: AsyncSession, user: User, namespace: str | None = None) -> list[DatasetDescription]:
    """Every dataset the caller may read, or those of the namespaces named `namespace`."""
    listed: list[DatasetDescription] = []
    for ns in await readable_namespaces(session, user):
        if namespace is None or ns.name == namespace:
            listed += [describe(ns, d.record) for d in await list_datasets(session, ns)]
    return listed


@router.operation("GET", "/data", summary="List the datasets the caller may read", response=list[DatasetDescription])
async def list_all(request: Request, ctx: Context, user: User) -> list[DatasetDescription]:
    """Every dataset of every namespace the caller owns or holds a grant on."""
    async with ctx.services.db.session() as session:
        return await readable_listing(session, user)


@router.operation(
    "GET",
    "/data/{namespace}",
    summary="List the datasets of namespaces of a name",
    response=list[DatasetDescription],
    errors=(422,),
    params=NamespaceNamed,
)
async def list_named(request: Request, ctx: Context, user: User, path: NamespaceNamed) -> list[DatasetDescription]:
    """The datasets of the caller's namespaces, and namespaces shared with the caller, of this name."""
    check_name("namespace", path.namespace)
    async with ctx.services.db.session() as session:
        return await readable_listing(session, user, path.namespace)


@router.operation(
    "GET", "/schema/datasets/all", summary="List the datasets the caller may read", response=list[DatasetDescription]
)
async def schema_all(request: Request, ctx: Context, user: User) -> list[DatasetDescription]:
    """As `GET /data`."""
    return await list_all(request, ctx, user)


@router.operation(
    "GET",
    "/schema/{user}/{namespace}/datasets",
    summary="List the datasets of a namespace",
    response=list[DatasetDescription],
    errors=(403, 404),
    resolve=namespace_for(Permission.READ, UserNamespacePath),
)
async def schema_namespace(
    request: Request, ctx: Context, user: User, namespace: NamespaceRef
) -> list[DatasetDescription]:
    """The datasets of namespace `user/namespace` (`self`: the caller's)."""
    async with ctx.services.db.session() as session:
        return [describe(namespace, d.record) for d in await list_datasets(session, namespace)]


@router.operation(
    "GET",
    "/schema/{user}/namespaces",
    summary="List a user's namespaces",
    response=list[NamespaceItem],
    errors=(404,),
    params=UserPath,
)
async def namespaces(request: Request, ctx: Context, user: User, path: UserPath) -> list[NamespaceItem]:
    """The namespaces of a user (`self`: the caller) that the caller may read."""
    owner = path.user
    async with ctx.services.db.session() as session:
        if await find_user(session, owner) is None:
            raise NotFound(f"no user named {owner!r}")
        return [
            NamespaceItem(name=ns.name, owner=ns.owner)
            for ns in await readable_namespaces(session, user)
            if ns.owner == owner
        ]


@router.operation(
    "GET", DATASET_PATH, summary="Read a dataset", response=DatasetInfo, errors=(403, 404), resolve=READABLE_DATASET
)
async def dataset_info(request: Request, ctx: Context, user: User, dataset: DatasetRef) -> DatasetInfo:
    """The dataset, its columns (in their sort order) and how many rows it holds."""
    services: Services = ctx.services
    record = dataset.record
    return DatasetInfo(
        dataset=describe(dataset.namespace, record),
        metadata=DatasetMetadata(
            column_names=list(record.schema_definition),
            row_count=await services.rows.count(record),
            data_description=record.description,
            schema_definition=dict(record.schema_definition),
        ),
    )


@router.operation(
    "PUT",
    "/schema/{username}/{namespace}/{datasetName}/sort-order",
    summary="Set the order of a dataset's columns",
    body=SortOrder,
    status=204,
    errors=(403, 404, 415, 422),
    resolve=WRITABLE_DATASET,
)
async def sort_order(request: Request, ctx: Context, user: User, body: SortOrder, dataset: DatasetRef) -> None:
    """Reorders the dataset's fields (the schema keeps its order: listings, catalog and
    `columnNames` follow it). `order` names every field once."""
    async with ctx.services.db.session() as session:
        session.add(dataset.record)
        schema = dict(dataset.record.schema_definition)
        if sorted(body.order) != sorted(schema):
            raise InvalidInput(
                "the order must name every field of the dataset once",
                sub_errors=[SubError("invalid_order", f"order: expected a permutation of {list(schema)}")],
            )
        # Equal as dicts: the change is in the order alone, which SQLAlchemy's comparison misses.
        dataset.record.schema_definition = {name: schema[name] for name in body.order}
        flag_modified(dataset.record, "schema_definition")


# --- ingestion ------------------------------------------------------------------------------


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


@router.operation(
    "POST",
    "/ingest/{namespace}/{datasetName}",
    summary="Ingest JSON rows",
    body=IngestRowsRequest,
    response=Indexed,
    errors=(403, 404, 415, 422, 500),
    params=OwnDatasetPath,
)
async def ingest_rows(
    request: Request, ctx: Context, user: User, body: IngestRowsRequest, path: OwnDatasetPath
) -> Indexed:
    """Stores the rows through the same pipeline as an uploaded file (one ingestion attempt,
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


@router.operation(
    "POST",
    "/upload/multipart/{username}/{namespace}/{datasetName}/finish",
    summary="Finish a multipart upload (DataLinks SDK)",
    body=FinishRequest,
    response=Finished,
    status=202,
    errors=(403, 404, 409, 415, 422),
    resolve=WRITABLE_DATASET,
)
async def finish(request: Request, ctx: Context, user: User, body: FinishRequest, dataset: DatasetRef) -> Finished:
    """`complete` with the SDK's fields: `name` names the ingestion; `dataDescription` and
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


@router.operation(
    "POST",
    "/ingestionTracking/{ingestionId}/seen",
    summary="Mark an ingestion as seen",
    status=204,
    errors=(403, 404, 422),
    resolve=WRITABLE_INGESTION,
)
async def seen(request: Request, ctx: Context, user: User, ingestion: Ingestion) -> None:
    """Sets the attempt's `attributes.seenAt` to now."""
    async with ctx.services.db.session() as session:
        session.add(ingestion)
        ingestion.seen_at = utcnow()


# --- inference ------------------------------------------------------------------------------


@router.operation(
    "POST",
    "/infer/preview",
    summary="Preview rows as an ingestion would take them",
    body=PreviewRequest,
    response=list[dict[str, Any]],
    errors=(415, 422),
)
async def preview(request: Request, ctx: Context, user: User, body: PreviewRequest) -> list[dict[str, Any]]:
    """The rows after the `infer` steps that need no model (`rows`, `normalise` by name),
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


@router.operation(
    "POST",
    "/infer/schema",
    summary="Infer the field types of sample rows",
    body=InferRequest,
    response=InferredSchema,
    errors=(415, 422),
)
async def infer_schema(request: Request, ctx: Context, user: User, body: InferRequest) -> InferredSchema:
    """Each field's type as ingestion would infer it from these rows (integer, real, text,
    boolean, timestamp)."""
    fields = fields_of(body.sample)
    inference = TypeInference(fields)
    for name in fields:
        # A nested value is stored as its JSON text, as a JSON Lines file's would be.
        values = [row.get(name) for row in body.sample]
        inference.observe(name, [json.dumps(v) if isinstance(v, dict | list) else v for v in values])
    return InferredSchema(schema_=inference.result())


@router.operation(
    "POST",
    "/infer/description",
    summary="Infer a description and schema of sample rows",
    body=InferRequest,
    response=InferredDescription,
    errors=(415, 422),
)
async def infer_description(request: Request, ctx: Context, user: User, body: InferRequest) -> InferredDescription:
    """A description and a field schema for the sample: the current value's, completed with
    each field's inferred type."""
    current = body.current_value or {}
    schema = dict(current.get("schema") or {})
    types = (await infer_schema(request, ctx, user, body)).schema_
    for name, kind in types.items():
        schema.setdefault(name, f"{name.replace('_', ' ')} ({kind})")
    description = current.get("description") or f"{len(body.sample)} sample rows with fields {', '.join(types)}"
    return InferredDescription(data_description=description, schema_definition=schema)


# --- links and ontology ---------------------------------------------------------------------


def api_link(link: Link | Candidate) -> ApiLink:
    kind = link.match_type if isinstance(link.match_type, str) else link.match_type.value
    return ApiLink(origin=str(link.origin), destination=str(link.destination), hits=link.hits, match_type=kind)


def wanted_kinds(link: dict[str, Any] | None) -> set[MatchType]:
    """The candidate kinds a DataLinks `link` config asks for (all when none)."""
    if not link:
        return set(MatchType)
    kinds: set[MatchType] = set()
    if "ExactMatch" in link:
        kinds |= {MatchType.EXACT, MatchType.NORMALIZED}
    if "GeoMatch" in link:
        kinds.add(MatchType.GEO)
    return kinds or set(MatchType)


async def rebuild(services: Services, dataset: DatasetRef, link: dict[str, Any] | None, *, save: bool) -> list[ApiLink]:
    """The link candidates from and to the dataset, computed from the stored data; saved as
    suggestions when `save`."""
    async with services.db.session() as session:
        datasets = await list_datasets(session, dataset.namespace)
    found = await find_candidates(services.rows, services.vectors, services.embedder, datasets, focus=dataset.record.id)
    kinds = wanted_kinds(link)
    found = [c for c in found if c.match_type in kinds]
    if save:
        new = [
            NewLink(
                str(c.origin),
                str(c.destination),
                c.origin_dataset_id,
                c.destination_dataset_id,
                c.match_type,
                c.hits,
                c.score,
                c.evidence,
            )
            for c in found
        ]
        async with services.db.session() as session:
            await save_links(session, dataset.namespace.id, new, status=SUGGESTED, curated_by=None, model="")
    return [api_link(c) for c in found]


@router.operation(
    "POST",
    "/links/preview/{username}/{namespace}/{datasetName}",
    summary="Preview a dataset's link candidates",
    body=LinkData,
    response=list[ApiLink],
    errors=(403, 404, 415, 422),
    resolve=READABLE_DATASET,
)
async def preview_links(
    request: Request, ctx: Context, user: User, body: LinkData, dataset: DatasetRef
) -> list[ApiLink]:
    """The candidates the stored data gives (of the kinds `link` names), nothing saved."""
    return await rebuild(ctx.services, dataset, body.link, save=False)


@router.operation(
    "POST",
    "/links/{username}/{namespace}/{datasetName}",
    summary="Recompute a dataset's link candidates",
    body=LinkData,
    response=list[ApiLink],
    errors=(403, 404, 415, 422),
    resolve=WRITABLE_DATASET,
)
async def rebuild_links(
    request: Request, ctx: Context, user: User, body: LinkData, dataset: DatasetRef
) -> list[ApiLink]:
    """As preview, and the candidates are saved as suggested links (active links stay)."""
    return await rebuild(ctx.services, dataset, body.link, save=True)


async def dataset_links(ctx: Context, dataset: DatasetRef, status: str | None) -> list[ApiLink]:
    async with ctx.services.db.session() as session:
        links = await list_links(session, dataset.namespace.id, status=status, dataset_id=dataset.record.id)
    return [api_link(link) for link in links]


@router.operation(
    "GET",
    "/links/{username}/{namespace}/{datasetName}",
    summary="A dataset's links",
    response=list[ApiLink],
    errors=(403, 404),
    resolve=READABLE_DATASET,
)
async def load_links(request: Request, ctx: Context, user: User, dataset: DatasetRef) -> list[ApiLink]:
    """The dataset's active and suggested links."""
    return await dataset_links(ctx, dataset, None)


@router.operation(
    "GET",
    "/ontology/{username}/{namespace}/{datasetName}",
    summary="A dataset's ontology (active links)",
    response=list[ApiLink],
    errors=(403, 404),
    resolve=READABLE_DATASET,
)
async def ontology(request: Request, ctx: Context, user: User, dataset: DatasetRef) -> list[ApiLink]:
    """The dataset's active links: the joins the planners use."""
    return await dataset_links(ctx, dataset, ACTIVE)


def link_between(origin: FieldRef, destination: FieldRef, datasets: dict[str, DatasetRef]) -> tuple[str, str]:
    """The dataset ids of a link's ends, which must be datasets of the namespace with those fields."""
    ids = []
    for end in (origin, destination):
        dataset = datasets.get(end.dataset)
        if dataset is None or dataset.namespace.name != end.namespace:
            raise InvalidInput(
                f"no dataset {end.namespace}/{end.dataset} in this namespace",
                sub_errors=[SubError("unknown_dataset", f"{end}: links join datasets of one namespace")],
            )
        unknown = [f for f in end.fields if f not in dataset.record.schema_definition]
        if unknown:
            raise InvalidInput(
                f"no field {unknown[0]!r} in {end.namespace}/{end.dataset}",
                sub_errors=[SubError("unknown_field", f"{end}: unknown field {unknown[0]!r}")],
            )
        ids.append(dataset.record.id)
    return ids[0], ids[1]


async def activate(
    session: AsyncSession, user: User, namespace: NamespaceRef, links: list[tuple[str, str, str, int]]
) -> list[Link]:
    """Store links (origin, destination, match type, hits) as active, checked against the namespace."""
    datasets = {d.name: d for d in await list_datasets(session, namespace)}
    new = []
    for origin, destination, kind, hits in links:
        try:
            ends = FieldRef.parse(origin), FieldRef.parse(destination)
            match_type = MatchType(kind)
        except ValueError as exc:
            raise InvalidInput("invalid link", sub_errors=[SubError("invalid_link", str(exc))]) from None
        origin_id, destination_id = link_between(*ends, datasets)
        new.append(
            NewLink(origin, destination, origin_id, destination_id, match_type, hits, 1.0, f"added by {user.username}")
        )
    return await save_links(session, namespace.id, new, status=ACTIVE, curated_by=user.id, model="")


@router.operation(
    "POST",
    "/ontology/{username}/{namespace}/{datasetName}",
    summary="Change a dataset's ontology",
    body=OntologyChange,
    status=204,
    errors=(403, 404, 415, 422),
    resolve=WRITABLE_DATASET,
)
async def save_ontology(request: Request, ctx: Context, user: User, body: OntologyChange, dataset: DatasetRef) -> None:
    """`add` activates links (`namespace/dataset.field` ends in the dataset's namespace);
    `remove` deletes the dataset's links with those ends."""
    async with ctx.services.db.session() as session:
        await activate(
            session,
            user,
            dataset.namespace,
            [(li.origin, li.destination, li.match_type, li.hits) for li in body.add or []],
        )
        gone = {frozenset((li.origin, li.destination)) for li in body.remove or []}
        if gone:
            for link in await list_links(session, dataset.namespace.id, dataset_id=dataset.record.id):
                if frozenset((link.origin, link.destination)) in gone:
                    await session.delete(link)
            await bump_version(session, dataset.namespace.id)


@router.operation(
    "POST",
    "/links/add",
    summary="Add a link between two columns",
    body=AddLink,
    response=ApiLink,
    status=201,
    also=(200,),
    errors=(403, 404, 415, 422),
)
async def add_link(request: Request, ctx: Context, user: User, body: AddLink) -> Any:
    """Activates a link between two fields of one namespace: 201 when it is new, 200 when
    it was already there (active)."""
    ends = [body.origin, body.to]
    owners = {named_user(end.username, user) for end in ends}
    if len(owners) != 1 or len({end.namespace for end in ends}) != 1:
        raise InvalidInput(
            "links join fields of one namespace",
            sub_errors=[SubError("cross_namespace", "from, to: name the same owner and namespace")],
        )
    origin = f"{body.origin.namespace}/{body.origin.dataset}.{body.origin.column_name}"
    destination = f"{body.to.namespace}/{body.to.dataset}.{body.to.column_name}"
    async with ctx.services.db.session() as session:
        namespace = await authorize(session, user, owners.pop(), body.origin.namespace, Permission.WRITE)
        before = {
            frozenset((link.origin, link.destination))
            for link in await list_links(session, namespace.id, status=ACTIVE)
        }
        (saved,) = await activate(session, user, namespace, [(origin, destination, body.match_type, 0)])
        status = 200 if frozenset((origin, destination)) in before else 201
        return JSONResponse(api_link(saved).model_dump(by_alias=True), status_code=status)


# --- user, tokens, shares -------------------------------------------------------------------


@router.operation("GET", "/user/me", summary="The caller", response=CurrentUser)
async def me(request: Request, ctx: Context, user: User) -> CurrentUser:
    """The user the token belongs to."""
    return CurrentUser(id=user.id, username=user.username)


def user_token(token: Token, secret: str | None = None) -> UserToken:
    return UserToken(
        id=token.id,
        name=token.description,
        created_at=token.created_at.isoformat(),
        expires_at=token.expires_at.isoformat(),
        token=secret,
    )


@router.operation("GET", "/user/tokens", summary="The caller's tokens", response=list[UserToken])
async def tokens(request: Request, ctx: Context, user: User) -> list[UserToken]:
    """The caller's tokens that are not revoked, newest first (never their secrets)."""
    async with ctx.services.db.session() as session:
        return [user_token(t) for t in await list_tokens(session, user) if t.revoked_at is None]


@router.operation(
    "POST",
    "/user/token",
    summary="Create a token",
    body=TokenCreate,
    response=UserToken,
    status=201,
    errors=(415, 422),
)
async def add_token(request: Request, ctx: Context, user: User, body: TokenCreate) -> UserToken:
    """A new token for the caller; the answer is the only place its secret appears. Tokens
    carry the caller's whole access: `accessRestrictedTo` is refused (docs/datalinks.md)."""
    if body.access_restricted_to:
        raise InvalidInput(
            "tokens restricted to some datasets are not supported",
            sub_errors=[SubError("unsupported", "accessRestrictedTo: tokens carry the user's access")],
        )
    ttl = TOKEN_TTL
    if body.expires_at is not None:
        try:
            expires = datetime.fromisoformat(body.expires_at)
        except ValueError:
            raise InvalidInput(
                "invalid expiry", sub_errors=[SubError("invalid_datetime", "expires_at: not ISO 8601")]
            ) from None
        expires = expires if expires.tzinfo else expires.replace(tzinfo=UTC)
        ttl = expires - utcnow()
        if ttl <= timedelta(0):
            raise InvalidInput("the expiry is past", sub_errors=[SubError("past", "expires_at: in the past")])
    token, secret = await ctx.services.tokens.issue(user.username, ttl, body.name)
    return user_token(token, secret)


async def own_token(session: AsyncSession, user: User, token_id: str) -> Token:
    token = await session.get(Token, token_id)
    if token is None or token.user_id != user.id or token.revoked_at is not None:
        raise NotFound(f"no token with id {token_id!r}")
    return token


class TokenPath(PathModel):
    token_id: str


@router.operation(
    "DELETE", "/user/token/{tokenId}", summary="Revoke a token", status=204, errors=(404,), params=TokenPath
)
async def delete_token(request: Request, ctx: Context, user: User, path: TokenPath) -> None:
    """Revokes one of the caller's tokens; it stops working at once."""
    async with ctx.services.db.session() as session:
        token = await own_token(session, user, path.token_id)
        token.revoked_at = utcnow()


@router.operation(
    "GET",
    "/user/tokens/{tokenId}/permissions",
    summary="A token's permissions",
    response=TokenPermissions,
    errors=(404,),
    params=TokenPath,
)
async def token_permissions(request: Request, ctx: Context, user: User, path: TokenPath) -> TokenPermissions:
    """Tokens carry their user's whole access: never restricted."""
    async with ctx.services.db.session() as session:
        await own_token(session, user, path.token_id)
    return TokenPermissions(restricted=False)


def only_the_owner(user: User, namespace: NamespaceRef) -> None:
    if namespace.owner != user.username:
        raise Forbidden(f"only {namespace.owner!r} may share namespace {namespace}")


async def _owned(ctx: Context, user: User, path: NamespacePath) -> NamespaceRef:
    namespace = await READABLE_NAMESPACE.resolve(ctx, user, path)
    only_the_owner(user, namespace)
    return namespace


async def _owned_dataset(ctx: Context, user: User, path: RoutedDatasetPath) -> DatasetRef:
    dataset = await READABLE_DATASET.resolve(ctx, user, path)
    only_the_owner(user, dataset.namespace)
    return dataset


# The path's namespace (or dataset), which only its owner may share: 404, 403 as any, then 403.
OWNED_NAMESPACE = Resolver("namespace", NamespacePath, _owned)
OWNED_DATASET = Resolver("dataset", RoutedDatasetPath, _owned_dataset)


async def grants(session: AsyncSession, namespace: NamespaceRef) -> list[AccessGrant]:
    return [
        AccessGrant(username=name, role="editor" if permission == Permission.WRITE else "viewer")
        for name, permission in await list_grants(session, namespace.owner, namespace.name)
    ]


NAMESPACE_SHARES = "/permissions/namespaces/{username}/{namespace}/shares"
DATASET_SHARES = "/permissions/datasets/{username}/{namespace}/{datasetName}/shares"


@router.operation(
    "GET",
    NAMESPACE_SHARES,
    summary="Who may use a namespace",
    response=list[AccessGrant],
    errors=(403, 404),
    resolve=OWNED_NAMESPACE,
)
async def namespace_shares(request: Request, ctx: Context, user: User, namespace: NamespaceRef) -> list[AccessGrant]:
    """The namespace's grants: `viewer` is read, `editor` is write."""
    async with ctx.services.db.session() as session:
        return await grants(session, namespace)


@router.operation(
    "POST",
    NAMESPACE_SHARES,
    summary="Share a namespace",
    body=Share,
    status=204,
    errors=(403, 404, 409, 415, 422),
    resolve=OWNED_NAMESPACE,
)
async def share_namespace(request: Request, ctx: Context, user: User, body: Share, namespace: NamespaceRef) -> None:
    """Grants a user read (`viewer`) or write (`editor`) on the namespace, replacing an earlier grant."""
    async with ctx.services.db.session() as session:
        if body.username == user.username:
            raise Conflict("the owner already has every access")
        await set_grant(session, namespace.owner, namespace.name, body.username, ROLES[body.role])


@router.operation(
    "DELETE",
    NAMESPACE_SHARES,
    summary="Stop sharing a namespace",
    body=Share,
    status=204,
    errors=(403, 404, 415, 422),
    resolve=OWNED_NAMESPACE,
)
async def revoke_namespace(request: Request, ctx: Context, user: User, body: Share, namespace: NamespaceRef) -> None:
    """Removes the user's grant on the namespace (404 when they hold none with that role)."""
    async with ctx.services.db.session() as session:
        held = {g.username: g.role for g in await grants(session, namespace)}
        if held.get(body.username) != body.role:
            raise NotFound(f"{body.username!r} holds no {body.role} grant on {namespace}")
        await remove_grant(session, namespace.owner, namespace.name, body.username)


@router.operation(
    "GET",
    DATASET_SHARES,
    summary="Who may use a dataset",
    response=list[AccessGrant],
    errors=(403, 404),
    resolve=OWNED_DATASET,
)
async def dataset_shares(request: Request, ctx: Context, user: User, dataset: DatasetRef) -> list[AccessGrant]:
    """Grants are per namespace: the dataset's users are its namespace's."""
    async with ctx.services.db.session() as session:
        return await grants(session, dataset.namespace)
