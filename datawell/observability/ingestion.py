"""An ingestion attempt's span, with a child span per stage (each new progress message the
pipeline reports: reading, mapping, inferring types, writing rows, publishing, embedding),
and its metrics when it ends."""

from __future__ import annotations

import time

from opentelemetry import trace
from opentelemetry.trace import Span, Status, StatusCode

from datawell.observability import metrics, tracing


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
