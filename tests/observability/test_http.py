"""The request span (`RequestObserver`) on a small Starlette app: SERVER kind, named by the
route template with the stable HTTP attributes, current for the handler and its log lines,
ERROR on a 5xx or an exception, the caller's trace continued, nothing recorded for a request
the sampler drops; and the request metrics by route template, request after request."""

from __future__ import annotations

import io
import logging
from collections.abc import Iterator

import httpx
import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.sampling import TraceIdRatioBased
from opentelemetry.trace import SpanKind, StatusCode
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Route

from datawell.observability import logs, metrics, tracing
from datawell.observability.http import RequestObserver

CALLER_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
CALLER_SPAN = "00f067aa0ba902b7"
LOGGER = logging.getLogger("datawell.test.http")


async def item(request: Request) -> PlainTextResponse:
    LOGGER.info("reading item %s", request.path_params["item_id"])
    return PlainTextResponse("ok")


async def broken(request: Request) -> PlainTextResponse:
    return PlainTextResponse("down", status_code=503)


async def failing(request: Request) -> PlainTextResponse:
    raise RuntimeError("boom")


def small_app(provider: TracerProvider, ratio: float) -> Starlette:
    tracer = provider.get_tracer("test")

    async def work(request: Request) -> PlainTextResponse:
        """Starts a span beneath the request's, as a run does (no explicit parent), and
        answers with that span's trace id."""
        span = tracer.start_span("inner")
        span.end()
        LOGGER.info("working")
        return PlainTextResponse(f"{span.get_span_context().trace_id:032x}")

    return Starlette(
        routes=[
            Route("/items/{item_id}", item),
            Route("/broken", broken),
            Route("/failing", failing),
            Route("/work", work),
        ],
        middleware=[Middleware(RequestObserver, tracer=tracer, ratio=ratio)],
    )


@pytest.fixture
def exporter() -> InMemorySpanExporter:
    return InMemorySpanExporter()


def client_of(
    exporter: InMemorySpanExporter, ratio: float = 1.0, provider_ratio: float | None = None
) -> httpx.AsyncClient:
    """A client of `small_app`, whose requests are sampled at `ratio` (the provider's too,
    unless `provider_ratio` says otherwise)."""
    provider = tracing.new_provider(ratio if provider_ratio is None else provider_ratio, SimpleSpanProcessor(exporter))
    transport = httpx.ASGITransport(app=small_app(provider, ratio), raise_app_exceptions=False)
    return httpx.AsyncClient(transport=transport, base_url="http://testserver")


@pytest.fixture
def logged() -> Iterator[io.StringIO]:
    stream = io.StringIO()
    handler = logs.handler("text")
    assert isinstance(handler, logging.StreamHandler)
    handler.setStream(stream)
    LOGGER.addHandler(handler)
    LOGGER.setLevel(logging.INFO)
    try:
        yield stream
    finally:
        LOGGER.removeHandler(handler)


def traceparent_of(response: httpx.Response) -> tuple[str, str, str, str]:
    version, trace_id, span_id, flags = response.headers["traceparent"].split("-")
    return version, trace_id, span_id, flags


def sampled(flags: str) -> bool:
    return bool(int(flags, 16) & 1)  # the other bits: W3C level 2's "random" flag, which the SDK sets


async def test_a_span_per_request_named_by_its_route(exporter: InMemorySpanExporter, logged: io.StringIO) -> None:
    async with client_of(exporter) as http:
        response = await http.get("/items/42")
    assert response.status_code == 200
    [span] = exporter.get_finished_spans()
    assert (span.name, span.kind, span.parent) == ("GET /items/{item_id}", SpanKind.SERVER, None)
    assert dict(span.attributes or {}) == {
        "http.request.method": "GET",
        "http.route": "/items/{item_id}",
        "http.response.status_code": 200,
        "url.path": "/items/42",
        "url.scheme": "http",
        "server.address": "testserver",  # httpx's ASGI transport gives no port for the default one
        "network.protocol.version": "1.1",
    }
    assert span.status.status_code is StatusCode.UNSET
    # The response names the span; the handler's log line carries its trace.
    version, trace_id, span_id, flags = traceparent_of(response)
    assert (version, trace_id, span_id) == ("00", f"{span.context.trace_id:032x}", f"{span.context.span_id:016x}")
    assert sampled(flags)
    assert f"[trace={span.context.trace_id:032x}] reading item 42" in logged.getvalue()
    # Nothing is current once the request is answered.
    assert not trace.get_current_span().get_span_context().is_valid


