"""The one place a run's events become metrics, spans and the run record.

`RunRecorder` is fed by the graph (its LangChain callbacks, `RunRecorder.callbacks()`: a node
starts or ends, a model call starts or ends), by the query tools (`observe_query`) and by the
runner (`finish`). Each event updates the record, the span and the metric at once, so the
three cannot disagree.

The running recorder is found through a context variable (`current()`), which the graph's
node tasks inherit; work outside a run (a console count query, an MCP query) reports its
metrics and spans the same way and has no record."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import LLMResult
from opentelemetry import trace
from opentelemetry.trace import Span, Status, StatusCode

from datawell.client.run_records import (
    ModelCallRecord,
    PromptMessage,
    QueryRecord,
    RewriteRecord,
    RunRecord,
    StageRecord,
)
from datawell.observability import metrics, tracing
from datawell.observability.model_calls import ModelCall, described, reply_message
from datawell.slots import Placement

# What a record keeps of a prompt message or a reply: enough to read, bounded in size.
MAX_TEXT_CHARS = 20_000


def clip(text: Any) -> str:
    text = text if isinstance(text, str) else str(text)
    return text if len(text) <= MAX_TEXT_CHARS else text[:MAX_TEXT_CHARS] + "…"


_current: ContextVar[RunRecorder | None] = ContextVar("datawell_run_recorder", default=None)


def current() -> RunRecorder | None:
    return _current.get()


@dataclass
class _Open:
    index: int  # in the record's stages
    span: Span
    started: float


class RunRecorder:
    """Records one run of `graph`. `start()` opens its span (a child of the request's) and makes
    it the current recorder; `finish(...)` closes both and returns the record."""

    def __init__(self, record: RunRecord) -> None:
        self.record = record
        self._started = time.perf_counter()
        self._span: Span = trace.INVALID_SPAN
        self._nodes: dict[UUID, _Open] = {}
        self._open_nodes: list[UUID] = []
        self._calls: dict[UUID, tuple[int, ModelCall]] = {}  # the record's index, the call
        self._previous: RunRecorder | None = None

    def _now(self) -> float:
        return time.perf_counter() - self._started

    def start(self) -> None:
        self._span = tracing.tracer().start_span(
            f"run {self.record.graph}",
            attributes={
                "datawell.run.id": self.record.id,
                "datawell.run.graph": self.record.graph,
                "datawell.namespace": self.record.namespace,
                "enduser.id": self.record.user_id,
            },
        )
        context = self._span.get_span_context()
        if context.is_valid:
            self.record.trace_id = format(context.trace_id, "032x")
        self._previous = _current.get()
        _current.set(self)

    def _parent(self) -> tuple[int | None, Span]:
        """The innermost node still running, or the run."""
        if self._open_nodes:
            node = self._nodes[self._open_nodes[-1]]
            return node.index, node.span
        return None, self._span

    def _child_span(self, name: str, parent: Span, attributes: dict[str, Any]) -> Span:
        return tracing.tracer().start_span(name, trace.set_span_in_context(parent), attributes=attributes)

    # the model scheduler (issue 52): where the run went and why, on the run's span

    def scheduled(self, placement: Placement, waited_seconds: float) -> None:
        said = {
            "datawell.scheduler.slot": placement.slot,
            "datawell.scheduler.prefix": placement.decision,
            "datawell.scheduler.reason": placement.reason,
            "datawell.scheduler.waited_for_prefix": placement.waited_for_prefix,
            "datawell.scheduler.wait_seconds": round(waited_seconds, 3),
        }
        self._span.set_attributes(said)
        self._span.add_event("scheduled", said)

    # graph nodes

    def node_started(self, run_id: UUID, name: str) -> None:
        parent_index, parent = self._parent()
        span = self._child_span(f"node {name}", parent, {"datawell.node": name})
        self.record.stages.append(StageRecord(name=name, parent=parent_index, start=self._now()))
        self._nodes[run_id] = _Open(len(self.record.stages) - 1, span, time.perf_counter())
        self._open_nodes.append(run_id)

    def node_ended(self, run_id: UUID, error: BaseException | None = None) -> None:
        node = self._nodes.pop(run_id, None)
        if node is None:
            return
        if run_id in self._open_nodes:
            self._open_nodes.remove(run_id)
        stage = self.record.stages[node.index]
        stage.seconds = time.perf_counter() - node.started
        if error is not None:
            stage.error = clip(error)
            node.span.record_exception(error)
            node.span.set_status(Status(StatusCode.ERROR, type(error).__name__))
        node.span.end()

    # model calls

    def model_started(self, run_id: UUID, stage: str, model: str, messages: list[BaseMessage]) -> None:
        parent_index, parent = self._parent()
        prompt = [PromptMessage(role=m.type, content=clip(m.content)) for m in messages]
        self.record.model_calls.append(
            ModelCallRecord(stage=stage, model=model, parent=parent_index, start=self._now(), prompt=prompt)
        )
        self._calls[run_id] = (len(self.record.model_calls) - 1, ModelCall(stage, model, parent))

    def model_ended(self, run_id: UUID, response: LLMResult | None, error: BaseException | None = None) -> None:
        index, call = self._calls.pop(run_id, (0, None))
        if call is None:
            return
        message = reply_message(response)
        entry = self.record.model_calls[index]
        entry.seconds, usage = call.end(message, error)
        entry.prompt_tokens, entry.output_tokens, entry.cached_tokens = usage.prompt, usage.output, usage.cached
        if message is not None:
            entry.reply = clip(reply_text(message))
        if error is not None:
            entry.error = clip(error)

    # queries

    def query_span(self, text: str) -> tuple[int, Span]:
        parent_index, parent = self._parent()
        self.record.queries.append(QueryRecord(text=clip(text), parent=parent_index, start=self._now()))
        return len(self.record.queries) - 1, self._child_span("query", parent, {"db.query.text": clip(text)})

    # rewrite rules (issue 47): one span event each, on the stage's span

    def rewrote(self, rule: str, before: str, after: str, reason: str) -> None:
        parent_index, parent = self._parent()
        said = {"rule": rule, "before": clip(before), "after": clip(after), "reason": clip(reason)}
        parent.add_event(f"rewrite {rule}", {f"datawell.rewrite.{k}": v for k, v in said.items()})
        self.record.rewrites.append(RewriteRecord(**said, parent=parent_index, start=self._now()))

    # the end

    def finish(self, outcome: str, error: str | None = None, answer: str | None = None) -> RunRecord:
        for run_id in list(self._calls):
            self.model_ended(run_id, None, error=RuntimeError("the run ended first"))
        for run_id in list(self._nodes):
            self.node_ended(run_id)
        record = self.record
        record.seconds = self._now()
        record.outcome = outcome
        record.error = error
        record.answer = answer
        self._span.set_attribute("datawell.run.outcome", outcome)
        if outcome != "ok":
            self._span.set_attribute(tracing.ERROR_TYPE, outcome)
            self._span.set_status(Status(StatusCode.ERROR, outcome))
        self._span.end()
        metrics.run_ended(record.graph, outcome, record.seconds)
        if _current.get() is self:
            _current.set(self._previous)
        return record

    def callbacks(self) -> BaseCallbackHandler:
        return GraphCallbacks(self)


@dataclass
class QueryObservation:
    """What `observe_query`'s caller reports of a query that ran."""

    rows: int | None = None
    truncated: bool = False


@contextmanager
def observe_query(text: str) -> Iterator[QueryObservation]:
    """A query execution: its span (the QL text and the row count, never a row), its metric,
    and in a run its line of the record. An exception with an `error_code` (a refusal) is
    counted under that code and raised on."""
    recorder = current()
    if recorder is not None:
        index, span = recorder.query_span(text)
    else:
        index, span = None, tracing.tracer().start_span("query", attributes={"db.query.text": clip(text)})
    observation = QueryObservation()
    started = time.perf_counter()
    outcome = "ok"
    try:
        yield observation
    except Exception as error:
        outcome = str(getattr(error, "error_code", None) or "INTERNAL_ERROR")
        span.set_attribute(tracing.ERROR_TYPE, outcome)
        span.set_status(Status(StatusCode.ERROR, outcome))
        if recorder is not None and index is not None:
            entry = recorder.record.queries[index]
            entry.error_code = outcome
            entry.error = clip(getattr(error, "message", None) or error)
        raise
    finally:
        seconds = time.perf_counter() - started
        if observation.rows is not None:
            span.set_attribute("db.response.returned_rows", observation.rows)
        span.end()
        metrics.query_ran(outcome, seconds)
        if recorder is not None and index is not None:
            entry = recorder.record.queries[index]
            entry.seconds = seconds
            entry.rows = observation.rows
            entry.truncated = observation.truncated


def reply_text(message: AIMessage) -> str:
    if message.tool_calls:
        return json.dumps([{"name": c["name"], "args": c["args"]} for c in message.tool_calls])
    return str(message.content)


class GraphCallbacks(BaseCallbackHandler):
    """LangChain callbacks of one run's graph, handed to the recorder. Inline: they run in the
    node's own task, in order, with no thread hop."""

    run_inline = True
    raise_error = False

    def __init__(self, recorder: RunRecorder) -> None:
        self.recorder = recorder

    def on_chain_start(
        self,
        serialized: dict[str, Any] | None,
        inputs: Any,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        tags: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        node = (metadata or {}).get("langgraph_node")
        # A node's own run carries its name; the runnables inside it carry theirs.
        if node and kwargs.get("name") == node:
            self.recorder.node_started(run_id, node)

    def on_chain_end(self, outputs: Any, *, run_id: UUID, **kwargs: Any) -> None:
        self.recorder.node_ended(run_id)

    def on_chain_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        self.recorder.node_ended(run_id, error)

    def on_chat_model_start(
        self,
        serialized: dict[str, Any] | None,
        messages: list[list[BaseMessage]],
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        tags: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        stage, model = described(serialized, tags, metadata, str((metadata or {}).get("langgraph_node", "unknown")))
        self.recorder.model_started(run_id, stage, model, messages[0] if messages else [])

    def on_llm_end(self, response: LLMResult, *, run_id: UUID, **kwargs: Any) -> None:
        self.recorder.model_ended(run_id, response)

    def on_llm_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        self.recorder.model_ended(run_id, None, error)


def new_record(
    run_id: str, graph: str, user_id: str, username: str, namespace_id: str | None, namespace: str, question: str
) -> RunRecord:
    return RunRecord(
        id=run_id,
        graph=graph,
        user_id=user_id,
        username=username,
        namespace_id=namespace_id,
        namespace=namespace,
        question=clip(question),
        started_at=datetime.now(UTC),
    )
