"""Every HTTP request: its span while traces are on (`RequestSpan`) and its metrics by route
template (`RequestMetrics`; never the raw path, whose ids would make a series per request).

The span is ours, not the OpenTelemetry ASGI middleware's, whose per-request work cost 70-120
µs of CPU whether the request was sampled or not; ours costs about 40 µs for a span that is
recorded and 15 µs for one the sampler drops (docs/decisions.md, issue 30)."""

from __future__ import annotations

import time

from opentelemetry import context, propagate, trace
from opentelemetry.propagators.textmap import Getter
from opentelemetry.trace import SpanKind, Status, StatusCode, Tracer
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from datawell.observability import metrics
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


class RequestSpan:
    """ASGI middleware, outermost: a SERVER span per HTTP request, current for everything
    below it (the other middleware, the handler, the run it starts, the log lines), continuing
    the caller's trace when the request carries `traceparent` (the global propagator: W3C
    Trace Context and baggage unless `OTEL_PROPAGATORS` says otherwise). The response names
    the span in its own `traceparent` header, so a client can find its trace.

    The span starts named by the method alone: the route is known only once the router has
    chosen it, inside `ConsoleCookies`' copy of the scope, so the innermost middleware
    (`RequestMetrics`) renames it (`name_request_span`)."""

    def __init__(self, app: ASGIApp, tracer: Tracer) -> None:
        self.app = app
        self.tracer = tracer
        # The headers the propagator reads: a request with none of them (most) skips it.
        self.propagated = frozenset(name.lower().encode("latin-1") for name in propagate.get_global_textmap().fields)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = scope["headers"]
        propagated = any(name in self.propagated for name, _ in headers)
        parent = propagate.extract(headers, getter=HEADERS) if propagated else None
        method = scope["method"]
        span = self.tracer.start_span(method if method in KNOWN_METHODS else "HTTP", parent, SpanKind.SERVER)
        recording = span.is_recording()
        if recording:  # a request that is not sampled builds no attributes
            span.set_attributes(request_attributes(scope))
        span_context = span.get_span_context()
        header = f"00-{span_context.trace_id:032x}-{span_context.span_id:016x}-{span_context.trace_flags:02x}"
        traceparent = (b"traceparent", header.encode())
        status = 0

        async def sending(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                message["headers"] = [*message.get("headers", []), traceparent]
            await send(message)

        token = context.attach(trace.set_span_in_context(span, parent))
        try:
            await self.app(scope, receive, sending)
        except Exception as error:
            if recording:
                span.record_exception(error)
                span.set_attribute(ERROR_TYPE, type(error).__qualname__)
                span.set_status(Status(StatusCode.ERROR, str(error)))
            raise
        finally:
            context.detach(token)
            if recording and status:
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


def name_request_span(scope: Scope) -> None:
    """Name the current request span by its route template (`GET /api/v1/runs/{runId}`), once
    the router has left the route in the scope; a request no route matched keeps the method."""
    span = trace.get_current_span()
    if span.is_recording():
        path = getattr(scope.get("route"), "path", None)
        if path is not None:
            span.update_name(f"{scope['method']} {path}")
            span.set_attribute(HTTP_ROUTE, path)


class RequestMetrics:
    """ASGI middleware, inside any that copies the scope: Starlette's router leaves the route
    it chose in the scope (`scope["route"]`), whose path is the template. It also names the
    request's span by it (`name_request_span`)."""

    def __init__(self, app: ASGIApp, counted: bool = True) -> None:
        self.app = app
        self.counted = counted  # False: metrics are off, only the span is named

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if not self.counted:
            try:
                await self.app(scope, receive, send)
            finally:
                name_request_span(scope)
            return
        started = time.perf_counter()
        status = 500

        async def sending(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, sending)
        finally:
            name_request_span(scope)
            route = getattr(scope.get("route"), "path", metrics.UNMATCHED_ROUTE)
            metrics.http_request(route, scope["method"], status, time.perf_counter() - started)
