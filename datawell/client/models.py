"""Typed results of the REST operations (SPEC.md), written for the client: they mirror the
service's JSON, never its code, and keep fields a newer service adds (`extra="allow"`)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel


class Model(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="allow")


class Dataset(Model):
    id: str
    owner: str
    namespace: str
    dataset_name: str
    data_description: str
    schema_definition: dict[str, str]
    field_types: dict[str, str]
    created_at: datetime
    updated_at: datetime


class DatasetList(Model):
    data: list[Dataset]


class DatasetCoordinate(Model):
    owner: str
    namespace: str
    dataset_name: str


class BuildSpecCode(Model):
    payload: str


class BuildSpec(Model):
    id: str
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
    url: str
    size: int


class PreparedUpload(Model):
    upload_id: str
    key: str
    part_size: int
    presigned_urls: list[PresignedPart]
    expires_at: datetime


class PartReceipt(Model):
    part_number: int
    size: int
    etag: str


class CompletedPart(Model):
    part_number: int
    etag: str


class CompletedUpload(Model):
    id: str = Field(description="The ingestion attempt queued for the uploaded file.")
    upload_id: str
    key: str
    status: str


class AbortedUpload(Model):
    upload_id: str
    key: str
    status: str


IngestionStatus = Literal["QUEUED", "RUNNING", "SUCCEEDED", "FAILED", "CANCELLED"]
FINISHED: frozenset[str] = frozenset({"SUCCEEDED", "FAILED", "CANCELLED"})


class IngestionAttributes(Model):
    name: str
    seen_at: datetime
    original_ingestion_id: str | None
    last_retry_at: datetime | None


class IngestionAttempt(Model):
    id: str
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
    """An attempt read one by one: with the mapping the ingestion chose."""

    mapping: dict[str, Any]


class AttemptsMetadata(Model):
    page_size: int
    before_created_at: datetime | None


class AttemptList(Model):
    data: list[IngestionAttempt]
    metadata: AttemptsMetadata


class Retried(Model):
    id: str


class Cleared(Model):
    rows_deleted: int
    vectors_deleted: int
    links_deleted: int
    ingestions_cancelled: int


class RowsMetadata(Model):
    columns: list[str]
    count: int
    next_cursor: str | None


class RowsPage(Model):
    """A page of a dataset's rows; each row holds the chosen fields and `__id`."""

    data: list[dict[str, Any]]
    metadata: RowsMetadata


class Deleted(Model):
    rows_deleted: int
    vectors_deleted: int
    links_deleted: int
    uploads_deleted: int
    objects_deleted: int
    examples_deleted: int
    ingestions_ended: int


class NamespaceInfo(Model):
    owner: str
    name: str


class StageModel(Model):
    model: str | None = None
    provider: str | None = None


class AutoRagStep(Model):
    instruction: str
    query: str
    reasoning: str
    data: list[dict[str, Any]]


class AutoRagAnswer(Model):
    response: str
    steps: list[AutoRagStep]
    conversation_id: str


class RunEvent(Model):
    """One event of an AutoRAG stream: `event` is its name (run-started, plan, step,
    answer-delta, answer, run-finished, error) and `data` its JSON body."""

    event: str
    data: dict[str, Any]


class CuratedLink(Model):
    origin: str
    destination: str
    hits: int
    match_type: str


class Curation(Model):
    datasets_processed: int
    total_selected: int
    curated_links: list[CuratedLink] | None = None


class Link(Model):
    id: str
    origin: str
    destination: str
    hits: int
    match_type: str
    score: float
    status: str
    reason: str
    curated_by: str | None
    model: str
    created_at: datetime
    updated_at: datetime


class LinkList(Model):
    data: list[Link]


class Example(Model):
    """A verified question and the query that answers it."""

    id: str
    owner: str
    namespace: str
    question: str
    query: str
    source: Literal["manual", "conversation"]
    conversation_id: str | None
    step: int | None
    created_by: str
    created_at: datetime


class ExampleList(Model):
    data: list[Example]


class Mark(Model):
    verdict: Literal["good", "bad"]
    question: str
    query: str
    example: Example | None
    removed: int


class Agent(Model):
    name: str
    url: str
    agent_card: str


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


class RunSummary(Model):
    """A recorded run, as the runs list shows it."""

    id: str
    graph: str
    username: str
    namespace: str
    question: str
    started_at: datetime
    seconds: float
    outcome: str
    prompt_tokens: int
    output_tokens: int


class RunList(Model):
    data: list[RunSummary]


class StageRecord(Model):
    """A graph node that ran (nested graphs' nodes have their node as `parent`)."""

    name: str
    parent: int | None = None  # index of the enclosing stage in `stages`
    start: float
    seconds: float = 0.0
    error: str | None = None


class PromptMessage(Model):
    role: str
    content: str


class ModelCallRecord(Model):
    """A model call: its tokens and seconds; the prompt and reply only for the run's owner."""

    stage: str
    model: str
    parent: int | None = None  # index of the stage that made the call
    start: float
    seconds: float = 0.0
    prompt_tokens: int = 0
    cached_tokens: int = 0
    output_tokens: int = 0
    error: str | None = None
    prompt: list[PromptMessage] = Field(default_factory=list)
    reply: str = ""


class QueryRecord(Model):
    """A query that ran: its text and how many rows came back, never the rows."""

    text: str
    parent: int | None = None
    start: float
    seconds: float = 0.0
    rows: int | None = None
    truncated: bool = False
    error_code: str | None = None
    error: str | None = None


class RunRecord(Model):
    """One run's record: its stages, model calls (tokens, seconds; prompts for the asker),
    queries (text, row count, error), answer and outcome; times are seconds from its start."""

    id: str
    graph: str
    user_id: str
    username: str = ""
    namespace_id: str | None = None
    namespace: str = ""
    question: str = ""
    started_at: datetime
    seconds: float = 0.0
    outcome: str = "running"  # ok, or the error code that ended it
    error: str | None = None
    answer: str | None = None
    trace_id: str | None = None
    stages: list[StageRecord] = Field(default_factory=list)
    model_calls: list[ModelCallRecord] = Field(default_factory=list)
    queries: list[QueryRecord] = Field(default_factory=list)
