"""Starting a graph run: the one way the REST API, the A2A agents, the CLI and the evals run
the graphs.

    run = await runs.start_assistant(request)   # every check happens here, or it raises
    async for event in run.events():           # only streams; never raises
        ...

`Runs` has one `start_*` per graph. Each checks everything a run needs before it returns
(the caller's access to the namespace, once; a model for every stage the graph uses; the
conversation is the caller's; the dataset exists) and raises a `DatawellError` when a check fails, so a surface answers that as a plain
request error. The returned `Run`'s `events()` then only streams the graph's events
(`datawell.graphs.events`): a failure during the run is its last event, `RunFailed`, which
keeps the exception; nothing is raised. Closing the stream (a client gone) stops the graph.

Every run takes a ticket of the model scheduler (`datawell.scheduler`) as its last check, so
a full queue is a `Busy` error before anything streams. A run that must wait for a slot
first streams `RunQueued(position)` each time its place changes, then the events below; a
run that gets a slot at once streams exactly the events below. The slot is held until the
stream ends or is closed.

Event order:
- nl2ql: QueryGenerated, RowsReady; or RunFailed.
- assistant: RunStarted(conversation_id), PlanReady, then per step StepStarted and
  StepFinished, then AnswerDelta* (when the model streams), AnswerReady, RunFinished; or
  RunFailed at any point after RunStarted.
- curator: CandidatesFound, LinksCurated; or RunFailed.

The app builds one `Runs` over its services and hands it to every request (the lifespan
state `runs`); tests hand it a subclass whose `*_events` yield canned events."""

from __future__ import annotations

import logging
import weakref
from collections.abc import AsyncGenerator
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import Any, cast

from langchain_core.runnables import RunnableConfig

from datawell.errors import DatawellError, InternalError, InvalidInput, NotFound, QueryError, QueryRefused, SubError
from datawell.graphs.assistant.graph import build_graph as build_assistant_graph
from datawell.graphs.assistant.nodes import AssistantDeps, Budgets
from datawell.graphs.assistant.state import AssistantContext, CallerContext
from datawell.graphs.curator.graph import build_graph as build_curator_graph
from datawell.graphs.curator.state import CuratorContext, CuratorDeps, CuratorState
from datawell.graphs.events import GraphEvent, RunFailed, RunFinished, RunQueued, RunResult, RunStarted
from datawell.graphs.memory import finished_turn
from datawell.graphs.nl2ql.graph import build_graph as build_query_graph
from datawell.graphs.nl2ql.nodes import QueryDeps
from datawell.graphs.nl2ql.state import QueryContext, QueryOutcome, QueryState
from datawell.graphs.view import NamespaceView
from datawell.llm.models import Stage, StageChoices
from datawell.observability import recorder as recording
from datawell.observability.recorder import RunRecorder
from datawell.observability.records import RunRecord
from datawell.scheduler import Priority, Ticket
from datawell.services import Services
from datawell.storage import agent_runs, run_records
from datawell.storage.access import Caller, NamespaceRef, Permission, require
from datawell.storage.datasets import DatasetRef, get_dataset, list_datasets
from datawell.storage.tables import Conversation, RunRow, User, new_id, utcnow
from datawell.tools.pruning import PruneLimits, SchemaPruner
from datawell.tools.web import HttpWebSearch

log = logging.getLogger(__name__)

DIALECT_NAMES = {"sqlite": "SQLite", "postgresql": "PostgreSQL"}
RUN_FAILED = "the run failed; it has been logged"

Events = AsyncGenerator[GraphEvent, None]


@dataclass(frozen=True)
class AskRequest:
    """A question for nl2ql or the assistant."""

    user: User
    namespace: NamespaceRef
    question: str
    choices: StageChoices = field(default_factory=StageChoices)
    conversation_id: str | None = None  # assistant only: continue this conversation
    # assistant only, when conversation_id is None: start the new conversation under this id
    # instead of a generated one (A2A: the task's contextId is the conversation id).
    new_conversation_id: str | None = None
    helper_prompt: str | None = None
    web_search: bool | None = None  # None: the deployment default
    caller_context: CallerContext | None = None


@dataclass(frozen=True)
class CurateRequest:
    """Link curation for a namespace, or for the links from and to one of its datasets."""

    user: User
    namespace: NamespaceRef
    dataset: str | None = None
    activate: bool = False  # the selected links join the ontology; else they are suggestions
    choices: StageChoices = field(default_factory=StageChoices)


@dataclass(frozen=True)
class Run:
    """A run whose checks passed. `events()` streams it once (an async generator; closing it
    stops the graph)."""

    stream: Events
    conversation_id: str | None = None  # the assistant's conversation
    # Its record in the run viewer (`GET /api/v1/runs/{id}`); the assistant's is also its
    # DataLinks SDK run (`storage.agent_runs`), under the same id.
    run_id: str | None = None

    def events(self) -> Events:
        return self.stream

    async def result(self) -> RunResult:
        """The whole run, folded (for answers that are not streamed)."""
        result = RunResult()
        async with aclosing(self.events()) as events:
            async for event in events:
                result.add(event)
        return result


