"""A run's record, as `GET /runs` and `GET /runs/{runId}` answer it: what the service recorded
while a question ran (stages, model calls, queries, the rewrite rules that changed a query).
Wire models like `datawell.client.models`' (the same base and the same drift test), kept
apart because the recorder (`datawell.observability.recorder`) builds them as a run goes."""

from __future__ import annotations

from datetime import datetime

from pydantic import Field

from datawell.client.models import Model


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
    """A query-language execution: the text and how many rows came back, never the rows."""

    text: str
    parent: int | None = None
    start: float
    seconds: float = 0.0
    rows: int | None = None
    truncated: bool = False
    error_code: str | None = None
    error: str | None = None


class RewriteRecord(Model):
    """A rewrite rule of the service that changed a query during the run (issue 47;
    docs/query-rewrites.md), in the stage it ran in."""

    rule: str
    before: str
    after: str
    reason: str
    parent: int | None = None  # index of the stage the rule ran in
    start: float = 0.0


class RunRecord(Model):
    """One run's record: its stages, model calls (tokens, seconds; prompts for the asker),
    queries (text, row count, error), answer and outcome; times are seconds from its start."""

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
    # every rule that changed a query, in order (a voting run's losing candidates' too)
    rewrites: list[RewriteRecord] = Field(default_factory=list)

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
