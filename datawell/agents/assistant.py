"""The assistant agent: plan → a query per step → answer, rendered as SPEC.md's assistant
stream: task SUBMITTED, statusUpdate WORKING, statusUpdate WORKING with the plan (message id
`…-plan`), per step a statusUpdate WORKING with its instruction (`…-step-N`) and artifactUpdate
`step-N`, artifactUpdate `answer`, statusUpdate COMPLETED; or a final statusUpdate FAILED.

The A2A contextId is the conversation id: a message with a contextId continues that
conversation (the caller's own, as on REST), one without starts a conversation under a new
contextId (`datawell.agents.requests.read_request` picks it)."""

from __future__ import annotations

import logging

from a2a.server.agent_execution import RequestContext
from a2a.server.events import EventQueue

from datawell.agents.executor import GraphExecutor, failure_message, render
from datawell.errors import InternalError
from datawell.runs import AskRequest, Run, Runs

log = logging.getLogger(__name__)


class AssistantExecutor(GraphExecutor):
    continues_conversations = True

    async def start(self, runs: Runs, ask: AskRequest) -> Run:
        return await runs.start_assistant(ask)

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        prepared, updater = self.begin(context, event_queue)
        await event_queue.enqueue_event(self.submitted_task(context))
        await updater.start_work()
        if prepared.run.conversation_id != context.context_id:
            # The client could not continue a conversation stored under another id.
            log.error(
                "run conversation %s is not the task context %s", prepared.run.conversation_id, context.context_id
            )
            await prepared.run.events().aclose()
            await updater.failed(failure_message(updater, InternalError("the conversation could not be started")))
            return
        await render(prepared.run, updater, prepared.data_parts)
