"""The assistant agent: plan → a query per step → answer, rendered as SPEC.md's assistant
stream: task SUBMITTED, statusUpdate WORKING, statusUpdate WORKING with the plan (message id
`…-plan`), per step a statusUpdate WORKING with its instruction (`…-step-N`) and artifactUpdate
`step-N`, artifactUpdate `answer`, statusUpdate COMPLETED; or a final statusUpdate FAILED.

The A2A contextId is the conversation id: a message with a contextId continues that
conversation (the caller's own, as on REST), one without starts a conversation under the
contextId the SDK assigned."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import AsyncGenerator
from contextlib import aclosing
from datetime import UTC, datetime
from typing import cast

from a2a.helpers import new_data_part, new_text_part
from a2a.server.agent_execution import RequestContext
from a2a.server.events import EventQueue
from a2a.server.tasks import TaskUpdater
from a2a.types import Part, Task, TaskState, TaskStatus
from a2a.utils.errors import InternalError

from datawell.agents.executor import GraphExecutor, agent_message, failure_message, jsonable, rows_parts
from datawell.agents.requests import AgentRequest, a2a_error, caller
from datawell.errors import DatawellError
from datawell.graphs import runs
from datawell.graphs.events import (
    AnswerReady,
    GraphEvent,
    PlanReady,
    RunFailed,
    RunFinished,
    RunStarted,
    StepFinished,
    StepStarted,
)

log = logging.getLogger(__name__)

ANSWER = "answer"


class AssistantExecutor(GraphExecutor):
    continues_conversations = True

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        assert context.task_id and context.context_id and context.message
        request = self.prepared(context)
        ask = request.ask
        if ask.conversation_id is None:
            ask = dataclasses.replace(ask, new_conversation_id=context.context_id)
        services, _ = caller(context.call_context)
        updater = TaskUpdater(event_queue, context.task_id, context.context_id)
        events = cast(AsyncGenerator[GraphEvent, None], runs.run_assistant(services, ask))
        async with aclosing(events):
            try:
                first = await anext(events)
            except DatawellError as exc:
                # Raised before the run starts (a conversation that is not the caller's):
                # a request error, answered as a JSON-RPC error rather than a task.
                raise a2a_error(exc) from None
            except Exception as exc:
                log.error("assistant run failed before it started", exc_info=exc)
                raise InternalError("the run failed; it has been logged") from None
            # The task's history starts with the caller's message, as nl2ql's does.
            task = Task(id=context.task_id, context_id=context.context_id, history=[context.message])
            task.status.CopyFrom(TaskStatus(state=TaskState.TASK_STATE_SUBMITTED))
            task.status.timestamp.FromDatetime(datetime.now(UTC))
            await event_queue.enqueue_event(task)
            await updater.start_work()
            try:
                await self._render(first, events, updater, request)
            except Exception as exc:
                await self.fail(updater, exc)

    async def _render(
        self,
        first: GraphEvent,
        events: AsyncGenerator[GraphEvent, None],
        updater: TaskUpdater,
        request: AgentRequest,
    ) -> None:
        event: GraphEvent | None = first
        while event is not None:
            match event:
                case RunStarted() if event.conversation_id != updater.context_id:
                    log.error(
                        "run conversation %s is not the task context %s", event.conversation_id, updater.context_id
                    )
                    await updater.failed(
                        failure_message(updater, "INTERNAL_ERROR", "the conversation could not be started")
                    )
                    return
                case PlanReady():
                    await updater.start_work(
                        agent_message(updater, f"{updater.task_id}-plan", plan_parts(event, request.data_parts))
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
                    await updater.add_artifact(
                        [new_text_part(event.query), *rows_parts(event.rows, request.data_parts)],
                        artifact_id=f"step-{event.index}",
                        name=f"step-{event.index}",
                        metadata=metadata,
                    )
                case AnswerReady():
                    await updater.add_artifact([new_text_part(event.text)], artifact_id=ANSWER, name=ANSWER)
                case RunFinished():
                    await updater.complete()
                    return
                case RunFailed():
                    await updater.failed(failure_message(updater, event.error_code, event.message))
                    return
            event = await anext(events, None)
        # A run that ends without RunFinished has still produced everything it will.
        await updater.complete()


def plan_parts(plan: PlanReady, data_parts: bool) -> list[Part]:
    if data_parts:
        return [new_text_part(plan.text), new_data_part({"steps": jsonable(plan.steps)})]
    numbered = "\n".join(f"{i}. {step}" for i, step in enumerate(plan.steps, 1))
    return [new_text_part(f"{plan.text}\n\n{numbered}" if plan.text else numbered)]
