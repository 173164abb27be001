"""What both agents' executors share: starting the run before the SDK creates a task, and the
one rendering of graph events as A2A events."""

from __future__ import annotations

import json
import logging
from contextlib import aclosing
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, ClassVar

from a2a.helpers import new_data_part, new_text_part
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.context import ServerCallContext
from a2a.server.events import EventQueue
from a2a.server.tasks import TaskStore, TaskUpdater
from a2a.types import Message, Part, Role, SendMessageRequest, Task, TaskState, TaskStatus

from datawell.agents.requests import PREPARED, RUNS, a2a_error, read_request
from datawell.errors import DatawellError, InternalError
from datawell.graphs.events import (
    AnswerReady,
    PlanReady,
    QueryGenerated,
    RowsReady,
    RunFailed,
    RunQueued,
    StepFinished,
    StepStarted,
)
from datawell.runs import RUN_FAILED, AskRequest, Run, Runs

log = logging.getLogger(__name__)

GENERATED_QUERY = "generated-query"
RESULT_DATA = "result-data"
ANSWER = "answer"


@dataclass(frozen=True)
class PreparedRun:
    run: Run
    data_parts: bool  # False: the client accepts text only, so rows are rendered as text


class GraphExecutor(AgentExecutor):
    """An agent that runs one graph per message. `prepare` reads the message and starts the
    run before the SDK creates a task (see `datawell.agents.server.AgentRequestHandler`), so a
    failed check is a JSON-RPC error and leaves no task; `execute` renders the run's events."""

    continues_conversations: ClassVar[bool] = False

    def __init__(self, task_store: TaskStore) -> None:
        self.task_store = task_store

    async def start(self, runs: Runs, ask: AskRequest) -> Run:
        raise NotImplementedError

    async def prepare(self, params: SendMessageRequest, context: ServerCallContext) -> PreparedRun:
        request = await read_request(params, context, conversations=self.continues_conversations)
        try:
            run = await self.start(context.state[RUNS], request.ask)
        except DatawellError as exc:
            raise a2a_error(exc) from None
        except Exception as exc:
            log.error("%s run failed before it started", type(self).__name__, exc_info=exc)
            raise a2a_error(InternalError(RUN_FAILED)) from None
        return PreparedRun(run=run, data_parts=request.data_parts)

    def prepared(self, context: RequestContext) -> PreparedRun:
        prepared: PreparedRun = context.call_context.state[PREPARED]
        return prepared

    def begin(self, context: RequestContext, event_queue: EventQueue) -> tuple[PreparedRun, TaskUpdater]:
        """What `execute` works with: the run `prepare` started, and the updater of the task."""
        assert context.task_id and context.context_id and context.message
        return self.prepared(context), TaskUpdater(event_queue, context.task_id, context.context_id)

    @staticmethod
    def submitted_task(context: RequestContext) -> Task:
        """The request's task, SUBMITTED, with empty artifacts and history, as SPEC.md's assistant
        stream starts (the caller already holds its message; reads of the task later carry it)."""
        assert context.task_id and context.context_id
        task = Task(id=context.task_id, context_id=context.context_id)
        task.status.CopyFrom(TaskStatus(state=TaskState.TASK_STATE_SUBMITTED))
        task.status.timestamp.FromDatetime(datetime.now(UTC))
        return task

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        """CancelTask of a running task: the task ends CANCELED. The SDK then cancels the
        task's `execute`, which closes the run's stream: the graph stops and its model slot
        (or place in the queue) is free at once."""
        assert context.task_id and context.context_id
        await TaskUpdater(event_queue, context.task_id, context.context_id).cancel()


def rewritten(model_query: str, changes: list[dict[str, str]]) -> dict[str, object]:
    """Issue 47, beside SPEC's artifact fields: the query as written and each rewrite rule of
    the service that changed it ({rule, before, after, reason})."""
    return {"modelQuery": model_query, "changes": changes}


async def render(run: Run, updater: TaskUpdater, data_parts: bool) -> None:
    """The run's events as A2A events: artifacts and WORKING updates, then COMPLETED, or FAILED
    with a message a client can show when the run failed."""
    async with aclosing(run.events()) as events:
        async for event in events:
            match event:
                case RunQueued():
                    await updater.start_work(queued_message(updater, event.position))
                case QueryGenerated():
                    await updater.add_artifact(
                        [new_text_part(event.query)],
                        artifact_id=GENERATED_QUERY,
                        name=GENERATED_QUERY,
                        metadata=rewritten(event.model_query, event.changes),
                    )
                case RowsReady():
                    await updater.add_artifact(
                        rows_parts(event.rows, data_parts),
                        artifact_id=RESULT_DATA,
                        name=RESULT_DATA,
                        metadata={"truncated": True} if event.truncated else None,
                    )
                case PlanReady():
                    await updater.start_work(
                        agent_message(updater, f"{updater.task_id}-plan", plan_parts(event, data_parts))
                    )
                case StepStarted():
                    await updater.start_work(
                        agent_message(
                            updater, f"{updater.task_id}-step-{event.index}", [new_text_part(event.instruction)]
                        )
                    )
                case StepFinished():
                    metadata: dict[str, object] = {
                        "index": event.index,
                        "instruction": event.instruction,
                        "reasoning": event.reasoning,
                    }
                    if event.error:
                        metadata["error"] = event.error
                    if event.model_query:  # a data step
                        metadata |= rewritten(event.model_query, event.changes)
                    await updater.add_artifact(
                        [new_text_part(event.query), *rows_parts(event.rows, data_parts)],
                        artifact_id=f"step-{event.index}",
                        name=f"step-{event.index}",
                        metadata=metadata,
                    )
                case AnswerReady():
                    await updater.add_artifact([new_text_part(event.text)], artifact_id=ANSWER, name=ANSWER)
                case RunFailed():
                    await updater.failed(failure_message(updater, event.error))
                    return
    await updater.complete()


def failure_message(updater: TaskUpdater, error: DatawellError) -> Message:
    return updater.new_agent_message([new_text_part(error.message)], metadata={"errorCode": error.error_code})


def agent_message(updater: TaskUpdater, message_id: str, parts: list[Part]) -> Message:
    return Message(
        role=Role.ROLE_AGENT,
        message_id=message_id,
        task_id=updater.task_id,
        context_id=updater.context_id,
        parts=parts,
    )


def queued_message(updater: TaskUpdater, position: int) -> Message:
    """The run waits for a model slot: its place (1 = next), as text and as `metadata.queuePosition`."""
    message = agent_message(
        updater,
        f"{updater.task_id}-queued-{position}",
        [new_text_part(f"waiting for the model: number {position} in the queue")],
    )
    message.metadata.update({"queuePosition": position})
    return message


def plan_parts(plan: PlanReady, data_parts: bool) -> list[Part]:
    if data_parts:
        return [new_text_part(plan.text), new_data_part({"steps": jsonable(plan.steps)})]
    numbered = "\n".join(f"{i}. {step}" for i, step in enumerate(plan.steps, 1))
    return [new_text_part(f"{plan.text}\n\n{numbered}" if plan.text else numbered)]


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
