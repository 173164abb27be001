"""An ingestion attempt's span, with a child span per stage (each new progress message the
pipeline reports: reading, mapping, inferring types, writing rows, publishing, embedding),
and its metrics when it ends.

The model calls of the attempt (the column mapping, the extraction of rows from a document)
are counted like a run's: a span each under the stage's span and the model-call metrics.
While `IngestionTrace.current()` is open, LangChain hands every model call to the trace's
callbacks by itself (a configure hook on a context variable), so the pipeline passes nothing."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import BaseMessage
from langchain_core.outputs import LLMResult
from langchain_core.tracers.context import register_configure_hook
from opentelemetry import trace
from opentelemetry.trace import Span, Status, StatusCode

from datawell.observability import metrics, tracing
from datawell.observability.model_calls import ModelCall, described, reply_message


class IngestionTrace:
    def __init__(self, ingestion_id: str, dataset: str, file_name: str) -> None:
        self._started = time.perf_counter()
        self._span = tracing.tracer().start_span(
            "ingestion",
            attributes={
                "datawell.ingestion.id": ingestion_id,
                "datawell.dataset": dataset,
                "datawell.file.name": file_name,
            },
        )
        self._stage: Span | None = None
        self._stage_name = ""
        self._callbacks = _ModelCalls(self)

    @contextmanager
    def current(self) -> Iterator[None]:
        """The model calls made inside are this attempt's."""
        token = _current.set(self._callbacks)
        try:
            yield
        finally:
            _current.reset(token)

    @property
    def innermost(self) -> Span:
        """The span a model call belongs under: the stage's, else the attempt's."""
        return self._stage or self._span

    def stage(self, name: str) -> None:
        """The attempt is now doing `name` (the same name again changes nothing)."""
        if name == self._stage_name:
            return
        self._end_stage()
        self._stage_name = name
        self._stage = tracing.tracer().start_span(
            f"ingestion stage: {name}", trace.set_span_in_context(self._span), attributes={"datawell.stage": name}
        )

    def _end_stage(self) -> None:
        if self._stage is not None:
            self._stage.end()
            self._stage = None

    def finish(self, status: str, rows: int, size: int) -> None:
        """The attempt ended: `status` is succeeded, failed or stopped."""
        self._end_stage()
        seconds = time.perf_counter() - self._started
        self._span.set_attributes(
            {"datawell.ingestion.status": status, "datawell.ingestion.rows": rows, "datawell.ingestion.bytes": size}
        )
        if status == "failed":
            self._span.set_status(Status(StatusCode.ERROR, status))
        self._span.end()
        metrics.ingestion_ended(status, rows, size, seconds)


class _ModelCalls(BaseCallbackHandler):
    run_inline = True
    raise_error = False

    def __init__(self, attempt: IngestionTrace) -> None:
        self.attempt = attempt
        self.calls: dict[UUID, ModelCall] = {}

    def on_chat_model_start(
        self,
        serialized: dict[str, Any] | None,
        messages: list[list[BaseMessage]],
        *,
        run_id: UUID,
        tags: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        stage, model = described(serialized, tags, metadata, "ingest")
        self.calls[run_id] = ModelCall(stage, model, self.attempt.innermost)

    def on_llm_end(self, response: LLMResult, *, run_id: UUID, **kwargs: Any) -> None:
        call = self.calls.pop(run_id, None)
        if call is not None:
            call.end(reply_message(response))

    def on_llm_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        call = self.calls.pop(run_id, None)
        if call is not None:
            call.end(None, error)


_current: ContextVar[_ModelCalls | None] = ContextVar("datawell_ingestion_model_calls", default=None)
register_configure_hook(_current, inheritable=True)
