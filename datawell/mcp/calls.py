"""What every tool shares: the caller, how a tool is declared, and how a namespace argument
names a namespace."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from mcp_types import CallToolResult, Tool, ToolAnnotations
from pydantic import Field

from datawell.errors import InvalidInput, SubError
from datawell.mcp.results import WireModel
from datawell.runs import Runs
from datawell.services import Services
from datawell.storage.access import NamespaceRef, Permission, authorize
from datawell.storage.tables import User

NAMESPACE_HELP = "The namespace: `name` for one of yours, `owner/name` for one shared with you"

Progress = Callable[[float, float | None, str | None], Awaitable[None]]


@dataclass(frozen=True)
class Call:
    """One tool call: the services and graph runs, the authenticated caller, and where
    progress goes (a no-op when the client asked for none)."""

    services: Services
    runs: Runs
    user: User
    progress: Progress


@dataclass(frozen=True)
class ToolSpec:
    """A tool as MCP lists it, and the function that answers it. `arguments` validates the
    call; `output` is the schema of the structured content."""

    name: str
    title: str
    description: str
    arguments: type[WireModel]
    output: type[WireModel]
    handler: Callable[[Call, Any], Awaitable[CallToolResult]]
    # Every tool only reads; the agents are not idempotent (a model answers) and the
    # assistant writes a conversation turn.
    idempotent: bool = True

    def listing(self) -> Tool:
        return Tool(
            name=self.name,
            title=self.title,
            description=self.description,
            input_schema=self.arguments.model_json_schema(by_alias=True),
            output_schema=self.output.model_json_schema(by_alias=True, mode="serialization"),
            annotations=ToolAnnotations(
                title=self.title,
                read_only_hint=True,
                destructive_hint=False,
                idempotent_hint=self.idempotent,
                open_world_hint=False,
            ),
        )


class NamespaceArguments(WireModel):
    namespace: str = Field(min_length=1, description=NAMESPACE_HELP)


class ModelArguments(NamespaceArguments):
    model: str | None = Field(None, description="The model to use, as litellm names it (default: the service's)")
    provider: str | None = Field(None, description="The model's provider, when `model` does not name it")


def namespace_coordinate(text: str, user: User) -> tuple[str, str]:
    owner, slash, name = text.strip().rpartition("/")
    if slash and (not owner or not name or "/" in owner):
        raise InvalidInput(
            "the namespace is malformed",
            sub_errors=[SubError("invalid_namespace", f"namespace: {text!r} must be `name` or `owner/name`")],
        )
    return owner or user.username, name


async def readable_namespace(call: Call, text: str) -> NamespaceRef:
    """The namespace the argument names, if the caller may read it (NotFound, Forbidden)."""
    owner, name = namespace_coordinate(text, call.user)
    async with call.services.db.session() as session:
        return await authorize(session, call.user, owner, name, Permission.READ)