async def test_the_callers_trace_is_continued(exporter: InMemorySpanExporter) -> None:
    async with client_of(exporter) as http:
        response = await http.get("/items/7", headers={"traceparent": f"00-{CALLER_TRACE}-{CALLER_SPAN}-01"})
    [span] = exporter.get_finished_spans()
    assert span.parent is not None and span.parent.is_remote
    assert (f"{span.parent.trace_id:032x}", f"{span.parent.span_id:016x}") == (CALLER_TRACE, CALLER_SPAN)
    _version, trace_id, span_id, flags = traceparent_of(response)
    assert (trace_id, span_id) == (CALLER_TRACE, f"{span.context.span_id:016x}") and sampled(flags)


async def test_a_request_the_sampler_drops_records_nothing(exporter: InMemorySpanExporter) -> None:
    """The caller did not sample its trace (flags 00), so neither do we; the response still
    names the trace, unsampled. A new trace at ratio 0 is not sampled either."""
    async with client_of(exporter) as http:
        continued = await http.get("/items/7", headers={"traceparent": f"00-{CALLER_TRACE}-{CALLER_SPAN}-00"})
    async with client_of(exporter, ratio=0.0) as http:
        fresh = await http.get("/items/8")
    assert exporter.get_finished_spans() == ()
    assert traceparent_of(continued)[1] == CALLER_TRACE and not sampled(traceparent_of(continued)[3])
    assert traceparent_of(fresh)[1] != CALLER_TRACE and not sampled(traceparent_of(fresh)[3])


async def test_a_5xx_or_an_exception_is_an_error(exporter: InMemorySpanExporter) -> None:
    async with client_of(exporter) as http:
        assert (await http.get("/broken")).status_code == 503
        assert (await http.get("/failing")).status_code == 500
    unavailable, failed = exporter.get_finished_spans()
    assert unavailable.status.status_code is StatusCode.ERROR
    assert (unavailable.attributes or {})["error.type"] == "503"
    assert (unavailable.attributes or {})["http.response.status_code"] == 503
    assert failed.name == "GET /failing" and failed.status.status_code is StatusCode.ERROR
    assert (failed.attributes or {})["error.type"] == "RuntimeError"
    assert [event.name for event in failed.events] == ["exception"]


async def test_a_request_no_route_matched_is_named_by_its_method(exporter: InMemorySpanExporter) -> None:
    async with client_of(exporter) as http:
        assert (await http.get("/nowhere/12")).status_code == 404
    [span] = exporter.get_finished_spans()
    assert span.name == "GET" and "http.route" not in (span.attributes or {})
    assert (span.attributes or {})["url.path"] == "/nowhere/12"


async def test_requests_count_by_route_template(exporter: InMemorySpanExporter) -> None:
    labels = {"route": "/items/{item_id}", "method": "GET", "status": "200"}

    def count() -> float:
        return metrics.REGISTRY.get_sample_value("datawell_http_requests_total", labels) or 0.0

    before = count()
    async with client_of(exporter) as http:
        for item_id in (1, 2, 3):
            await http.get(f"/items/{item_id}")
    assert count() == before + 3


async def test_a_request_is_sampled_by_its_trace_id(exporter: InMemorySpanExporter, logged: io.StringIO) -> None:
    """At ratio 0.5 a request is sampled exactly when `TraceIdRatioBased` keeps the trace id
    its `traceparent` names (the id the decision was taken on is the span's); a dropped one
    records no span but answers as usual, names its unsampled trace in its log lines, and
    counts in the request series like any other."""
    labels = {"route": "/items/{item_id}", "method": "GET", "status": "200"}

    def count() -> float:
        return metrics.REGISTRY.get_sample_value("datawell_http_requests_total", labels) or 0.0

    before = count()
    kept = TraceIdRatioBased(0.5)
    async with client_of(exporter, ratio=0.5) as http:
        responses = [await http.get(f"/items/{item_id}") for item_id in range(40)]
    assert [r.status_code for r in responses] == [200] * 40 and count() == before + 40
    sampled_ids, dropped_ids = [], []
    for response in responses:
        _version, trace_id, span_id, flags = traceparent_of(response)
        assert kept.should_sample(None, int(trace_id, 16), "GET").decision.is_sampled() == sampled(flags)
        (sampled_ids if sampled(flags) else dropped_ids).append((trace_id, span_id, flags))
    assert sampled_ids and dropped_ids  # both, but for a chance of 2**-39
    spans = exporter.get_finished_spans()
    assert sorted((f"{s.context.trace_id:032x}", f"{s.context.span_id:016x}") for s in spans) == sorted(
        (trace_id, span_id) for trace_id, span_id, _flags in sampled_ids
    )
    assert all(s.name == "GET /items/{item_id}" for s in spans)
    assert {flags for _trace, _span, flags in dropped_ids} == {"02"}  # as the SDK flags its own
    for trace_id, _span, _flags in dropped_ids:
        assert f"[trace={trace_id}] reading item" in logged.getvalue()


