"""Entry points that run a graph for one request and yield its progress events. The REST
API (`/query/autorag`), the A2A agents, the CLI (`datawell ask`) and evals all run graphs
through these, and only through these.

The surfaces build against the names and signatures here. Event order:
- nl2ql: QueryGenerated, RowsReady; or RunFailed.
- assistant: RunStarted(conversation_id), PlanReady, then per step StepStarted and
  StepFinished, then AnswerDelta* (when the model streams), AnswerReady, RunFinished; or
  RunFailed at any point after RunStarted.
A new conversation gets `request.new_conversation_id` when given, else a generated id; either
way RunStarted carries it. Errors found before the run starts are raised, not yielded: `errors.NotFound` for a
conversation that does not exist or belongs to another user, `errors.Forbidden` for a
namespace the caller may not read.

RunFailed carries the failing error's `error_code` (for example FORBIDDEN, QUERY_ERROR,
MODEL_ERROR), `QUERY_REFUSED` when the model found the datasets cannot answer the question,
or `INTERNAL_ERROR` for anything unexpected (logged; the message never holds a traceback)."""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import Any, cast

from datawell.errors import DatawellError, Forbidden, NotFound
from datawell.graphs.assistant.graph import build_graph as build_assistant_graph
from datawell.graphs.assistant.nodes import AssistantDeps, Budgets
from datawell.graphs.assistant.state import AssistantContext, CallerContext, CallerFact, CallerTurn
from datawell.graphs.curator.state import CuratorDeps
from datawell.graphs.events import GraphEvent, RunFailed, RunFinished, RunStarted
from datawell.graphs.nl2ql.graph import build_graph as build_query_graph
from datawell.graphs.nl2ql.nodes import QueryDeps
from datawell.graphs.nl2ql.state import QueryContext
from datawell.llm.models import StageChoices
from datawell.services import Services
from datawell.storage.access import NamespaceRef, Permission, allows, permission_of
from datawell.storage.tables import Conversation, User, new_id, utcnow
from datawell.tools.web import HttpWebSearch

__all__ = ["AskRequest", "CallerContext", "CallerFact", "CallerTurn", "run_assistant", "run_nl2ql"]

log = logging.getLogger(__name__)

DIALECT_NAMES = {"sqlite": "SQLite", "postgresql": "PostgreSQL"}
INTERNAL_MESSAGE = "the run failed unexpectedly; the service log has the details"


@dataclass(frozen=True)
class AskRequest:
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


def query_deps(services: Services) -> QueryDeps:
    return QueryDeps(
        tools=services.query_tools,
        models=services.models,
        prompts=services.prompts,
        db=services.db,
        max_attempts=services.settings.query_max_attempts,
        dialect=DIALECT_NAMES.get(services.rows.dialect, services.rows.dialect),
    )


def curator_deps(services: Services) -> CuratorDeps:
    return CuratorDeps(
        db=services.db,
        rows=services.rows,
        vectors=services.vectors,
        embedder=services.embedder,
        models=services.models,
        prompts=services.prompts,
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


async def check_readable(services: Services, user: User, namespace: NamespaceRef) -> None:
    async with services.db.session() as session:
        if not allows(await permission_of(session, user, namespace), Permission.READ):
            raise Forbidden(f"user {user.username!r} has no read access to namespace {namespace}")


async def open_conversation(services: Services, request: AskRequest) -> str:
    """The conversation to run in: the caller's own to continue, or a new one."""
    async with services.db.session() as session:
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


def failure(exc: Exception) -> RunFailed:
    if isinstance(exc, DatawellError):
        return RunFailed(error_code=exc.error_code, message=exc.message)
    log.exception("graph run failed", exc_info=exc)
    return RunFailed(error_code="INTERNAL_ERROR", message=INTERNAL_MESSAGE)


async def run_nl2ql(services: Services, request: AskRequest) -> AsyncIterator[GraphEvent]:
    await check_readable(services, request.user, request.namespace)
    graph = build_query_graph(query_deps(services))
    context = QueryContext(
        user=request.user,
        namespace=request.namespace,
        choices=request.choices,
        helper_prompt=request.helper_prompt or "",
    )
    final: dict[str, Any] = {}
    try:
        # aclosing: a consumer that stops listening (a client gone) stops the graph at once.
        stream = cast(
            AsyncGenerator[tuple[str, Any], None],
            graph.astream({"question": request.question}, context=context, stream_mode=["custom", "values"]),
        )
        async with aclosing(stream):
            async for mode, chunk in stream:
                if mode == "custom":
                    yield cast(GraphEvent, chunk)
                else:
                    final = cast(dict[str, Any], chunk)
    except Exception as exc:
        yield failure(exc)
        return
    if final.get("refusal"):
        yield RunFailed(error_code="QUERY_REFUSED", message=f"the datasets cannot answer this: {final['refusal']}")
    elif final.get("error"):
        yield RunFailed(error_code="QUERY_ERROR", message=final["error"])


async def run_assistant(services: Services, request: AskRequest) -> AsyncIterator[GraphEvent]:
    await check_readable(services, request.user, request.namespace)
    conversation_id = await open_conversation(services, request)
    deps = assistant_deps(services)
    graph = build_assistant_graph(deps, await services.memory.saver())
    context = AssistantContext(
        user=request.user,
        namespace=request.namespace,
        choices=request.choices,
        helper_prompt=request.helper_prompt or "",
        caller_context=request.caller_context,
        web_search=deps.web is not None and request.web_search is not False,
    )
    yield RunStarted(conversation_id=conversation_id)
    try:
        # durability="exit": a conversation keeps only turns that finished; a failed turn
        # leaves no trace for the next one to build on.
        events = cast(
            AsyncGenerator[GraphEvent, None],
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
        async with services.db.session() as session:
            conversation = await session.get(Conversation, conversation_id)
            if conversation is not None:
                conversation.updated_at = utcnow()
    except Exception as exc:
        yield failure(exc)
        return
    yield RunFinished()
