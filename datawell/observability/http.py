"""Every HTTP request: its metrics by route template (never the raw path, whose ids would
make a series per request) and, when traces are on, a `traceparent` response header naming
the request's span (W3C Trace Context), so a client can find its trace."""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any

from opentelemetry import trace
from starlette.routing import BaseRoute, Mount, Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from datawell.observability import metrics


def route_templates(routes: Iterable[BaseRoute], prefix: str = "") -> dict[Any, str]:
    """Each endpoint's path template (the first route that names it); a mount's whole subtree
    counts under its prefix."""
    found: dict[Any, str] = {}
    for route in routes:
        if isinstance(route, Route):
            found.setdefault(route.endpoint, prefix + route.path)
        elif isinstance(route, Mount):
            found.setdefault(route.app, prefix + route.path + "/{path}")
    return found


class RequestMetrics:
    """ASGI middleware; give it the app's routes (their templates are looked up by endpoint,
    which Starlette's router leaves in the scope)."""

    def __init__(self, app: ASGIApp, routes: Iterable[BaseRoute]) -> None:
        self.app = app
        self.templates = route_templates(routes)

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
            route = self.templates.get(scope.get("endpoint"), metrics.UNMATCHED_ROUTE)
            metrics.http_request(route, scope["method"], status, time.perf_counter() - started)
