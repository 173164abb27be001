"""AgentCards as SPEC.md describes them, with absolute URLs from the configured public base URL.

The card is served by our own route: SPEC requires `preferredTransport`, which is not a field
of the A2A 1.0 AgentCard message, so it is added to the JSON after serialisation."""

from __future__ import annotations

from typing import Any

from a2a.types import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    HTTPAuthSecurityScheme,
    SecurityRequirement,
    SecurityScheme,
    StringList,
)
from google.protobuf.json_format import MessageToDict

from datawell.agents.registry import AgentSpec

A2A_PATH = "/api/v1/a2a"
CARD_PATH = "/.well-known/agent-card.json"
CARD_VERSION = "1.0.0"
PROTOCOL_VERSION = "1.0"
TRANSPORT = "JSONRPC"
SECURITY_SCHEME = "bearer"
INPUT_MODES = ("text",)
OUTPUT_MODES = ("text", "data")


def agent_url(spec: AgentSpec, public_base_url: str) -> str:
    return f"{public_base_url.rstrip('/')}{A2A_PATH}/{spec.name}"


def card_url(spec: AgentSpec, public_base_url: str) -> str:
    return agent_url(spec, public_base_url) + CARD_PATH


def agent_card(spec: AgentSpec, public_base_url: str, *, extended: bool = False) -> AgentCard:
    """The public card; `extended` adds what GetExtendedAgentCard shows to signed-in callers:
    example questions and how to address a namespace."""
    description = spec.skill_description
    if extended:
        description += (
            " Put the namespace in `params.message.metadata.namespace` (`name` for your own, `owner/name` for "
            "one shared with you); `model` and `provider` there override the model."
        )
    return AgentCard(
        name=spec.name,
        description=spec.description,
        version=CARD_VERSION,
        capabilities=AgentCapabilities(streaming=True, push_notifications=False, extended_agent_card=True),
        default_input_modes=list(INPUT_MODES),
        default_output_modes=list(OUTPUT_MODES),
        skills=[
            AgentSkill(
                id=spec.name,
                name=spec.skill_name,
                description=description,
                tags=list(spec.tags),
                examples=list(spec.examples) if extended else [],
            )
        ],
        security_schemes={
            SECURITY_SCHEME: SecurityScheme(
                http_auth_security_scheme=HTTPAuthSecurityScheme(scheme="bearer", bearer_format="JWT")
            )
        },
        security_requirements=[SecurityRequirement(schemes={SECURITY_SCHEME: StringList(list=[])})],
        supported_interfaces=[
            AgentInterface(
                protocol_binding=TRANSPORT, url=agent_url(spec, public_base_url), protocol_version=PROTOCOL_VERSION
            )
        ],
    )


def card_json(card: AgentCard) -> dict[str, Any]:
    """proto3 JSON with empty lists printed (`[]`, not absent), plus `preferredTransport`."""
    body = MessageToDict(card, always_print_fields_with_no_presence=True)
    body["preferredTransport"] = TRANSPORT
    return body
