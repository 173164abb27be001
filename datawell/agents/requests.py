"""What an A2A message asks for: the question (first text part), the namespace
(`metadata.namespace`, required), model overrides (`metadata.model`, `metadata.provider`), the
conversation to continue (`contextId`, assistant only) and the output modes the client accepts.

Errors found here are request errors: they reach the client as JSON-RPC errors, before any
task exists."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from a2a.server.context import ServerCallContext
from a2a.types import Part, SendMessageRequest
from a2a.utils.errors import A2AError, ContentTypeNotSupportedError, InternalError, InvalidParamsError
from google.protobuf.json_format import MessageToDict

from datawell.errors import INVALID_PARAMS, Busy, DatawellError
from datawell.llm.models import StageChoices
from datawell.runs import AskRequest, Runs
from datawell.storage.access import namespace_named
from datawell.storage.tables import User

# Keys of ServerCallContext.state; `datawell.agents.server` fills the first two per HTTP request.
RUNS = "datawell.runs"
USER = "datawell.user"
PREPARED = "datawell.run"

DATA_MODES = frozenset({"data", "application/json"})


@dataclass(frozen=True)
class AgentRequest:
    ask: AskRequest
    data_parts: bool  # False: the client accepts text only, so rows are rendered as text


async def read_request(params: SendMessageRequest, context: ServerCallContext, *, conversations: bool) -> AgentRequest:
    """Reads the message. `conversations`: the agent continues the conversation named by
    `contextId` (the assistant); a message without one gets a new contextId here, which the
    SDK then gives the task, so the new conversation is stored under it."""
    runs: Runs = context.state[RUNS]
    user: User = context.state[USER]
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
    choices = StageChoices.named(_text(metadata, "model"), _text(metadata, "provider"))
    try:
        async with runs.services.db.session() as session:
            namespace = await namespace_named(session, owner, name)
    except DatawellError as exc:
        raise a2a_error(exc) from None
    modes = {mode.lower() for mode in params.configuration.accepted_output_modes}
    conversation_id = new_conversation_id = None
    if conversations and message.context_id:
        conversation_id = message.context_id
    elif conversations:
        new_conversation_id = message.context_id = str(uuid.uuid4())
    ask = AskRequest(
        user, namespace, question, choices, conversation_id=conversation_id, new_conversation_id=new_conversation_id
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
    """An error found before a run starts, as the JSON-RPC error of its row in
    `datawell.errors.ERRORS`; `data.errorCode` carries the Datawell code (FORBIDDEN, NOT_FOUND, …)."""
    mapping = exc.mapping
    error_class = InvalidParamsError if mapping.json_rpc == INVALID_PARAMS else InternalError
    data: dict[str, Any] = {"errorCode": mapping.code}
    if exc.sub_errors:
        data["subErrors"] = [{"code": s.code, "message": s.message} for s in exc.sub_errors]
    if isinstance(exc, Busy):
        data["retryAfterSeconds"] = exc.retry_after_seconds
    return error_class(exc.message, data=data)
