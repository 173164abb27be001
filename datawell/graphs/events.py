"""Progress events every graph emits while it runs. The REST SSE stream and the A2A event
sequence are two renderings of these same events.

Nodes emit with `emit(event)` (LangGraph's custom stream writer); a runner consumes them with
`graph.astream(..., stream_mode="custom")`."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from langgraph.config import get_stream_writer
from pydantic import BaseModel, Field


class RunStarted(BaseModel):
    type: Literal["run-started"] = "run-started"
    conversation_id: str | None = None


class QueryGenerated(BaseModel):
    """nl2ql: the query that ran (after `attempts` tries), announced just before its rows."""

    type: Literal["query"] = "query"
    query: str
    reasoning: str = ""
    attempts: int = 1


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


class StepFinished(BaseModel):
    type: Literal["step"] = "step"
    index: int  # 1-based
    instruction: str
    query: str
    reasoning: str
    rows: list[dict[str, Any]]
    error: str | None = None


class AnswerDelta(BaseModel):
    type: Literal["answer-delta"] = "answer-delta"
    text: str


class AnswerReady(BaseModel):
    type: Literal["answer"] = "answer"
    text: str


class RunFinished(BaseModel):
    type: Literal["run-finished"] = "run-finished"


class RunFailed(BaseModel):
    type: Literal["error"] = "error"
    error_code: str
    message: str


GraphEvent = Annotated[
    RunStarted
    | QueryGenerated
    | RowsReady
    | PlanReady
    | StepStarted
    | StepFinished
    | AnswerDelta
    | AnswerReady
    | RunFinished
    | RunFailed,
    Field(discriminator="type"),
]


def emit(event: BaseModel) -> None:
    """Send a progress event to whoever streams the running graph (a no-op outside a stream)."""
    get_stream_writer()(event)
