"""The A2A routes, declared like every REST route so they share auth, errors and the OpenAPI
document: `GET /a2a` (public list), `GET /a2a/{agent}/.well-known/agent-card.json` (public
card) and `POST /a2a/{agent}` (bearer; JSON-RPC 2.0, SSE when streaming)."""

from __future__ import annotations

import hashlib
import json
from email.utils import formatdate
from typing import Any

from a2a.server.jsonrpc_models import JSONParseError
from a2a.server.request_handlers.response_helpers import build_error_response
from a2a.utils.errors import ContentTypeNotSupportedError
from pydantic_core import from_json
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from datawell.agents.cards import agent_card, agent_url, card_json, card_url
from datawell.agents.registry import AGENTS, agent_named
from datawell.agents.requests import a2a_error
from datawell.api.inputs import refuse_nul_in_json
from datawell.api.routing import Context, PathModel, Router
from datawell.api.urls import public_base_url
from datawell.client.models import Agent as AgentListItem
from datawell.errors import InvalidInput
from datawell.storage.tables import User

router = Router("a2a")

CARD_CACHE = "public, max-age=300"
# A card changes only with a new release, so it was last modified when this process started.
CARD_LAST_MODIFIED = formatdate(usegmt=True)
RPC_MEDIA_TYPES = {
    "application/json": "A JSON-RPC 2.0 response: `result` or `error` (A2A error codes -32001…-32009, JSON-RPC -32600…-32700)",
    "text/event-stream": "For SendStreamingMessage: SSE whose `data:` lines are JSON-RPC responses, each `result` holding one of `task`, `statusUpdate`, `artifactUpdate`, `message`",
}


class AgentPath(PathModel):
    agent: str


@router.get("/a2a", list[AgentListItem], public=True, slash=True)
async def list_agents(request: Request, ctx: Context) -> list[AgentListItem]:
    """List the A2A agents

    The agents served over A2A 1.0. Clients pick one from this list rather than hardcoding names."""
    base = public_base_url(request, ctx.services.settings)
    return [AgentListItem(name=s.name, url=agent_url(s, base), agent_card=card_url(s, base)) for s in AGENTS]


@router.get("/a2a/{agent}/.well-known/agent-card.json", public=True, errors=(404,), slash=True, params=AgentPath)
async def read_card(request: Request, ctx: Context, path: AgentPath) -> Response:
    """An agent's AgentCard

    The A2A 1.0 AgentCard of one agent (plus `preferredTransport`)."""
    spec = agent_named(path.agent)
    body = card_json(agent_card(spec, public_base_url(request, ctx.services.settings)))
    etag = 'W/"' + hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()[:32] + '"'
    headers = {"ETag": etag, "Cache-Control": CARD_CACHE, "Last-Modified": CARD_LAST_MODIFIED}
    if etag in request.headers.get("if-none-match", ""):
        return Response(status_code=304, headers=headers)
    return JSONResponse(body, headers=headers)


@router.post(
    "/a2a/{agent}",
    errors=(404,),
    slash=True,
    streams=RPC_MEDIA_TYPES,
    headers=(("A2A-Version", "Must be `1.0`; without it the call is treated as A2A 0.3 and refused (-32009)"),),
    params=AgentPath,
)
async def call_agent(request: Request, ctx: Context, user: User, path: AgentPath) -> Response:
    """Call an agent (A2A 1.0 JSON-RPC)

    JSON-RPC 2.0: SendMessage, SendStreamingMessage, GetTask, CancelTask, GetExtendedAgentCard, …
    The namespace goes in `params.message.metadata.namespace`. See docs/a2a.md."""
    spec = agent_named(path.agent)
    media_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if media_type != "application/json":
        error = ContentTypeNotSupportedError(
            f"send the JSON-RPC request as application/json (got {media_type or 'none'})"
        )
        return JSONResponse(build_error_response(await _request_id(request), error))
    # The SDK parses with the json module, whose RecursionError on a body nested thousands
    # deep would reach the client as -32603: parse it first with pydantic's depth-limited
    # parser (as REST bodies are), so such a body is a -32700 parse error like any bad JSON.
    raw = await request.body()
    try:
        from_json(raw)
    except ValueError as exc:
        return JSONResponse(build_error_response(None, JSONParseError(message=f"the body is not valid JSON: {exc}")))
    try:
        refuse_nul_in_json(raw)  # as REST refuses it: no store keeps a NUL, and no SQL should meet one
    except InvalidInput as exc:
        return JSONResponse(build_error_response(await _request_id(request), a2a_error(exc)))
    # The agents' cards and links start with it; the SDK's context builder reads it (`agents.server`).
    request.state.public_base_url = public_base_url(request, ctx.services.settings)
    return await ctx.agents.handle(spec.name, request)


async def _request_id(request: Request) -> Any:
    """The JSON-RPC id of a body sent with the wrong content type, when it can be read."""
    try:
        body = from_json(await request.body())
    except ValueError:
        return None
    request_id = body.get("id") if isinstance(body, dict) else None
    return request_id if isinstance(request_id, str | int) and not isinstance(request_id, bool) else None
