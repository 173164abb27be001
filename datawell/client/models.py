"""The REST operations' answers (SPEC.md), declared once: the service serves these models and
the client reads into them, so the two cannot drift (docs/decisions.md, "One source for wire
models"). A client keeps the fields a newer service adds (`extra="allow"`); the service emits
only declared fields: it builds answers field by field and reads stored records with
`extra="ignore"`, and the document it publishes says `additionalProperties: false`. A schema's
`title` is its name in the OpenAPI document where that differs from the class's.

Request bodies are the service's own (`datawell.api`, `extra="forbid"`); the few request parts
the client builds (`DatasetCoordinate`, `CompletedPart`, `StageModel`) are checked against the
document by tests/client/test_models_drift.py."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

# An id the service hands out: a UUID, read and sent back as the text it came as.
Uuid = Annotated[str, Field(json_schema_extra={"format": "uuid"})]


class Model(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="allow",
        json_schema_extra={"additionalProperties": False},
    )


class Dataset(Model, title="DatasetResponse"):
    id: str
    owner: str
    namespace: str
    dataset_name: str
    data_description: str
    schema_definition: dict[str, str]
    field_types: dict[str, str] = Field(description="Column types inferred at ingestion; empty until data arrives.")
    created_at: datetime
    updated_at: datetime


class DatasetList(Model):
    data: list[Dataset]


class DatasetCoordinate(Model):
    owner: str = Field(min_length=1)
    namespace: str = Field(min_length=1)
    dataset_name: str = Field(min_length=1)

    def __str__(self) -> str:
        return f"{self.owner}/{self.namespace}/{self.dataset_name}"


class BuildSpecCode(Model):
    payload: str


class BuildSpec(Model, title="BuildSpecResponse"):
    id: Uuid
    owner: str
    version: int
    sources: list[DatasetCoordinate]
    destination: DatasetCoordinate
    code: BuildSpecCode
    created_at: datetime
    updated_at: datetime


class BuildSpecList(Model):
    data: list[BuildSpec]


class PresignedPart(Model):
    url: str = Field(description="PUT the part's bytes here; part number and upload id are in the query.")
    size: int = Field(description="Exact size of this part in bytes.")


class PreparedUpload(Model, title="PrepareResponse"):
    upload_id: str = Field(description="Identifier of the multipart upload session.")
    key: str = Field(description="Generated object key in object storage.")
    part_size: int = Field(description="Size of each part in bytes (the last part holds the rest).")
    presigned_urls: list[PresignedPart] = Field(description="One URL per part, part 1 first; 1 to 10000 of them.")
    expires_at: datetime = Field(description="When the part URLs stop working.")


class PartReceipt(Model):
    part_number: int
    size: int
    etag: str


class CompletedPart(Model):
    part_number: int
    etag: str


class CompletedUpload(Model, title="CompleteResponse"):
    id: str = Field(description="Identifier of the ingestion attempt created for the uploaded file.")
    upload_id: str
    key: str
    status: str = Field(description="Status of the new ingestion attempt: QUEUED.")


class AbortedUpload(Model, title="AbortResponse"):
    upload_id: str
    key: str
    status: str = Field(description="ABORTED")


IngestionStatus = Literal["QUEUED", "RUNNING", "SUCCEEDED", "FAILED", "CANCELLED"]
FINISHED: frozenset[str] = frozenset({"SUCCEEDED", "FAILED", "CANCELLED"})


class IngestionAttributes(Model):
    name: str = Field(description="Name of the uploaded file.")
    seen_at: datetime = Field(description="When the file was received (a retry keeps its original's).")
    original_ingestion_id: Uuid | None = Field(description="The ingestion this one was retried from.")
    last_retry_at: datetime | None = Field(description="When this ingestion was last retried, or created by a retry.")


class IngestionAttempt(Model):
    id: Uuid
    status: IngestionStatus
    expected_total_bytes: int
    status_message: str
    processed_bytes: int
    processed_rows: int
    attributes: IngestionAttributes

    @property
    def finished(self) -> bool:
        return self.status in FINISHED


class IngestionDetail(IngestionAttempt):
    mapping: dict[str, Any] = Field(
        description="How the file was structured: for tables, which column fills each field and whether the model "
        "or name similarity chose it; for documents, how many passages and records the model extracted."
    )


class AttemptsMetadata(Model):
    page_size: int
    before_created_at: datetime | None = Field(
        description="Pass as beforeCreatedAt to get the next page; null when there are no older attempts."
    )


class AttemptList(Model):
    data: list[IngestionAttempt]
    metadata: AttemptsMetadata


class Retried(Model, title="RetryResponse"):
    id: Uuid = Field(description="The new ingestion, queued for the background worker.")


class Cleared(Model, title="ClearResponse"):
    rows_deleted: int
    vectors_deleted: int
    links_deleted: int
    ingestions_cancelled: int = Field(description="Queued or running ingestions of the dataset that were stopped.")


class RowsMetadata(Model):
    columns: list[str]
    count: int = Field(description="Rows on this page.")
    next_cursor: str | None = Field(description="Pass as `cursor` for the next page; null on the last page.")


class RowsPage(Model, title="RowsPageResponse"):
    data: list[dict[str, Any]] = Field(description="The rows: the chosen fields, and `__id`, the row's id.")
    metadata: RowsMetadata


class Deleted(Model, title="DeletedResponse"):
    rows_deleted: int
    vectors_deleted: int
    links_deleted: int
    uploads_deleted: int
    objects_deleted: int
    examples_deleted: int = Field(description="Verified examples whose query named the dataset.")
    ingestions_ended: int = Field(description="Queued or running attempts stopped.")


class NamespaceInfo(Model, title="NamespaceResponse"):
    owner: str
    name: str


class StageModel(Model):
    model: str | None = None
    provider: str | None = None


class QueryChange(Model):
    """One rewrite rule of the service that changed a query (docs/query-rewrites.md)."""

    rule: str = Field(description="The rule's name")
    before: str = Field(description="The query before the rule")
    after: str = Field(description="The query after the rule")
    reason: str = Field(description="Why, in words")


class AutoRagStep(Model):
    instruction: str
    query: str
    reasoning: str
    data: list[dict[str, Any]] = Field(description="The step's result rows")
    model_query: str = Field("", description="The step's query as written, before the service's rewrite rules")
    changes: list[QueryChange] = Field(
        default_factory=list, description="Each rewrite rule that changed the query, in order"
    )


class AutoRagAnswer(Model, title="AutoRagResponse"):
    response: str = Field(description="The answer")
    steps: list[AutoRagStep]
    conversation_id: str


class RunEvent(Model):
    """One event of an AutoRAG stream: `event` is its name (run-started, plan, step,
    answer-delta, answer, run-finished, error) and `data` its JSON body."""

    event: str
    data: dict[str, Any]


class CuratedLink(Model):
    origin: str = Field(description="`namespace/dataset.field` (a GeoMatch names `lat,lon`)")
    destination: str
    hits: int = Field(description="Distinct values the two fields share (points nearby for a GeoMatch)")
    match_type: str = Field(description="ExactMatch, NormalizedMatch, FuzzyMatch, SemanticMatch or GeoMatch")


class Curation(Model, title="CurateLinksResponse"):
    datasets_processed: int = Field(description="Number of datasets processed")
    total_selected: int = Field(description="Total links selected by the curator agent")
    curated_links: list[CuratedLink] | None = Field(None, description="Only present when `activate` is false")


class Link(Model, title="LinkResponse"):
    id: str
    origin: str
    destination: str
    hits: int
    match_type: str
    score: float
    status: str
    reason: str
    curated_by: str | None = Field(description="Username of the user whose request curated the link")
    model: str
    created_at: datetime
    updated_at: datetime


class LinkList(Model):
    data: list[Link]


class Example(Model, title="ExampleResponse"):
    id: Uuid
    owner: str = Field(description="Owner username of the namespace")
    namespace: str
    question: str
    query: str
    source: Literal["manual", "conversation"] = Field(
        description="`manual`: added by hand; `conversation`: a conversation step marked good"
    )
    conversation_id: str | None = Field(description="The conversation of a marked step")
    step: int | None = Field(description="The marked step's index (1-based) in its turn")
    created_by: str = Field(description="Username of the user who added or marked it")
    created_at: datetime


class ExampleList(Model):
    data: list[Example] = Field(description="Newest first (at most 1000)")


class Mark(Model, title="MarkResponse"):
    verdict: Literal["good", "bad"]
    question: str
    query: str
    example: Example | None = Field(description="The verified example (good); null for bad")
    removed: int = Field(description="Examples removed (bad)")


class Agent(Model, title="AgentListItem"):
    name: str
    url: str = Field(description="The agent's JSON-RPC endpoint")
    agent_card: str = Field(description="Address of the agent's AgentCard")


class Health(Model):
    status: str
    version: str
    database: str


class UploadProgress(Model):
    """What `upload()` reports while it works: first the parts (`phase` "parts", bytes
    sent), then the ingestion (`phase` "ingestion", the attempt as the service reports it)."""

    phase: Literal["parts", "ingestion"]
    total_bytes: int
    sent_bytes: int = 0
    parts_done: int = 0
    parts_total: int = 0
    attempt: IngestionAttempt | None = None
