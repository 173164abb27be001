"""How a client reaches Datawell's agents, used by the A2A tests: discover the agents from
`GET /api/v1/a2a` (never by hardcoded name), fetch each card, register the token under every
security scheme the card requires, and talk JSON-RPC through a2a-sdk's client, or raw."""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from typing import Any

import httpx
from a2a.client import ClientCallContext, ClientConfig, ClientFactory
from a2a.client.auth import AuthInterceptor, InMemoryContextCredentialStore
from a2a.client.card_resolver import parse_agent_card
from a2a.client.client import Client
from a2a.types import AgentCard, Message, Part, Role, SendMessageRequest, StreamResponse
from google.protobuf.json_format import MessageToDict

SESSION = "test-session"


@dataclass
class Agent:
    name: str
    url: str
    card_url: str
    card: AgentCard
    card_json: dict[str, Any]


async def discover(http: httpx.AsyncClient) -> dict[str, Agent]:
    listing = await http.get("/api/v1/a2a")
    assert listing.status_code == 200
    agents = {}
    for item in listing.json():
        card_response = await http.get(item["agentCard"])
        assert card_response.status_code == 200
        agents[item["name"]] = Agent(
            item["name"], item["url"], item["agentCard"], parse_agent_card(card_response.json()), card_response.json()
        )
    return agents


async def sdk_client(http: httpx.AsyncClient, agent: Agent, token: str | None, *, streaming: bool = True) -> Client:
    credentials = InMemoryContextCredentialStore()
    if token is not None:
        for requirement in agent.card.security_requirements:
            for scheme in requirement.schemes:
                await credentials.set_credentials(SESSION, scheme, token)
    factory = ClientFactory(ClientConfig(streaming=streaming, httpx_client=http))
    return factory.create(agent.card, interceptors=[AuthInterceptor(credentials)])


def context() -> ClientCallContext:
    return ClientCallContext(state={"sessionId": SESSION})


def message(
    text: str, metadata: dict[str, Any] | None = None, *, context_id: str = "", output_modes: tuple[str, ...] = ()
) -> SendMessageRequest:
    request = SendMessageRequest(
        message=Message(
            message_id=str(uuid.uuid4()),
            role=Role.ROLE_USER,
            parts=[Part(text=text)],
            context_id=context_id,
        )
    )
    if metadata:
        request.message.metadata.update(metadata)
    request.configuration.accepted_output_modes.extend(output_modes)
    return request


async def send(client: Client, request: SendMessageRequest) -> list[dict[str, Any]]:
    """Every StreamResponse of one call, as proto3 JSON dicts (wrapper key -> object)."""
    return [MessageToDict(event) async for event in _events(client, request)]


async def _events(client: Client, request: SendMessageRequest) -> Any:
    event: StreamResponse
    async for event in client.send_message(request, context=context()):
        yield event


def rpc_body(method: str, params: dict[str, Any], request_id: str = "req-1") -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}


def wire_message(text: str, metadata: dict[str, Any] | None = None, **fields: Any) -> dict[str, Any]:
    body = {"messageId": str(uuid.uuid4()), "role": "ROLE_USER", "parts": [{"text": text}], **fields}
    if metadata is not None:
        body["metadata"] = metadata
    return body


def sse_data(body: str) -> list[dict[str, Any]]:
    """The JSON of each SSE `data:` line, in order."""
    return [json.loads(line[len("data:") :]) for line in body.splitlines() if line.startswith("data:")]
