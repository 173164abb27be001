"""Every HTTP request: its metrics by route template (never the raw path, whose ids would
make a series per request) and, when traces are on, a `traceparent` response header naming
the request's span (W3C Trace Context), so a client can find its trace."""

from __future__ import annotations

import time

from opentelemetry import trace
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from datawell.observability import metrics


class RequestMetrics:
    """ASGI middleware, inside any that copies the scope: Starlette's router leaves the route
    it chose in the scope (`scope["route"]`), whose path is the template."""

    def __init__(self, app: ASGIApp, counted: bool = True) -> None:
        self.app = app
        self.counted = counted  # False: metrics are off, only the `traceparent` header is added

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500

        async def sending(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                context = trace.get_current_span().get_span_context()
                if context.is_valid:
                    header = f"00-{context.trace_id:032x}-{context.span_id:016x}-{context.trace_flags:02x}"
                    message["headers"] = [*message.get("headers", []), (b"traceparent", header.encode())]
            await send(message)

        try:
            await self.app(scope, receive, sending)
        finally:
            if self.counted:
                route = getattr(scope.get("route"), "path", metrics.UNMATCHED_ROUTE)
                metrics.http_request(route, scope["method"], status, time.perf_counter() - started)
