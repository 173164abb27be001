"""Every HTTP request: its span while traces are on and its metrics by route template (never
the raw path, whose ids would make a series per request), both kept by one middleware,
`RequestObserver`.

The span is ours, not the OpenTelemetry ASGI middleware's, whose per-request work cost 70-120
µs of CPU whether the request was sampled or not. A request the sampler drops costs about 1.5
µs here (no span: two ids and a header), one that is recorded the SDK's span and its export (docs/decisions.md, issue 30)."""

from __future__ import annotations

import time
from random import getrandbits

from opentelemetry import context, propagate, trace
from opentelemetry.context import Context
from opentelemetry.propagators.textmap import Getter
from opentelemetry.sdk.trace.sampling import TraceIdRatioBased
from opentelemetry.trace import Span, SpanKind, Status, StatusCode, Tracer
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from datawell.observability import metrics, tracing
from datawell.observability.tracing import ERROR_TYPE

# HTTP server span attributes, stable semantic conventions (opentelemetry-semantic-conventions
# 0.66b1: http_attributes, url_attributes, server_attributes, network_attributes).
HTTP_REQUEST_METHOD = "http.request.method"
HTTP_REQUEST_METHOD_ORIGINAL = "http.request.method_original"
HTTP_RESPONSE_STATUS_CODE = "http.response.status_code"
HTTP_ROUTE = "http.route"
URL_PATH = "url.path"
URL_SCHEME = "url.scheme"
SERVER_ADDRESS = "server.address"
SERVER_PORT = "server.port"
NETWORK_PROTOCOL_VERSION = "network.protocol.version"
LOW_64 = TraceIdRatioBased.TRACE_ID_LIMIT
KNOWN_METHODS = frozenset({"CONNECT", "DELETE", "GET", "HEAD", "OPTIONS", "PATCH", "POST", "PUT", "TRACE"})

Headers = list[tuple[bytes, bytes]]


class HeaderGetter(Getter[Headers]):
    """The propagators' view of an ASGI scope's headers (names are lower-case bytes)."""

    def get(self, carrier: Headers, key: str) -> list[str] | None:
        name = key.lower().encode("latin-1")
        return [value.decode("latin-1") for found, value in carrier if found == name] or None

    def keys(self, carrier: Headers) -> list[str]:
        return [name.decode("latin-1") for name, _ in carrier]


HEADERS = HeaderGetter()


