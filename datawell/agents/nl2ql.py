"""The nl2ql agent: question → query → rows, rendered as SPEC.md's nl2ql stream:
statusUpdate WORKING, artifactUpdate `generated-query` (text), artifactUpdate `result-data`
(data `{rows}`), statusUpdate COMPLETED; or a final statusUpdate FAILED with a message."""

from __future__ import annotations

from a2a.server.agent_execution import RequestContext
from a2a.server.events import EventQueue

from datawell.agents.executor import GraphExecutor, render
from datawell.runs import AskRequest, Run, Runs


class Nl2qlExecutor(GraphExecutor):
    async def start(self, runs: Runs, ask: AskRequest) -> Run:
        return await runs.start_nl2ql(ask)

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        prepared, updater = self.begin(context, event_queue)
        # The SDK wants a task before the first status update, and SPEC's nl2ql stream starts
        # with that update, not with a `task` event: so the task goes to the store directly.
        await self.task_store.save(self.submitted_task(context), context.call_context)
        await updater.start_work()
        await render(prepared.run, updater, prepared.data_parts)