class Runs:
    """Starts the graphs' runs over one deployment's services."""

    def __init__(self, services: Services) -> None:
        self.services = services

    async def start_nl2ql(self, request: AskRequest) -> Run:
        self._check_question(request.question)
        caller = await self._caller(request)
        self._check_models(request.choices, "query")
        run_id = new_id()
        events = ending_in_failure(self.nl2ql_events(request, caller))
        return self._scheduled(
            self._enter(request.user), self.recorded(run_id, "nl2ql", request, events), run_id=run_id
        )

    async def start_assistant(self, request: AskRequest) -> Run:
        self._check_question(request.question)
        caller = await self._caller(request)
        self._check_models(request.choices, "plan", "query", "answer")
        ticket = self._enter(request.user)  # before the conversation: a refused run leaves none
        try:
            conversation_id = await self._open_conversation(request)
            async with self.services.db.session() as session:
                record = await agent_runs.start(session, request.user, conversation_id, request.question)
        except BaseException:
            ticket.release()
            raise
        events = self.ending_agent_run(
            record.id, conversation_id, ending_in_failure(self.assistant_events(request, caller, conversation_id))
        )
        return self._scheduled(
            ticket, self.recorded(record.id, "assistant", request, events), conversation_id, record.id
        )

    async def ending_agent_run(self, run_id: str, conversation_id: str, events: Events) -> Events:
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
            turn = await finished_turn(self.services.memory, conversation_id, None) if answer else None
            async with self.services.db.session() as session:
                await agent_runs.end(
                    session, run_id, result=answer, error=error, tokens=int((turn or {}).get("tokens", 0))
                )

    async def start_curator(self, request: CurateRequest) -> Run:
        await self._require(request.user, request.namespace, Permission.WRITE)
        self._check_models(request.choices, "curate")
        async with self.services.db.session() as session:
            datasets = await list_datasets(session, request.namespace)
            focus = await get_dataset(session, request.namespace, request.dataset) if request.dataset else None
        run_id = new_id()
        events = ending_in_failure(self.curator_events(request, datasets, focus))
        return self._scheduled(
            self._enter(request.user), self.recorded(run_id, "curator", request, events), run_id=run_id
        )

    async def recorded(self, run_id: str, graph: str, request: AskRequest | CurateRequest, events: Events) -> Events:
        """`events`, recorded: the run's span, metrics and record (saved when it ends)."""
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
            await self._save(recorder.finish(outcome, failure, summary(result)))

    async def _save(self, record: RunRecord) -> None:
        row = RunRow(
            id=record.id,
            user_id=record.user_id,
            namespace_id=record.namespace_id,
            graph=record.graph,
            outcome=record.outcome,
            started_at=record.started_at,
            seconds=record.seconds,
            question=record.question[:200],
            record=record.model_dump(mode="json"),
        )
        try:
            async with self.services.db.session() as session:
                await run_records.save(session, row, self.services.settings.run_retention_days)
        except Exception:  # the answer stands without its record
            log.exception("run %s was not recorded", record.id)

    async def nl2ql_events(self, request: AskRequest, caller: Caller) -> Events:
        graph = build_query_graph(query_deps(self.services))
        context = QueryContext(
            caller=caller,
            namespace=request.namespace,
            choices=request.choices,
            helper_prompt=request.helper_prompt or "",
        )
        final = QueryState()
        stream = cast(
            AsyncGenerator[tuple[str, Any], None],
            graph.astream(
                {"question": request.question}, graph_config(), context=context, stream_mode=["custom", "values"]
            ),
        )
        async with aclosing(stream):
            async for mode, chunk in stream:
                if mode == "custom":
                    yield cast(GraphEvent, chunk)
                else:
                    final = cast(QueryState, chunk)
        outcome = QueryOutcome.of(final)
        if outcome.refusal:
            raise QueryRefused(f"the datasets cannot answer this: {outcome.refusal}")
        if outcome.error:
            raise QueryError(outcome.error)

    async def assistant_events(self, request: AskRequest, caller: Caller, conversation_id: str) -> Events:
        yield RunStarted(conversation_id=conversation_id)
        deps = assistant_deps(self.services)
        graph = build_assistant_graph(deps, await self.services.memory.saver())
        context = AssistantContext(
            caller=caller,
            namespace=request.namespace,
            choices=request.choices,
            helper_prompt=request.helper_prompt or "",
            caller_context=request.caller_context,
            web_search=deps.web is not None and request.web_search is not False,
        )
        # durability="exit": a conversation keeps only turns that finished; a failed turn
        # leaves no trace for the next one to build on.
        events = cast(
            Events,
            graph.astream(
                {"question": request.question},
                {**graph_config(), "configurable": {"thread_id": conversation_id}},
                context=context,
                stream_mode="custom",
                durability="exit",
            ),
        )
        async with aclosing(events):
            async for event in events:
                yield event
        async with self.services.db.session() as session:
            conversation = await session.get(Conversation, conversation_id)
            if conversation is not None:
                conversation.updated_at = utcnow()
        yield RunFinished()

    async def curator_events(
        self, request: CurateRequest, datasets: list[DatasetRef], focus: DatasetRef | None
    ) -> Events:
        graph = build_curator_graph(curator_deps(self.services))
        context = CuratorContext(
            user=request.user, namespace=request.namespace, choices=request.choices, activate=request.activate
        )
        events = cast(
            Events,
            graph.astream(
                CuratorState(datasets=datasets, focus=focus), graph_config(), context=context, stream_mode="custom"
            ),
        )
        async with aclosing(events):
            async for event in events:
                yield event

    def _enter(self, user: User) -> Ticket:
        return self.services.scheduler.enter(user.id, Priority.QUESTION)

    @staticmethod
    def _scheduled(
        ticket: Ticket, events: Events, conversation_id: str | None = None, run_id: str | None = None
    ) -> Run:
        stream = scheduled(ticket, events)
        # A run dropped before its stream was started never runs the stream's `finally`:
        # its ticket goes back when the stream is collected.
        weakref.finalize(stream, ticket.release).atexit = False
        return Run(stream, conversation_id, run_id)

    async def _caller(self, request: AskRequest) -> Caller:
        """The asking user's access, read once for the whole run: 403 unless they may read the namespace."""
        async with self.services.db.read() as session:
            caller = await Caller.of(session, request.user)
        caller.require_read(request.namespace)
        return caller

    async def _require(self, user: User, namespace: NamespaceRef, wanted: Permission) -> None:
        async with self.services.db.session() as session:
            await require(session, user, namespace, wanted)

    def _check_question(self, question: str) -> None:
        most = self.services.settings.max_question_chars
        if len(question) > most:
            text = (
                f"the question is {len(question):,} characters long; the limit is {most:,} (setting max_question_chars)"
            )
            raise InvalidInput(text, sub_errors=[SubError("question_too_long", text)])

    def _check_models(self, choices: StageChoices, *stages: Stage) -> None:
        for stage in stages:
            self.services.models.check(stage, choices)

    async def _open_conversation(self, request: AskRequest) -> str:
        """The conversation to run in: the caller's own to continue, or a new one."""
        async with self.services.db.session() as session:
            if request.conversation_id is None:
                conversation = Conversation(
                    id=request.new_conversation_id or new_id(),
                    user_id=request.user.id,
                    namespace_id=request.namespace.id,
                    title=request.question[:200],
                )
                session.add(conversation)
                return conversation.id
            found = await session.get(Conversation, request.conversation_id)
            # Another user's conversation is reported exactly like a missing one.
            if found is None or found.user_id != request.user.id:
                raise NotFound(f"conversation {request.conversation_id} does not exist")
            return found.id


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