class RequestObserver:
    """ASGI middleware: per HTTP request, its metrics (`counted`) and, with a `tracer`, its
    SERVER span, current for everything below it (the handler, the run it starts, the log
    lines). It sits inside `ConsoleCookies`, which hands on a copy of the scope, and outside
    everything else, so that the route Starlette's router leaves in the scope
    (`scope["route"]`, whose path is the template) is in the scope it holds.

    The span continues the caller's trace when the request carries `traceparent` (the global
    propagator: W3C Trace Context and baggage unless `OTEL_PROPAGATORS` says otherwise), and
    the response names it in its own `traceparent` header, so a client can find its trace. A
    request that starts a trace is sampled here, by its trace id at `ratio` (what the
    provider's `TraceIdRatioBased` decides on the same id, which `tracing.DrawnIds` hands
    it). A dropped one, nearly every request at a low ratio, gets no span and no context: its
    `traceparent` (trace and span ids drawn here, flags 02) is set in `tracing.DROPPED` for
    its time, which the log lines read for their ids and under which the provider's sampler
    drops every span started beneath it (`tracing.Dropped`), on the request's trace id. A
    caller's trace is the SDK's parent-based sampler's to follow. The span starts named by the method and is renamed by the route template once
    the router has chosen it; a request no route matched keeps the method."""

    def __init__(self, app: ASGIApp, tracer: Tracer | None = None, ratio: float = 1.0, counted: bool = True) -> None:
        self.app = app
        self.tracer = tracer
        self.bound = TraceIdRatioBased.get_bound_for_rate(ratio)
        self.counted = counted  # False: metrics are off
        # The headers the propagator reads: a request with none of them (most) skips it.
        self.propagated = frozenset(name.lower().encode("latin-1") for name in propagate.get_global_textmap().fields)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        span: Span | None = None
        traceparent: tuple[bytes, bytes] | None = None
        token = dropped = None
        if self.tracer is not None:
            parent = self.parent(scope["headers"])
            trace_id, header = self.drawn(parent)
            if header is not None:  # nearly every request at a low ratio: no span, no context
                traceparent = (b"traceparent", header)
                dropped = tracing.DROPPED.set(header)
            else:
                span, traceparent = self.start(self.tracer, scope, parent, trace_id)
                token = context.attach(trace.set_span_in_context(span, parent))
                if span.is_recording():
                    span.set_attributes(request_attributes(scope))
                else:  # a caller's unsampled trace: nothing more to do for it but the header
                    span = None
        status = 0

        async def sending(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                if traceparent is not None:
                    message["headers"] = [*message.get("headers", []), traceparent]
            await send(message)

        try:
            await self.app(scope, receive, sending)
        except Exception as error:
            if span is not None:
                span.record_exception(error)
                span.set_attribute(ERROR_TYPE, type(error).__qualname__)
                span.set_status(Status(StatusCode.ERROR, str(error)))
            raise
        finally:
            if token is not None:
                context.detach(token)
            elif dropped is not None:
                tracing.DROPPED.reset(dropped)
            route = getattr(scope.get("route"), "path", None)
            if span is not None:
                ended(span, scope["method"], route, status)
            if self.counted:  # no response started: the server answers 500
                seconds = time.perf_counter() - started
                metrics.http_request(route or metrics.UNMATCHED_ROUTE, scope["method"], status or 500, seconds)

    def parent(self, headers: Headers) -> Context | None:
        """The caller's context, when the request carries a header the propagator reads
        (most carry none: a loop over the names costs less than the propagator)."""
        for name, _ in headers:
            if name in self.propagated:
                return propagate.extract(headers, getter=HEADERS)
        return None

    def drawn(self, parent: Context | None) -> tuple[int, bytes | None]:
        """For a request that starts a trace, the trace id drawn for it and, when the sampler
        drops it, the `traceparent` that names it (its span id drawn with it); for one that
        continues a caller's trace, (0, None). The decision is `TraceIdRatioBased`'s on the
        drawn id: its low 64 bits under the ratio's bound."""
        if parent is not None and trace.get_current_span(parent).get_span_context().is_valid:
            return 0, None  # the caller's trace: the SDK's parent-based sampler follows it
        ids = getrandbits(192)  # the trace id's 128 bits, then the span id's 64
        if not (ids >> 64 and ids & LOW_64):  # an invalid (zero) id, once in 2**64 draws
            ids |= 1 << 64 | 1
        if (ids >> 64) & LOW_64 < self.bound:
            return ids >> 64, None
        hexed = ids.to_bytes(24).hex()
        return ids >> 64, f"00-{hexed[:32]}-{hexed[32:]}-02".encode()  # 02: random, not sampled

    def start(
        self, tracer: Tracer, scope: Scope, parent: Context | None, trace_id: int
    ) -> tuple[Span, tuple[bytes, bytes]]:
        """The request's span (on `trace_id` when it starts a trace) and the `traceparent`
        header that names it."""
        method = scope["method"]
        drawn = tracing.DRAWN_TRACE_ID.set(trace_id)
        try:
            span = tracer.start_span(method if method in KNOWN_METHODS else "HTTP", parent, SpanKind.SERVER)
        finally:
            tracing.DRAWN_TRACE_ID.reset(drawn)
        found = span.get_span_context()
        header = b"00-%032x-%016x-%02x" % (found.trace_id, found.span_id, found.trace_flags)
        return span, (b"traceparent", header)


def ended(span: Span, method: str, route: str | None, status: int) -> None:
    """A recorded request span, named by its route template (`GET /api/v1/runs/{runId}`) and
    ERROR on a 5xx, ends."""
    if route is not None:
        span.update_name(f"{method} {route}")
        span.set_attribute(HTTP_ROUTE, route)
    if status:
        span.set_attribute(HTTP_RESPONSE_STATUS_CODE, status)
        if status >= 500:
            span.set_attribute(ERROR_TYPE, str(status))
            span.set_status(StatusCode.ERROR)
    span.end()


def request_attributes(scope: Scope) -> dict[str, str | int]:
    method = scope["method"]
    found: dict[str, str | int] = {URL_PATH: scope["path"], URL_SCHEME: scope["scheme"]}
    if method in KNOWN_METHODS:
        found[HTTP_REQUEST_METHOD] = method
    else:
        found[HTTP_REQUEST_METHOD] = "_OTHER"
        found[HTTP_REQUEST_METHOD_ORIGINAL] = method
    server = scope.get("server")
    if server:  # the address the server listens on, not the Host header (no header scan)
        found[SERVER_ADDRESS] = server[0]
        if server[1] is not None:
            found[SERVER_PORT] = server[1]
    if "http_version" in scope:
        found[NETWORK_PROTOCOL_VERSION] = scope["http_version"]
    return found
