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
from collections.abc import AsyncGenerator
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import Any, cast

from datawell.errors import DatawellError, InternalError, NotFound, QueryError, QueryRefused
from datawell.graphs.assistant.graph import build_graph as build_assistant_graph
from datawell.graphs.assistant.nodes import AssistantDeps, Budgets
from datawell.graphs.assistant.state import AssistantContext, CallerContext
from datawell.graphs.curator.graph import build_graph as build_curator_graph
from datawell.graphs.curator.state import CuratorContext, CuratorDeps, CuratorState
from datawell.graphs.events import GraphEvent, RunFailed, RunFinished, RunResult, RunStarted
from datawell.graphs.nl2ql.graph import build_graph as build_query_graph
from datawell.graphs.nl2ql.nodes import QueryDeps
from datawell.graphs.nl2ql.state import QueryContext, QueryOutcome, QueryState
from datawell.graphs.view import NamespaceView
from datawell.llm.models import Stage, StageChoices
from datawell.services import Services
from datawell.storage.access import Caller, NamespaceRef, Permission, require
from datawell.storage.datasets import DatasetRef, get_dataset, list_datasets
from datawell.storage.tables import Conversation, User, new_id, utcnow
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
        caller = await self._caller(request)
        self._check_models(request.choices, "query")
        return Run(ending_in_failure(self.nl2ql_events(request, caller)))

    async def start_assistant(self, request: AskRequest) -> Run:
        caller = await self._caller(request)
        self._check_models(request.choices, "plan", "query", "answer")
        conversation_id = await self._open_conversation(request)
        return Run(ending_in_failure(self.assistant_events(request, caller, conversation_id)), conversation_id)

    async def start_curator(self, request: CurateRequest) -> Run:
        await self._require(request.user, request.namespace, Permission.WRITE)
        self._check_models(request.choices, "curate")
        async with self.services.db.session() as session:
            datasets = await list_datasets(session, request.namespace)
            focus = await get_dataset(session, request.namespace, request.dataset) if request.dataset else None
        return Run(ending_in_failure(self.curator_events(request, datasets, focus)))

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
            graph.astream({"question": request.question}, context=context, stream_mode=["custom", "values"]),
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
                {"configurable": {"thread_id": conversation_id}},
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
            Events, graph.astream(CuratorState(datasets=datasets, focus=focus), context=context, stream_mode="custom")
        )
        async with aclosing(events):
            async for event in events:
                yield event

    async def _caller(self, request: AskRequest) -> Caller:
        """The asking user's access, read once for the whole run: 403 unless they may read the namespace."""
        async with self.services.db.read() as session:
            caller = await Caller.of(session, request.user)
        caller.require_read(request.namespace)
        return caller

    async def _require(self, user: User, namespace: NamespaceRef, wanted: Permission) -> None:
        async with self.services.db.session() as session:
            await require(session, user, namespace, wanted)

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
    )


def assistant_deps(services: Services) -> AssistantDeps:
    settings = services.settings
    return AssistantDeps(
        query=query_deps(services),
        budgets=Budgets(
            max_steps=settings.max_steps,
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
