"""The MCP endpoint, declared like every REST route so it shares the bearer check, the error
bodies and the OpenAPI document; what it serves is `datawell.mcp` (see docs/mcp.md)."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

from datawell.api.routing import Context, Router
from datawell.storage.tables import User

router = Router("mcp")

MCP_MEDIA_TYPES = {
    "application/json": "A JSON-RPC 2.0 response (`result` or `error`), for requests that finish without progress",
    "text/event-stream": (
        "SSE whose `data:` lines are JSON-RPC messages: `notifications/progress` while a tool runs, then the response"
    ),
}


class Delegate(Response):
    """Hands the request, body unread, to an ASGI app that writes its own response."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.app(scope, receive, send)


@router.operation(
    "POST",
    "/mcp",
    summary="MCP over streamable HTTP",
    streams=MCP_MEDIA_TYPES,
    slash=True,
    headers=(
        ("MCP-Protocol-Version", "The MCP revision: 2025-11-25 (or older) after `initialize`, or 2026-07-28"),
        ("Accept", "Must accept both application/json and text/event-stream"),
    ),
)
async def call_mcp(request: Request, ctx: Context, user: User) -> Response:
    """The Model Context Protocol endpoint (JSON-RPC 2.0): `initialize`, `tools/list`, `tools/call`,
    `resources/list`, `resources/read`, … Stateless: no `Mcp-Session-Id`. See docs/mcp.md."""
    return Delegate(ctx.mcp.handle)
