"""The nl2ql agent: question → query → rows, rendered as SPEC.md's nl2ql stream:
statusUpdate WORKING, artifactUpdate `generated-query` (text), artifactUpdate `result-data`
(data `{rows}`), statusUpdate COMPLETED; or a final statusUpdate FAILED with a message."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import aclosing
from datetime import UTC, datetime
from typing import cast

from a2a.helpers import new_text_part
from a2a.server.agent_execution import RequestContext
from a2a.server.events import EventQueue
from a2a.server.tasks import TaskUpdater
from a2a.types import Task, TaskState, TaskStatus

from datawell.agents.executor import GraphExecutor, failure_message, rows_parts
from datawell.agents.requests import caller
from datawell.graphs import runs
from datawell.graphs.events import GraphEvent, QueryGenerated, RowsReady, RunFailed

GENERATED_QUERY = "generated-query"
RESULT_DATA = "result-data"


class Nl2qlExecutor(GraphExecutor):
    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        assert context.task_id and context.context_id and context.message
        request = self.prepared(context)
        services, _ = caller(context.call_context)
        updater = TaskUpdater(event_queue, context.task_id, context.context_id)
        # The SDK wants a task before the first status update, and SPEC's nl2ql stream starts
        # with that update, not with a `task` event: so the task goes to the store directly.
        task = Task(id=context.task_id, context_id=context.context_id, history=[context.message])
        task.status.CopyFrom(TaskStatus(state=TaskState.TASK_STATE_SUBMITTED))
        task.status.timestamp.FromDatetime(datetime.now(UTC))
        await self.task_store.save(task, context.call_context)
        await updater.start_work()
        query_sent = False
        try:
            run = cast(AsyncGenerator[GraphEvent, None], runs.run_nl2ql(services, request.ask))
            async with aclosing(run) as events:
                async for event in events:
                    match event:
                        case QueryGenerated():
                            await updater.add_artifact(
                                [new_text_part(event.query)], artifact_id=GENERATED_QUERY, name=GENERATED_QUERY
                            )
                            query_sent = True
                        case RowsReady():
                            if not query_sent:
                                await updater.add_artifact(
                                    [new_text_part(event.query)], artifact_id=GENERATED_QUERY, name=GENERATED_QUERY
                                )
                                query_sent = True
                            await updater.add_artifact(
                                rows_parts(event.rows, request.data_parts),
                                artifact_id=RESULT_DATA,
                                name=RESULT_DATA,
                                metadata={"truncated": True} if event.truncated else None,
                            )
                        case RunFailed():
                            await updater.failed(failure_message(updater, event.error_code, event.message))
                            return
        except Exception as exc:
            await self.fail(updater, exc)
            return
        await updater.complete()
