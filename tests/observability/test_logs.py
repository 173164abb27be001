"""Log lines carry the trace id of the work they describe, as text or as JSON lines."""

from __future__ import annotations

import io
import json
import logging

from opentelemetry.sdk.trace import TracerProvider

from datawell.observability import logs


def lines(log_format: str) -> tuple[list[str], str]:
    stream = io.StringIO()
    handler = logs.handler(log_format)  # type: ignore[arg-type]
    assert isinstance(handler, logging.StreamHandler)
    handler.setStream(stream)
    logger = logging.getLogger("datawell.test.logs")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    tracer = TracerProvider().get_tracer("test")
    try:
        logger.info("outside")
        with tracer.start_as_current_span("work") as span:
            logger.info("inside %s", "a span")
            trace_id = f"{span.get_span_context().trace_id:032x}"
    finally:
        logger.removeHandler(handler)
    return stream.getvalue().splitlines(), trace_id


def test_text_lines_name_their_trace() -> None:
    found, trace_id = lines("text")
    assert "[trace=] outside" in found[0]
    assert f"[trace={trace_id}] inside a span" in found[1]


def test_json_lines() -> None:
    found, trace_id = lines("json")
    outside, inside = (json.loads(line) for line in found)
    assert (outside["message"], outside["trace_id"]) == ("outside", "")
    assert (inside["message"], inside["trace_id"], inside["level"]) == ("inside a span", trace_id, "INFO")
    assert len(inside["span_id"]) == 16 and inside["logger"] == "datawell.test.logs"
