"""What both agents' executors share: reading the prepared request, building parts, and
turning a failure into TASK_STATE_FAILED with a message instead of a raw exception."""

from __future__ import annotations

import json
import logging
from typing import Any, ClassVar

from a2a.helpers import new_data_part, new_text_part
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.context import ServerCallContext
from a2a.server.events import EventQueue
from a2a.server.tasks import TaskStore, TaskUpdater
from a2a.types import Message, Part, Role, SendMessageRequest
from a2a.utils.errors import UnsupportedOperationError

from datawell.agents.requests import PREPARED, AgentRequest, read_request
from datawell.errors import DatawellError

log = logging.getLogger(__name__)


class GraphExecutor(AgentExecutor):
    """An agent that runs one graph per message. `prepare` checks the request before the SDK
    creates a task (see `datawell.agents.server.AgentRequestHandler`); `execute` renders the
    graph's events as A2A events."""

    continues_conversations: ClassVar[bool] = False

    def __init__(self, task_store: TaskStore) -> None:
        self.task_store = task_store

    async def prepare(self, params: SendMessageRequest, context: ServerCallContext) -> AgentRequest:
        return await read_request(params, context, conversations=self.continues_conversations)

    def prepared(self, context: RequestContext) -> AgentRequest:
        request: AgentRequest = context.call_context.state[PREPARED]
        return request

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        raise UnsupportedOperationError("Datawell agents do not cancel tasks")

    async def fail(self, updater: TaskUpdater, exc: Exception) -> None:
        """Ends the task FAILED with a message a client can show; internals stay in the log."""
        if isinstance(exc, DatawellError):
            await updater.failed(failure_message(updater, exc.error_code, exc.message))
            return
        log.error("agent run failed", exc_info=exc)
        await updater.failed(failure_message(updater, "INTERNAL_ERROR", "the run failed; it has been logged"))


def failure_message(updater: TaskUpdater, code: str, text: str) -> Message:
    return updater.new_agent_message([new_text_part(text)], metadata={"errorCode": code})


def agent_message(updater: TaskUpdater, message_id: str, parts: list[Part]) -> Message:
    return Message(
        role=Role.ROLE_AGENT,
        message_id=message_id,
        task_id=updater.task_id,
        context_id=updater.context_id,
        parts=parts,
    )


def rows_parts(rows: list[dict[str, Any]], data_parts: bool) -> list[Part]:
    """Rows as a data part `{rows}`, or as text for clients that accept text only."""
    if data_parts:
        return [new_data_part({"rows": jsonable(rows)})]
    return [new_text_part(rows_text(rows))]


def rows_text(rows: list[dict[str, Any]]) -> str:
    """One JSON object per line, so a text-only client still gets every field of every row."""
    lines = [json.dumps(row, ensure_ascii=False, default=str) for row in rows]
    return "\n".join([f"{len(rows)} row{'' if len(rows) == 1 else 's'}", *lines])


def jsonable(value: Any) -> Any:
    """Rows may hold dates or decimals; a protobuf Value takes JSON types only."""
    return json.loads(json.dumps(value, default=str))
