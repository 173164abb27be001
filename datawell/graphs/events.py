"""Progress events every graph emits while it runs. The REST SSE stream, the A2A event
sequence, the JSON answers and the eval predictions are renderings of these same events.

Nodes emit with `emit(event)` (LangGraph's custom stream writer); a runner consumes them with
`graph.astream(..., stream_mode="custom")`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

from langgraph.config import get_stream_writer
from pydantic import BaseModel, ConfigDict, Field, computed_field

from datawell.errors import DatawellError


class RunQueued(BaseModel):
    """Every model slot is taken: the run waits at `position` (1 = next). Sent before any
    other event of the run, and again each time the position changes; a run that gets a
    slot at once sends none."""

    type: Literal["queued"] = "queued"
    position: int


class RunStarted(BaseModel):
    type: Literal["run-started"] = "run-started"
    conversation_id: str | None = None


class QueryGenerated(BaseModel):
    """nl2ql: the query that ran (after `attempts` tries), announced just before its rows."""

    type: Literal["query"] = "query"
    query: str
    reasoning: str = ""
    attempts: int = 1
    # issue 47: the query as written (by the model, or the caller), and each rule of the
    # service that changed it on the way to `query` ({rule, before, after, reason}, in order)
    model_query: str = ""
    changes: list[dict[str, str]] = Field(default_factory=list)


class RowsReady(BaseModel):
    """nl2ql: the query ran."""

    type: Literal["rows"] = "rows"
    query: str
    rows: list[dict[str, Any]]
    truncated: bool = False


class PlanReady(BaseModel):
    type: Literal["plan"] = "plan"
    text: str
    steps: list[str]


class StepStarted(BaseModel):
    type: Literal["step-started"] = "step-started"
    index: int  # 1-based
    instruction: str


class StepOutcome(BaseModel):
    """What a step did; MCP's assistant tool returns its steps as this."""

    index: int  # 1-based
    instruction: str
    query: str
    rows: list[dict[str, Any]]
    error: str | None = None
    # issue 47: a data step's query as written, and each rule that changed it ({rule, before, after, reason})
    model_query: str = ""
    changes: list[dict[str, str]] = Field(default_factory=list)


class StepFinished(StepOutcome):
    type: Literal["step"] = "step"
    reasoning: str


class AnswerDelta(BaseModel):
    """A piece of the answer, sent only once the answer passed its check against the rows
    (graphs/assistant/agreement.py): the deltas add up to the `answer` event's text."""

    type: Literal["answer-delta"] = "answer-delta"
    text: str


class AnswerReady(BaseModel):
    type: Literal["answer"] = "answer"
    text: str


class RunFinished(BaseModel):
    type: Literal["run-finished"] = "run-finished"


class CandidatesFound(BaseModel):
    """curator: how many link candidates the data gave."""

    type: Literal["candidates"] = "candidates"
    count: int


class CuratedLink(BaseModel):
    origin: str  # namespace/dataset.field
    destination: str
    match_type: str
    hits: int
    score: float
    reason: str


class LinksCurated(BaseModel):
    """curator: the links the model selected, stored as suggestions or activated."""

    type: Literal["links"] = "links"
    datasets_processed: int
    links: list[CuratedLink]
    activated: bool


class RunFailed(BaseModel):
    """The run stopped on `error`; every surface renders it through `datawell.errors.ERRORS`."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    type: Literal["error"] = "error"
    error: DatawellError = Field(exclude=True)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def error_code(self) -> str:
        return self.error.error_code

    @computed_field  # type: ignore[prop-decorator]
    @property
    def message(self) -> str:
        return self.error.message


GraphEvent = Annotated[
    RunQueued
    | RunStarted
    | QueryGenerated
    | RowsReady
    | PlanReady
    | StepStarted
    | StepFinished
    | AnswerDelta
    | AnswerReady
    | RunFinished
    | CandidatesFound
    | LinksCurated
    | RunFailed,
    Field(discriminator="type"),
]


@dataclass
class RunResult:
    """A whole run folded into what an answer that is not streamed shows (REST JSON, the eval
    predictions, the curate-links answer): the steps in order, the last event of each kind."""

    plan: PlanReady | None = None
    steps: list[StepFinished] = field(default_factory=list)
    answer: AnswerReady | None = None
    deltas: list[str] = field(default_factory=list)  # the answer so far, while `answer` has not come
    query: QueryGenerated | None = None
    rows: RowsReady | None = None
    links: LinksCurated | None = None
    failure: RunFailed | None = None

    def add(self, event: GraphEvent) -> None:
        match event:
            case PlanReady():
                self.plan = event
            case StepFinished():
                self.steps.append(event)
            case AnswerDelta():
                self.deltas.append(event.text)
            case AnswerReady():
                self.answer = event
            case QueryGenerated():
                self.query = event
            case RowsReady():
                self.rows = event
            case LinksCurated():
                self.links = event
            case RunFailed():
                self.failure = event

    def answer_text(self) -> str | None:
        return self.answer.text if self.answer is not None else "".join(self.deltas) or None


def emit(event: BaseModel) -> None:
    """Send a progress event to whoever streams the running graph (a no-op outside a stream)."""
    get_stream_writer()(event)
