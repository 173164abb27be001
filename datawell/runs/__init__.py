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
  StepFinished, then AnswerDelta* (the answer once checked against the rows), AnswerReady, RunFinished; or
  RunFailed at any point after RunStarted.
- curator: CandidatesFound, LinksCurated; or RunFailed.

The app builds one `Runs` over its services and hands it to every request (the lifespan
state `runs`); tests hand it a subclass whose `*_events` yield canned events."""

from __future__ import annotations

import weakref
from collections.abc import AsyncGenerator
from contextlib import aclosing
from typing import Any, cast

from datawell.errors import InvalidInput, NotFound, QueryError, QueryRefused, SubError
from datawell.graphs.assistant.graph import build_graph as build_assistant_graph
from datawell.graphs.assistant.state import AssistantContext
from datawell.graphs.curator.graph import build_graph as build_curator_graph
from datawell.graphs.curator.state import CuratorContext, CuratorState
from datawell.graphs.events import GraphEvent, RunFinished, RunStarted
from datawell.graphs.nl2ql.graph import build_graph as build_query_graph
from datawell.graphs.nl2ql.state import QueryContext, QueryOutcome, QueryState
from datawell.graphs.prefix import prefix_key
from datawell.llm.models import Stage, StageChoices
from datawell.runs.deps import assistant_deps, curator_deps, graph_config, query_deps
from datawell.runs.requests import AskRequest, CurateRequest, Events, Run
from datawell.runs.streams import RUN_FAILED, ending_agent_run, ending_in_failure, recorded, scheduled
from datawell.scheduler import Priority, Ticket
from datawell.services import Services
from datawell.storage import agent_runs
from datawell.storage.access import Caller, NamespaceRef, Permission, require
from datawell.storage.datasets import DatasetRef, get_dataset, list_datasets
from datawell.storage.tables import Conversation, User, new_id, utcnow

__all__ = ["RUN_FAILED", "AskRequest", "CurateRequest", "Events", "Run", "Runs", "query_deps"]


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
        ticket = self._enter(request.user, self._prefix(request, "query"))
        return self._scheduled(ticket, recorded(self.services, run_id, "nl2ql", request, events, ticket), run_id=run_id)

    async def start_assistant(self, request: AskRequest) -> Run:
        self._check_question(request.question)
        caller = await self._caller(request)
        self._check_models(request.choices, "plan", "query", "answer")
        # before the conversation: a refused run leaves none
        ticket = self._enter(request.user, self._prefix(request, "plan"))
        try:
            conversation_id = await self._open_conversation(request)
            async with self.services.db.session() as session:
                record = await agent_runs.start(session, request.user, conversation_id, request.question)
        except BaseException:
            ticket.release()
            raise
        events = ending_agent_run(
            self.services,
            record.id,
            conversation_id,
            ending_in_failure(self.assistant_events(request, caller, conversation_id)),
        )
        return self._scheduled(
            ticket, recorded(self.services, record.id, "assistant", request, events, ticket), conversation_id, record.id
        )

    async def start_curator(self, request: CurateRequest) -> Run:
        await self._require(request.user, request.namespace, Permission.WRITE)
        self._check_models(request.choices, "curate")
        async with self.services.db.session() as session:
            datasets = await list_datasets(session, request.namespace)
            focus = await get_dataset(session, request.namespace, request.dataset) if request.dataset else None
        run_id = new_id()
        events = ending_in_failure(self.curator_events(request, datasets, focus))
        ticket = self._enter(request.user)
        return self._scheduled(
            ticket, recorded(self.services, run_id, "curator", request, events, ticket), run_id=run_id
        )

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

    def _prefix(self, request: AskRequest, stage: Stage) -> str | None:
        """The prompt prefix the scheduler places the run by; none when the request asks a
        hosted model for the run's first stage (a hosted model's slots keep no prompts)."""
        if request.choices.for_stage(stage).is_hosted():
            return None
        return prefix_key(self.services.prompts, request.namespace.id)

    def _enter(self, user: User, prefix: str | None = None) -> Ticket:
        return self.services.scheduler.enter(user.id, Priority.QUESTION, prefix)

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