def graph_config() -> RunnableConfig:
    """A graph run's config: the current run's recorder hears its nodes and model calls."""
    recorder = recording.current()
    return {"callbacks": [recorder.callbacks()]} if recorder is not None else {}


def query_deps(services: Services) -> QueryDeps:
    s = services
    return QueryDeps(
        tools=s.query_tools,
        models=s.models,
        prompts=s.prompts,
        view=NamespaceView(
            s.query_tools,
            pruner=SchemaPruner(
                s.embedder,
                PruneLimits(
                    s.settings.schema_prune_tables, s.settings.schema_prune_columns, s.settings.schema_prune_keep
                ),
            ),
            examples=s.examples,
            few_shot=s.settings.query_few_shot,
        ),
        max_attempts=s.settings.query_max_attempts,
        dialect=DIALECT_NAMES.get(s.rows.dialect, s.rows.dialect),
        name_columns=s.settings.query_name_columns,
        match_literals=s.settings.query_match_literals,
        coverage=s.embedder if s.settings.query_refuse_uncovered else None,
        candidates=s.settings.query_candidates,
        candidate_temperature=s.settings.query_candidate_temperature,
    )


def assistant_deps(services: Services) -> AssistantDeps:
    settings = services.settings
    return AssistantDeps(
        query=query_deps(services),
        budgets=Budgets(
            max_rows_per_step=settings.max_rows_per_step,
            max_tokens_per_run=settings.max_tokens_per_run,
        ),
        web=HttpWebSearch(settings.web_search_url, settings.web_search_timeout_seconds)
        if settings.web_search_url
        else None,
        web_results=settings.web_search_results,
    )


def curator_deps(services: Services) -> CuratorDeps:
    s = services
    return CuratorDeps(db=s.db, rows=s.rows, vectors=s.vectors, embedder=s.embedder, models=s.models, prompts=s.prompts)
