"""What an A2A message asks for: the question (first text part), the namespace
(`metadata.namespace`, required), model overrides (`metadata.model`, `metadata.provider`), the
conversation to continue (`contextId`, assistant only) and the output modes the client accepts.

Errors found here are request errors: they reach the client as JSON-RPC errors, before any
task exists."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from a2a.server.context import ServerCallContext
from a2a.types import Part, SendMessageRequest
from a2a.utils.errors import A2AError, ContentTypeNotSupportedError, InvalidParamsError
from google.protobuf.json_format import MessageToDict

from datawell.errors import DatawellError
from datawell.graphs.runs import AskRequest
from datawell.llm.models import ModelChoice, StageChoices
from datawell.services import Services
from datawell.storage.access import Permission, authorize
from datawell.storage.tables import User

# Keys of ServerCallContext.state; `datawell.agents.server` fills the first two per HTTP request.
SERVICES = "datawell.services"
USER = "datawell.user"
PREPARED = "datawell.request"

DATA_MODES = frozenset({"data", "application/json"})


@dataclass(frozen=True)
class AgentRequest:
    ask: AskRequest
    data_parts: bool  # False: the client accepts text only, so rows are rendered as text


def caller(context: ServerCallContext) -> tuple[Services, User]:
    return context.state[SERVICES], context.state[USER]


async def read_request(params: SendMessageRequest, context: ServerCallContext, *, conversations: bool) -> AgentRequest:
    """Checks the message and the caller's access. `conversations`: the agent continues the
    conversation named by `contextId` (the assistant)."""
    services, user = caller(context)
    message = params.message
    metadata: dict[str, Any] = MessageToDict(message.metadata) if message.HasField("metadata") else {}
    if message.parts and not any(part.HasField("text") for part in message.parts):
        # Files, URLs and data are not something the agents read (their cards say text in).
        kinds = ", ".join(sorted({_kind(part) for part in message.parts}))
        raise ContentTypeNotSupportedError(
            f"the agents read text parts only (got {kinds}): send the question as params.message.parts[0].text"
        )
    question = next((part.text for part in message.parts if part.HasField("text") and part.text.strip()), None)
    if question is None:
        raise InvalidParamsError("the message has no text part: send the question as params.message.parts[0].text")
    owner, name = _namespace(metadata.get("namespace"), user)
    choice = ModelChoice(_text(metadata, "model"), _text(metadata, "provider"))
    try:
        async with services.db.session() as session:
            namespace = await authorize(session, user, owner, name, Permission.READ)
    except DatawellError as exc:
        raise a2a_error(exc) from None
    modes = {mode.lower() for mode in params.configuration.accepted_output_modes}
    ask = AskRequest(
        user=user,
        namespace=namespace,
        question=question,
        choices=StageChoices(default=choice),
        conversation_id=(message.context_id or None) if conversations else None,
    )
    return AgentRequest(ask=ask, data_parts=not modes or bool(modes & DATA_MODES))


def _kind(part: Part) -> str:
    kind = part.WhichOneof("content") or "empty"
    return f"{kind} ({part.media_type})" if part.media_type else kind


def _namespace(value: Any, user: User) -> tuple[str, str]:
    if not isinstance(value, str) or not value.strip():
        raise InvalidParamsError(
            "params.message.metadata.namespace is required: the namespace to query, as `name` "
            "(one of yours) or `owner/name`"
        )
    owner, slash, name = value.strip().rpartition("/")
    if slash and (not owner or not name or "/" in owner):
        raise InvalidParamsError(f"params.message.metadata.namespace {value!r} must be `name` or `owner/name`")
    return owner or user.username, name


def _text(metadata: dict[str, Any], key: str) -> str | None:
    value = metadata.get(key)
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise InvalidParamsError(f"params.message.metadata.{key} must be a string")
    return value


def a2a_error(exc: DatawellError) -> A2AError:
    """A request-level Datawell error as a JSON-RPC invalid-params error; `data` carries the
    Datawell error code (FORBIDDEN, NOT_FOUND, VALIDATION_ERROR, ...)."""
    return InvalidParamsError(exc.message, data={"errorCode": exc.error_code})
