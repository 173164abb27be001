"""The MCP endpoint, declared like every REST route so it shares the bearer check, the error
bodies and the OpenAPI document; what it serves is `datawell.mcp` (see docs/mcp.md).

In front of the SDK's transport it checks what the MCP transport rules (2025-11-25) ask of a
server: a present `Origin` must be one of the service's own or a configured one (else 403,
against DNS rebinding: a browser page whose name resolves to this host), and the body must
be JSON. Every error the transport answers, its own or the SDK's (a plain-text 400, a bare
JSON-RPC error), leaves as one body that is both an ErrorResponse (`error_code`, `message`,
…, from the row of `datawell.errors.ERRORS`, with its HTTP status) and a JSON-RPC error
(`jsonrpc`, `id`, `error` with `data.errorCode`)."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlsplit

from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from datawell.api.errors import error_body
from datawell.api.inputs import refuse_nul_in_json
from datawell.api.routing import Context, Router
from datawell.config import Settings
from datawell.errors import (
    DatawellError,
    Forbidden,
    InternalError,
    InvalidInput,
    MethodNotAllowed,
    NotFound,
    UnsupportedMediaType,
)
from datawell.mcp import agents, datasets
from datawell.storage.tables import User

router = Router("mcp")

RPC_ANSWER = {
    "type": "object",
    "description": "A JSON-RPC 2.0 response (`result` or `error`), or a `notifications/progress` message",
    "required": ["jsonrpc"],
    "properties": {
        "jsonrpc": {"type": "string", "enum": ["2.0"]},
        "id": {"type": ["string", "integer", "null"]},
        "result": {"type": "object"},
        "error": {
            "type": "object",
            "required": ["code", "message"],
            "properties": {"code": {"type": "integer"}, "message": {"type": "string"}},
        },
        "method": {"type": "string"},
        "params": {"type": "object"},
    },
}
MCP_MEDIA_TYPES: dict[str, str | dict[str, Any]] = {
    "application/json": RPC_ANSWER,
    # In OpenAPI 3.1 an event stream's schema describes each event.
    "text/event-stream": {
        "type": "object",
        "description": "One SSE event: `notifications/progress` while a tool runs, then the response",
        "required": ["data"],
        "properties": {
            "event": {"type": "string", "enum": ["message"]},
            "id": {"type": "string"},
            "data": {"type": "string", "contentMediaType": "application/json", "contentSchema": RPC_ANSWER},
        },
    },
}
LOOPBACK = ("127.0.0.1", "localhost", "::1", "[::1]")
DEFAULT_PORTS = {"http": 80, "https": 443}
# What the SDK's own error statuses are, when its body does not say (a plain-text 400 is its
# answer to a wrong Content-Type, checked before it here; kept for any other).
SDK_STATUS_ERRORS: dict[int, type[DatawellError]] = {
    404: NotFound,
    405: MethodNotAllowed,
    406: InvalidInput,
    415: UnsupportedMediaType,
}


PAGE = {"type": "object", "properties": {"cursor": {"type": "string"}}, "additionalProperties": False}
NO_PARAMS = {"type": "object", "properties": {}, "additionalProperties": False}
INITIALIZE = {
    "type": "object",
    "required": ["protocolVersion", "capabilities", "clientInfo"],
    "properties": {
        "protocolVersion": {"type": "string", "enum": list(HANDSHAKE_PROTOCOL_VERSIONS)},
        "capabilities": {"type": "object"},
        "clientInfo": {
            "type": "object",
            "required": ["name", "version"],
            "properties": {"name": {"type": "string"}, "version": {"type": "string"}},
        },
    },
}
READ = {"type": "object", "required": ["uri"], "properties": {"uri": {"type": "string"}}}


def rpc_request(method: str, params: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "title": method,
        "required": ["jsonrpc", "id", "method", *(["params"] if "required" in params else [])],
        "properties": {
            "jsonrpc": {"type": "string", "enum": ["2.0"]},
            "id": {"type": ["string", "integer"]},
            "method": {"type": "string", "enum": [method]},
            "params": params,
        },
        "additionalProperties": False,
    }


def message_schema() -> dict[str, Any]:
    """The body: one JSON-RPC 2.0 message of the methods Datawell's MCP server answers, a
    `tools/call` per tool with that tool's input schema, or a notification (answered 202).
    A request's own errors (an unknown method or tool, arguments a tool refuses) are JSON-RPC
    errors or error results in a 200 answer, as the protocol has it; a body that is not a
    JSON-RPC message is a 422."""
    calls = [
        rpc_request(
            "tools/call",
            {
                "type": "object",
                "required": ["name", "arguments"],
                "properties": {
                    "name": {"type": "string", "enum": [tool.name]},
                    "arguments": tool.arguments.model_json_schema(by_alias=True),
                },
            },
        )
        for tool in (*datasets.TOOLS, *agents.TOOLS)
    ]
    notification = {
        "type": "object",
        "title": "notification",
        "required": ["jsonrpc", "method"],
        "properties": {
            "jsonrpc": {"type": "string", "enum": ["2.0"]},
            "method": {"type": "string", "enum": ["notifications/initialized"]},
        },
        "additionalProperties": False,
    }
    return {
        "oneOf": [
            rpc_request("initialize", INITIALIZE),
            rpc_request("ping", NO_PARAMS),
            rpc_request("tools/list", PAGE),
            *calls,
            rpc_request("resources/list", PAGE),
            rpc_request("resources/templates/list", PAGE),
            rpc_request("resources/read", READ),
            notification,
        ]
    }


def origin_key(url: str) -> tuple[str, str, int] | None:
    """An origin as (scheme, host, port), default ports filled in; None when it is not one."""
    try:
        parts = urlsplit(url.strip().lower())
        port = parts.port
    except ValueError:
        return None
    if parts.scheme not in DEFAULT_PORTS or not parts.hostname:
        return None
    return parts.scheme, parts.hostname, port or DEFAULT_PORTS[parts.scheme]


def own_origins(scope: Scope, settings: Settings) -> set[tuple[str, str, int]]:
    """The origins this service is reached at: the address it listens on (and, on loopback,
    the other loopback names), its public address, and the configured ones. Never the request's
    Host header: under DNS rebinding it names the attacker's domain."""
    configured = (origin_key(url) for url in (settings.public_base_url or "", *settings.mcp_allowed_origins))
    origins = {key for key in configured if key is not None}
    server = scope.get("server")
    if server and server[1] is not None:
        scheme = scope.get("scheme", "http")
        host, port = str(server[0]), int(server[1])
        for name in LOOPBACK if host in LOOPBACK else (host,):
            origins.add((scheme, name.strip("[]"), port))
    return origins


