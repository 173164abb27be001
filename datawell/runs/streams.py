"""What wraps a run's event stream: its record (span, metrics, the run viewer's record), the
assistant's DataLinks agent run ended with it, an exception turned into a last `RunFailed`, and
the wait for a model-scheduler slot."""

from __future__ import annotations

import logging
from contextlib import aclosing

from datawell.client.run_records import RunRecord
from datawell.errors import DatawellError, InternalError
from datawell.graphs.events import RunFailed, RunQueued, RunResult
from datawell.graphs.memory import finished_turn
from datawell.observability import recorder as recording
from datawell.observability.recorder import RunRecorder
from datawell.runs.requests import AskRequest, CurateRequest, Events
from datawell.scheduler import Ticket
from datawell.services import Services
from datawell.storage import agent_runs, run_records
from datawell.storage.tables import RunRow

log = logging.getLogger(__name__)
RUN_FAILED = "the run failed; it has been logged"
# The record's fields the runs list filters and sorts on, kept as columns of its row.
LISTED_COLUMNS = {"id", "user_id", "namespace_id", "graph", "outcome", "started_at", "seconds"}


def summary(result: RunResult) -> str | None:
    """What a run answered, for its record: the answer, or the query and how many rows."""
    if result.answer_text() is not None:
        return result.answer_text()
    if result.rows is not None:
        return f"{len(result.rows.rows)} rows from: {result.rows.query}"
    if result.links is not None:
        return f"{len(result.links.links)} links"
    return None


async def ending_in_failure(events: Events) -> Events:
    """`events`, with an exception turned into a last RunFailed event (an unexpected one is
    logged and shown as an InternalError). Closing this closes `events`, which stops the graph."""
    async with aclosing(events):
        try:
            async for event in events:
                yield event
        except DatawellError as exc:
            yield RunFailed(error=exc)
        except Exception as exc:
            log.exception("graph run failed", exc_info=exc)
            internal = InternalError(RUN_FAILED)
            internal.__cause__ = exc
            yield RunFailed(error=internal)


async def scheduled(ticket: Ticket, events: Events) -> Events:
    """`events` once `ticket` holds a slot, after a `RunQueued` for each place it waited at;
    closing this (a client gone, a cancelled task) gives the slot or the place back at once."""
    try:
        async for position in ticket.positions():
            yield RunQueued(position=position)
        async with aclosing(events):
            async for event in events:
                yield event
    finally:
        ticket.release()


async def ending_agent_run(services: Services, run_id: str, conversation_id: str, events: Events) -> Events:
    """`events`, and the run's record ended with them: completed with the answer and its
    steps (the AutoRAG answer's shape) and the tokens the turn spent, or failed."""
    result = RunResult()
    try:
        async with aclosing(events):
            async for event in events:
                result.add(event)
                yield event
    finally:
        error = result.failure.message if result.failure is not None else None
        if error is None and result.answer is None:
            error = "the run was stopped before it answered"
        answer = None
        if error is None and result.answer is not None:
            steps = [
                {"instruction": s.instruction, "query": s.query, "reasoning": s.reasoning, "data": s.rows}
                for s in result.steps
            ]
            answer = {"response": result.answer.text, "steps": steps}
        turn = await finished_turn(services.memory, conversation_id, None) if answer else None
        async with services.db.session() as session:
            await agent_runs.end(session, run_id, result=answer, error=error, tokens=int((turn or {}).get("tokens", 0)))


async def recorded(
    services: Services,
    run_id: str,
    graph: str,
    request: AskRequest | CurateRequest,
    events: Events,
    ticket: Ticket | None = None,
) -> Events:
    """`events`, recorded: the run's span, metrics and record (saved when it ends), with the
    scheduler's decision for `ticket` (its slot and why) on the span; the prompt tokens its
    model calls found cached tell the scheduler how long its prefix is."""
    namespace = request.namespace
    question = (
        request.question if isinstance(request, AskRequest) else f"curate links of {request.dataset or namespace}"
    )
    recorder = RunRecorder(
        recording.new_record(
            run_id, graph, request.user.id, request.user.username, namespace.id, str(namespace), question
        )
    )
    recorder.start()
    if ticket is not None and ticket.placement is not None:
        recorder.scheduled(ticket.placement, ticket.waited_seconds)
    result = RunResult()
    outcome = "cancelled"  # until the stream ends: a reader that leaves stops the run
    try:
        async with aclosing(events):
            async for event in events:
                result.add(event)
                yield event
        outcome = result.failure.error_code if result.failure else "ok"
    finally:
        failure = result.failure.message if result.failure else None
        record = recorder.finish(outcome, failure, summary(result))
        cached = [call.cached_tokens for call in record.model_calls if call.cached_tokens > 0]
        if ticket is not None and ticket.prefix is not None and cached:
            services.scheduler.prefix_seen(ticket.prefix, min(cached))
        await save_record(services, record)


async def save_record(services: Services, record: RunRecord) -> None:
    row = RunRow(
        **record.model_dump(include=LISTED_COLUMNS),
        question=record.question[:200],
        record=record.model_dump(mode="json", by_alias=True),
    )
    try:
        async with services.db.session() as session:
            await run_records.save(session, row, services.settings.run_retention_days)
    except Exception:  # the answer stands without its record
        log.exception("run %s was not recorded", record.id)
