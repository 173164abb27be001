"""Log lines that carry the trace id of the work they describe (`trace_id`, `span_id`:
empty outside a span or with traces off), as text or as one JSON object a line."""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime
from typing import Literal

from opentelemetry import trace

from datawell.observability import tracing

TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s [trace=%(trace_id)s] %(message)s"


class TraceIds(logging.Filter):
    """Adds the current span's ids to every record it sees (a handler filter: every line); in
    a request the sampler dropped, which has no span, the ids its `traceparent` names."""

    def filter(self, record: logging.LogRecord) -> bool:
        context = trace.get_current_span().get_span_context()
        if context.is_valid:
            record.trace_id = f"{context.trace_id:032x}"
            record.span_id = f"{context.span_id:016x}"
        elif dropped := tracing.DROPPED.get():
            record.trace_id, record.span_id = tracing.dropped_ids(dropped)
        else:
            record.trace_id = record.span_id = ""
        return True


class JsonLines(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        line = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
            "trace_id": getattr(record, "trace_id", ""),
            "span_id": getattr(record, "span_id", ""),
        }
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        return json.dumps(line)


def handler(log_format: Literal["text", "json"]) -> logging.Handler:
    """A stderr handler in `log_format` that stamps every line with its trace id."""
    stream = logging.StreamHandler()
    stream.addFilter(TraceIds())
    stream.setFormatter(JsonLines() if log_format == "json" else logging.Formatter(TEXT_FORMAT))
    return stream


def configure(log_format: Literal["text", "json"], level: int = logging.INFO) -> None:
    """The root logger and uvicorn's loggers write through one such handler."""
    root = logging.getLogger()
    for existing in list(root.handlers):
        root.removeHandler(existing)
    root.addHandler(handler(log_format))
    root.setLevel(level)
    # Every start runs the migrations; alembic's lines about its own context say nothing to an operator.
    logging.getLogger("alembic").setLevel(max(level, logging.WARNING))
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access"):
        logger = logging.getLogger(name)
        logger.handlers.clear()
        logger.propagate = True
