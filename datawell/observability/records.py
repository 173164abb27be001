"""The record of one run, as the run viewer and `GET /api/v1/runs/{id}` show it. Times are
seconds from the run's start, so a timeline needs no clock arithmetic."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

# What a record keeps of a prompt message or a reply: enough to read, bounded in size.
MAX_TEXT_CHARS = 20_000


class Wire(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, serialize_by_alias=True)


class StageRecord(Wire):
    """A graph node that ran (nested graphs' nodes have their node as `parent`)."""

    name: str
    parent: int | None = None  # index of the enclosing stage in `stages`
    start: float
    seconds: float = 0.0
    error: str | None = None


class PromptMessage(Wire):
    role: str
    content: str


class ModelCallRecord(Wire):
    stage: str
    model: str
    parent: int | None = None  # index of the stage that made the call
    start: float
    seconds: float = 0.0
    prompt_tokens: int = 0
    cached_tokens: int = 0
    output_tokens: int = 0
    error: str | None = None
    # The conversation the model was given and what it answered: the run's owner sees them.
    prompt: list[PromptMessage] = Field(default_factory=list)
    reply: str = ""


class QueryRecord(Wire):
    """A query-language execution: the text and how many rows came back, never the rows."""

    text: str
    parent: int | None = None
    start: float
    seconds: float = 0.0
    rows: int | None = None
    truncated: bool = False
    error_code: str | None = None
    error: str | None = None


class RunRecord(Wire):
    id: str
    graph: str
    user_id: str
    username: str = ""
    namespace_id: str | None = None
    namespace: str = ""  # owner/name
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

    def tokens(self) -> dict[str, int]:
        return {
            "prompt": sum(c.prompt_tokens for c in self.model_calls),
            "cached": sum(c.cached_tokens for c in self.model_calls),
            "output": sum(c.output_tokens for c in self.model_calls),
        }

    def without_prompts(self) -> RunRecord:
        """What someone else than the run's owner may read: no prompt, no reply."""
        calls = [c.model_copy(update={"prompt": [], "reply": ""}) for c in self.model_calls]
        return self.model_copy(update={"model_calls": calls})


def clip(text: Any) -> str:
    text = text if isinstance(text, str) else str(text)
    return text if len(text) <= MAX_TEXT_CHARS else text[:MAX_TEXT_CHARS] + "…"