async def test_the_spans_beneath_a_request_are_its_own(exporter: InMemorySpanExporter, logged: io.StringIO) -> None:
    """A span started beneath a request (as a run's) is a child of its span when the request
    is sampled: one whole trace. Beneath a dropped request it is never exported nor sampled as
    a new root, yet it carries the trace id the response and the log lines name."""
    async with client_of(exporter, ratio=0.5) as http:
        responses = [await http.get("/work") for _ in range(40)]
    spans = exporter.get_finished_spans()
    servers = {s.context.trace_id: s for s in spans if s.name == "GET /work"}
    inner = {s.context.trace_id: s for s in spans if s.name == "inner"}
    kept = [r for r in responses if sampled(traceparent_of(r)[3])]
    assert 0 < len(kept) < 40 and len(spans) == 2 * len(kept)  # both, but for a chance of 2**-39
    for response in responses:
        _version, trace_id, span_id, _flags = traceparent_of(response)
        assert response.text == trace_id  # the inner span's trace is the request's
        assert f"[trace={trace_id}] working" in logged.getvalue()
        if response in kept:
            server, child = servers[int(trace_id, 16)], inner[int(trace_id, 16)]
            assert f"{server.context.span_id:016x}" == span_id and server.parent is None
            assert child.parent is not None and child.parent.span_id == server.context.span_id
        else:
            assert int(trace_id, 16) not in servers and int(trace_id, 16) not in inner


async def test_a_dropped_request_drops_its_spans_whatever_the_providers_ratio(exporter: InMemorySpanExporter) -> None:
    """The request's decision holds beneath it even where the provider alone would sample
    every new trace; a caller's trace is still followed, sampled or not."""
    async with client_of(exporter, ratio=0.0, provider_ratio=1.0) as http:
        dropped = await http.get("/work")
        followed = await http.get("/work", headers={"traceparent": f"00-{CALLER_TRACE}-{CALLER_SPAN}-01"})
        unsampled = await http.get("/work", headers={"traceparent": f"00-{CALLER_TRACE}-{CALLER_SPAN}-00"})
    assert not sampled(traceparent_of(dropped)[3]) and dropped.text == traceparent_of(dropped)[1]
    assert (followed.text, unsampled.text) == (CALLER_TRACE, CALLER_TRACE)
    assert sampled(traceparent_of(followed)[3]) and not sampled(traceparent_of(unsampled)[3])
    server, child = sorted(exporter.get_finished_spans(), key=lambda s: s.name)
    assert (server.name, child.name) == ("GET /work", "inner")  # the followed request's, nothing else
    assert server.parent is not None and f"{server.parent.span_id:016x}" == CALLER_SPAN
    assert child.parent is not None and child.parent.span_id == server.context.span_id
    assert f"{child.context.trace_id:032x}" == CALLER_TRACE


async def test_metrics_without_traces_add_no_header() -> None:
    labels = {"route": "/broken", "method": "GET", "status": "503"}
    before = metrics.REGISTRY.get_sample_value("datawell_http_requests_total", labels) or 0.0
    app = Starlette(routes=[Route("/broken", broken)], middleware=[Middleware(RequestObserver)])
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://testserver") as http:
        response = await http.get("/broken")
    assert response.status_code == 503 and "traceparent" not in response.headers
    assert metrics.REGISTRY.get_sample_value("datawell_http_requests_total", labels) == before + 1