def origin_allowed(request: Request, settings: Settings) -> bool:
    origin = request.headers.get("origin")
    if origin is None:  # not a browser: nothing to rebind
        return True
    key = origin_key(origin)
    return key is not None and key in own_origins(request.scope, settings)


def rpc_error_response(exc: DatawellError, request_id: Any = None, rpc_code: int | None = None) -> JSONResponse:
    """An error as an ErrorResponse and a JSON-RPC error in one body, with the row's status."""
    rpc = {"code": rpc_code or exc.mapping.json_rpc, "message": exc.message, "data": {"errorCode": exc.error_code}}
    body = {"jsonrpc": "2.0", "id": request_id, "error": rpc, **error_body(exc)}
    return JSONResponse(body, status_code=exc.mapping.http_status)


def sdk_error(status: int, body: bytes) -> JSONResponse:
    """The SDK's error response, rewritten: its JSON-RPC error (and code) kept, the rest from the table."""
    try:
        sent = json.loads(body)
    except ValueError:
        sent = None
    if isinstance(sent, dict) and isinstance(sent.get("error"), dict):
        rpc = sent["error"]
        exc: DatawellError = InvalidInput(str(rpc.get("message", "the MCP request is invalid")))
        return rpc_error_response(exc, sent.get("id"), rpc.get("code") if isinstance(rpc.get("code"), int) else None)
    text = body.decode("utf-8", "replace").strip() or f"the MCP transport answered {status}"
    kind = SDK_STATUS_ERRORS.get(status, InvalidInput if status < 500 else InternalError)
    return rpc_error_response(kind(text))


class Delegate(Response):
    """Hands the request, with the body already read, to an ASGI app that writes its own
    response; an error response it writes is rewritten by `sdk_error`."""

    def __init__(self, app: ASGIApp, body: bytes) -> None:
        self.app = app
        self.body = body

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        failed: dict[str, Any] = {}
        unread = [{"type": "http.request", "body": self.body, "more_body": False}]

        async def replay() -> Message:
            return unread.pop() if unread else await receive()

        async def send_or_hold(message: Message) -> None:
            if message["type"] == "http.response.start" and message["status"] >= 400:
                failed.update(status=message["status"], body=b"")
                return
            if failed and message["type"] == "http.response.body":
                failed["body"] += message.get("body", b"")
                if not message.get("more_body", False):
                    await sdk_error(failed["status"], failed["body"])(scope, receive, send)
                return
            await send(message)

        await self.app(scope, replay, send_or_hold)


@router.post(
    "/mcp",
    streams=MCP_MEDIA_TYPES,
    slash=True,
    errors=(403, 415, 422),
    body_schema=message_schema(),
    bodiless=((202, "Accepted: the body was a notification (or a response), which has no answer"),),
    header_schemas={"MCP-Protocol-Version": {"type": "string", "enum": list(HANDSHAKE_PROTOCOL_VERSIONS)}},
    headers=(
        (
            "MCP-Protocol-Version",
            "The MCP revision negotiated by `initialize`. (2026-07-28 is served too, with its per-request "
            "`_meta` envelope in every request's params, which this document does not spell out.)",
        ),
        ("Accept", "Must accept both application/json and text/event-stream"),
        ("Origin", "Sent by browsers: must be the service's own origin or one in DATAWELL_MCP_ALLOWED_ORIGINS"),
    ),
)
async def call_mcp(request: Request, ctx: Context, user: User) -> Response:
    """MCP over streamable HTTP

    The Model Context Protocol endpoint (JSON-RPC 2.0): `initialize`, `tools/list`, `tools/call`,
    `resources/list`, `resources/read`, … Stateless: no `Mcp-Session-Id`. See docs/mcp.md.
    Errors of the transport are ErrorResponses that are JSON-RPC errors too."""
    if not origin_allowed(request, ctx.services.settings):
        origin = request.headers["origin"]
        return rpc_error_response(
            Forbidden(f"requests from origin {origin!r} may not call the MCP endpoint (DATAWELL_MCP_ALLOWED_ORIGINS)")
        )
    media_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if media_type != "application/json":
        return rpc_error_response(
            UnsupportedMediaType(f"MCP messages are JSON-RPC: send Content-Type application/json, not {media_type!r}")
        )
    raw = await request.body()
    try:
        refuse_nul_in_json(raw)  # as REST refuses it: no store keeps a NUL, and no SQL should meet one
    except InvalidInput as exc:
        body = json.loads(raw)
        request_id = body.get("id") if isinstance(body, dict) else None
        return rpc_error_response(exc, request_id if isinstance(request_id, str | int) else None)
    return Delegate(ctx.mcp.handle, raw)
