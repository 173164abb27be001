"""The DataLinks SDK's question paths: `POST /query` runs the DataLinks query language
(`tools.dlql`, compiled to the QL and run by the same query tools) or a natural-language
query (the nl2ql run); `POST /query/ask` streams the assistant run with the SDK's event names;
`/query/conversations` lists the caller's conversations."""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator
from contextlib import aclosing
from datetime import UTC, datetime
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import Field, field_validator
from sqlalchemy import select
from sse_starlette import EventSourceResponse, ServerSentEvent
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from datawell.api.autorag import AutoRagRequest
from datawell.api.errors import error_body
from datawell.api.ingestions import NUMBER
from datawell.api.routing import Context, PathModel, Router, named_user
from datawell.api.schemas import ApiModel
from datawell.errors import InvalidInput, NotFound, SubError
from datawell.graphs.events import (
    AnswerDelta,
    AnswerReady,
    GraphEvent,
    PlanReady,
    RunFailed,
    RunStarted,
    StepFinished,
    StepStarted,
)
from datawell.graphs.memory import finished_turn
from datawell.llm.models import StageChoices
from datawell.ontology.links import ACTIVE, FieldRef, list_links
from datawell.runs import AskRequest, Run, Runs
from datawell.services import Services
from datawell.storage import agent_runs
from datawell.storage.access import NamespaceRef, Permission, authorize, namespace_named
from datawell.storage.datasets import get_dataset
from datawell.storage.tables import AgentRun, Conversation, User
from datawell.storage.users import SELF
from datawell.tools import dlql

router = Router("datalinks")


class QueryRequest(ApiModel):
    username: str = Field(SELF, min_length=1, description="Owner of the namespace; `self`: the caller.")
    namespace: str = Field(min_length=1)
    dataset: str | None = None
    query: str = Field("", description='DataLinks query language, e.g. `Ontology("shop/orders").filter(total > 10)`')
    natural_language_query: str | None = Field(None, description="A question; the nl2ql run writes the query.")
    model: str | None = None
    provider: str | None = None
    explain_requested: bool | None = None


class QueryMetadata(ApiModel):
    count: int
    executed_query: str = Field(description="The QL that ran.")
    query: str = Field(description="The query as sent.")
    truncated: bool


class QueryResponse(ApiModel):
    data: list[dict[str, Any]]
    metadata: QueryMetadata


async def tables_for(
    services: Services, user: User, namespace: NamespaceRef, query: dlql.Query
) -> tuple[list[dlql.Table], list[dlql.Join]]:
    """Each hop's dataset as the QL names it from `namespace`, and the active link between hops."""
    tables: list[dlql.Table] = []
    joins: list[dlql.Join] = []
    async with services.db.session() as session:
        for hop in query.hops:
            if hop.dataset is None or tables:
                previous = tables[-1]
                owner, ns_name, _ = previous.path.split("/")
                ns = await authorize(session, user, owner, ns_name, Permission.READ)
                ends = []
                for link in await list_links(session, ns.id, status=ACTIVE):
                    origin, destination = FieldRef.parse(link.origin), FieldRef.parse(link.destination)
                    if len(origin.fields) == 1 and len(destination.fields) == 1:
                        a = f"{owner}/{origin.namespace}/{origin.dataset}"
                        b = f"{owner}/{destination.namespace}/{destination.dataset}"
                        ends += [
                            (a, origin.fields[0], b, destination.fields[0]),
                            (b, destination.fields[0], a, origin.fields[0]),
                        ]
                path, join = dlql.hop_join(previous, hop, ends)
                joins.append(join)
                owner, ns_name, name = path.split("/")
            else:
                target = hop.dataset
                owner, ns_name, name = target.owner or namespace.owner, target.namespace, target.name
            ns = await authorize(session, user, named_user(owner, user), ns_name, Permission.READ)
            dataset = await get_dataset(session, ns, name)
            same = ns.id == namespace.id
            ql_name = dlql.identifier(name) if same else ".".join(dlql.identifier(p) for p in (ns.owner, ns.name, name))
            tables.append(dlql.Table(f"{ns.owner}/{ns.name}/{name}", ql_name, list(dataset.record.schema_definition)))
    return tables, joins


@router.operation(
    "POST",
    "/query",
    summary="Query with the DataLinks query language or a question",
    body=QueryRequest,
    response=QueryResponse,
    errors=(403, 404, 415, 422, 502),
)
async def query(request: Request, ctx: Context, user: User, body: QueryRequest) -> QueryResponse:
    """Runs `query` (the DataLinks query language: `Ontology("ns/ds")` then `.filter(...)`,
    `.searchAround("ns/other").find(...)`, `.select(...)`, `.orderBy(field, desc)`,
    `.limit(n)`; docs/datalinks.md) or `naturalLanguageQuery` (the nl2ql run) in the namespace,
    and answers the rows with `metadata.executedQuery`, the QL that ran. An empty `query` reads
    `dataset`. A syntax error, an unknown field or a missing link is a 422 naming line and column."""
    runs: Runs = ctx.runs
    services = runs.services
    async with services.db.session() as session:
        namespace = await namespace_named(session, named_user(body.username, user), body.namespace)
    if body.natural_language_query:
        run = await runs.start_nl2ql(
            AskRequest(
                user=user,
                namespace=namespace,
                question=body.natural_language_query,
                choices=StageChoices.named(body.model, body.provider, {}),
            )
        )
        result = await run.result()
        if result.failure is not None:
            raise result.failure.error
        rows = result.rows.rows if result.rows is not None else []
        executed = result.rows.query if result.rows is not None else ""
        truncated = result.rows.truncated if result.rows is not None else False
        return QueryResponse(
            data=rows,
            metadata=QueryMetadata(
                count=len(rows), executed_query=executed, query=body.natural_language_query, truncated=truncated
            ),
        )
    text = body.query.strip()
    if not text:
        if not body.dataset:
            raise InvalidInput(
                "give a query, a naturalLanguageQuery or a dataset",
                sub_errors=[SubError("missing", "query: empty, and no dataset to read")],
            )
        text = f'Ontology("{body.namespace}/{body.dataset}")'
    parsed = dlql.parse(text)
    tables, joins = await tables_for(services, user, namespace, parsed)
    ql = dlql.compile_query(parsed, tables, joins)
    ran = await services.query_tools.run(user, namespace, ql)
    return QueryResponse(
        data=ran.rows,
        metadata=QueryMetadata(count=len(ran.rows), executed_query=ql, query=text, truncated=ran.truncated),
    )


ASK_EVENTS = """Server-Sent Events with the DataLinks SDK's names, one JSON object per `data:` line:
`run-started` `{conversationId, runId}`, `planningStarted` `{}`, `plan` `{steps, reasoning}`,
per step `stepStarted` `{index, instruction}` and `step` `{index, instruction, query, reasoning, data, error}`
(`index` from 0), `answerStarted` `{}`, `answer` `{response}`; a failed run ends with `error` (an ErrorResponse, with `message`)."""


@router.operation(
    "POST",
    "/query/ask",
    summary="Ask a question, answered as a stream (DataLinks SDK events)",
    body=AutoRagRequest,
    errors=(403, 404, 415, 422, 502),
    streams={"text/event-stream": ASK_EVENTS},
)
async def ask(request: Request, ctx: Context, user: User, body: AutoRagRequest) -> Response:
    """The assistant run of `/query/autorag`, streamed with the SDK's event names and shapes."""
    runs: Runs = ctx.runs
    async with runs.services.db.session() as session:
        namespace = await namespace_named(session, named_user(body.username or SELF, user), body.namespace)
    run = await runs.start_assistant(
        AskRequest(
            user=user,
            namespace=namespace,
            question=body.query,
            choices=body.choices(),
            conversation_id=body.conversation_id,
            helper_prompt=body.helper_prompt,
            web_search=body.web_search,
            caller_context=body.caller_context,
        )
    )
    return EventSourceResponse(ask_events(run), ping=15)


async def ask_events(run: Run) -> AsyncIterator[ServerSentEvent]:
    answering = False
    async with aclosing(run.events()) as events:
        async for event in events:
            for name, data in rendered(event):
                if name == "run-started":
                    data = {**data, "runId": run.run_id}
                if name in ("answer", "answerDelta") and not answering:
                    answering = True
                    yield sse("answerStarted", {})
                if name != "answerDelta":
                    yield sse(name, data)


def rendered(event: GraphEvent) -> list[tuple[str, dict[str, Any]]]:
    match event:
        case RunStarted():
            return [("run-started", {"conversationId": event.conversation_id}), ("planningStarted", {})]
        case PlanReady():
            return [("plan", {"steps": event.steps, "reasoning": event.text})]
        case StepStarted():
            return [("stepStarted", {"index": event.index - 1, "instruction": event.instruction})]
        case StepFinished():
            step = {
                "index": event.index - 1,
                "instruction": event.instruction,
                "query": event.query,
                "reasoning": event.reasoning,
                "data": event.rows,
                "error": event.error,
            }
            return [("step", step)]
        case AnswerDelta():
            return [("answerDelta", {})]
        case AnswerReady():
            return [("answer", {"response": event.text})]
        case RunFailed():
            return [("error", error_body(event.error))]
    return []


def sse(name: str, data: dict[str, Any]) -> ServerSentEvent:
    return ServerSentEvent(data=json.dumps(data, ensure_ascii=False, default=str, separators=(",", ":")), event=name)


# --- conversations --------------------------------------------------------------------------


class ConversationsQuery(ApiModel):
    username: str = SELF
    namespace: str | None = None


class ConversationSummary(ApiModel):
    id: str
    title: str
    created_at: int = Field(description="Epoch milliseconds.")
    updated_at: int = Field(description="Epoch milliseconds.")


class ConversationList(ApiModel):
    conversations: list[ConversationSummary]


class ConversationTurn(ApiModel):
    run_id: str = Field(description="The turn's id (derived from the conversation and the turn's number).")
    question: str
    status: str
    result: dict[str, Any] | None = None


class ConversationPath(PathModel):
    conversation_id: str


class ConversationDetail(ApiModel):
    id: str
    title: str
    turns: list[ConversationTurn]


def millis(conversation: Conversation, which: str) -> int:
    return int(getattr(conversation, which).timestamp() * 1000)


@router.operation(
    "GET",
    "/query/conversations",
    summary="The caller's conversations",
    query=ConversationsQuery,
    response=ConversationList,
    errors=(403, 404, 422),
)
async def conversations(request: Request, ctx: Context, user: User, query: ConversationsQuery) -> ConversationList:
    """The caller's conversations in a namespace (all of them without one), latest first."""
    async with ctx.services.db.session() as session:
        statement = select(Conversation).where(Conversation.user_id == user.id)
        if query.namespace:
            ns = await authorize(session, user, named_user(query.username, user), query.namespace, Permission.READ)
            statement = statement.where(Conversation.namespace_id == ns.id)
        found = (await session.execute(statement.order_by(Conversation.updated_at.desc()))).scalars().all()
    return ConversationList(
        conversations=[
            ConversationSummary(
                id=c.id, title=c.title, created_at=millis(c, "created_at"), updated_at=millis(c, "updated_at")
            )
            for c in found
        ]
    )


@router.operation(
    "GET",
    "/query/conversations/{conversationId}",
    summary="A conversation and its turns",
    response=ConversationDetail,
    errors=(404,),
    params=ConversationPath,
)
async def conversation(request: Request, ctx: Context, user: User, path: ConversationPath) -> ConversationDetail:
    """The caller's conversation with its finished turns, oldest first."""
    services: Services = ctx.services
    conversation_id = path.conversation_id
    async with services.db.session() as session:
        found = await session.get(Conversation, conversation_id)
    if found is None or found.user_id != user.id:
        raise NotFound(f"conversation {conversation_id} does not exist")
    values = await finished_turn(services.memory, found.id, None) or {}
    turns = [
        ConversationTurn(
            run_id=str(uuid.uuid5(uuid.NAMESPACE_URL, f"datawell:conversation:{found.id}:{number}")),
            question=turn["question"],
            status="completed",
            result={"response": turn["answer"], "steps": []},
        )
        for number, turn in enumerate(values.get("turns", []), 1)
    ]
    return ConversationDetail(id=found.id, title=found.title, turns=turns)


# --- agent runs -----------------------------------------------------------------------------


class RunPath(PathModel):
    run_id: str


class RunStatus(ApiModel):
    run_id: str
    agent_kind: str = "auto_rag"
    question: str
    status: str = Field(description="running, completed or failed")
    can_resume: bool = Field(False, description="Always false: runs keep no checkpoint to resume from.")
    error_message: str | None = None
    result: dict[str, Any] | None = Field(None, description="`{response, steps}` once completed.")


class Feedback(ApiModel):
    thumbs_up: bool
    comment: str | None = Field(None, max_length=10000)


def run_status(run: AgentRun) -> RunStatus:
    return RunStatus(
        run_id=run.id, question=run.question, status=run.status, error_message=run.error_message, result=run.result
    )


@router.operation(
    "GET", "/query/runs/{runId}", summary="An agent run's status", response=RunStatus, errors=(404,), params=RunPath
)
async def run_status_of(request: Request, ctx: Context, user: User, path: RunPath) -> RunStatus:
    """One of the caller's assistant runs (`runId` comes on `/query/ask`'s `run-started`)."""
    async with ctx.services.db.read() as session:
        return run_status(await agent_runs.own(session, user, path.run_id))


@router.operation(
    "DELETE", "/query/runs/{runId}", summary="Delete an agent run", status=204, errors=(404,), params=RunPath
)
async def delete_run(request: Request, ctx: Context, user: User, path: RunPath) -> None:
    """Deletes the run's record (its conversation keeps the turn)."""
    async with ctx.services.db.session() as session:
        await session.delete(await agent_runs.own(session, user, path.run_id))


@router.operation(
    "POST",
    "/query/runs/{runId}/feedback",
    summary="Rate an agent run's answer",
    body=Feedback,
    status=204,
    errors=(404, 415, 422),
    params=RunPath,
)
async def feedback(request: Request, ctx: Context, user: User, body: Feedback, path: RunPath) -> None:
    """Thumbs up or down, with a comment, on a completed run; again replaces the rating."""
    async with ctx.services.db.session() as session:
        run = await agent_runs.own(session, user, path.run_id)
        if run.status != agent_runs.COMPLETED:
            raise InvalidInput(
                f"agent run {run.id} is {run.status}: only a completed run is rated",
                sub_errors=[SubError("not_completed", f"runId: the run is {run.status}")],
            )
        run.thumbs_up, run.comment = body.thumbs_up, body.comment


@router.operation(
    "POST",
    "/query/runs/{runId}/resume",
    summary="Resume an agent run",
    response=RunStatus,
    status=410,
    also=(409, 422),
    errors=(404,),
    params=RunPath,
)
async def resume(request: Request, ctx: Context, user: User, path: RunPath) -> Response:
    """Runs keep no mid-run checkpoint, so none is resumed: a completed run answers 410 with
    its question and result, a failed one 422 with its error, a running one 409 (poll its
    status), as the SDK expects of runs that cannot be streamed."""
    async with ctx.services.db.read() as session:
        run = await agent_runs.own(session, user, path.run_id)
    body = run_status(run).model_dump(mode="json", by_alias=True)
    code = {agent_runs.COMPLETED: 410, agent_runs.FAILED: 422}.get(run.status, 409)
    return JSONResponse(body, status_code=code)


# --- usage ----------------------------------------------------------------------------------


class UsageQuery(ApiModel):
    on_or_after: datetime | None = None
    before: datetime | None = None

    @field_validator("on_or_after", "before", mode="before")
    @classmethod
    def not_a_number(cls, value: object) -> object:
        """pydantic reads a number as Unix seconds; the documented type is an ISO 8601 date-time."""
        if isinstance(value, str) and NUMBER.fullmatch(value.strip()):
            raise ValueError(f"expected an ISO 8601 date-time such as 2026-01-31T12:00:00Z, got {value!r}")
        return value

    @field_validator("on_or_after", "before")
    @classmethod
    def as_utc(cls, value: datetime | None) -> datetime | None:
        """A time without a zone is UTC."""
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)

    page_size: int = Field(25, ge=1, le=1000)
    page_cursor: str | None = Field(None, description="`meta.pageCursor` of the previous page, as JSON.")
    time_zone_for_aggregation: str = "UTC"


class UsageItem(ApiModel):
    timestamp: datetime
    tokens_used: int
    cost_usd: float = Field(0.0, alias="costUSD", description="Not priced: always 0.")


class UsageCursor(ApiModel):
    last_start_time: datetime
    last_observation_id: str


class UsageMeta(ApiModel):
    page_cursor: UsageCursor | None = None
    page_size: int


class UsageHistory(ApiModel):
    data: list[UsageItem]
    meta: UsageMeta


class DayUsage(ApiModel):
    date: str
    tokens_used: int
    cost_usd: float = Field(0.0, alias="costUSD")


class DayMeta(ApiModel):
    time_zone_for_aggregation: str


class UsageByDay(ApiModel):
    data: list[DayUsage]
    meta: DayMeta


def cursor_of(raw: str | None) -> tuple[datetime, str] | None:
    """The cursor as the SDK sends it back: `meta.pageCursor` as JSON."""
    if not raw:
        return None
    try:
        parsed = UsageCursor.model_validate_json(raw)
    except ValueError:
        raise InvalidInput(
            "invalid page cursor", sub_errors=[SubError("invalid_cursor", "pageCursor: not a cursor")]
        ) from None
    return parsed.last_start_time, parsed.last_observation_id


@router.operation(
    "GET",
    "/user/usage/history",
    summary="The caller's model usage, run by run",
    query=UsageQuery,
    response=UsageHistory,
    errors=(422,),
)
async def usage_history(request: Request, ctx: Context, user: User, query: UsageQuery) -> UsageHistory:
    """One item per assistant run: when it started and the tokens its model calls spent
    (reported by the provider, else estimated). Cost is not priced."""
    async with ctx.services.db.read() as session:
        runs = await agent_runs.history(
            session, user, query.on_or_after, query.before, query.page_size + 1, cursor_of(query.page_cursor)
        )
    page = runs[: query.page_size]
    more = len(runs) > query.page_size
    cursor = UsageCursor(last_start_time=page[-1].created_at, last_observation_id=page[-1].id) if more else None
    return UsageHistory(
        data=[UsageItem(timestamp=r.created_at, tokens_used=r.tokens) for r in page],
        meta=UsageMeta(page_cursor=cursor, page_size=query.page_size),
    )


@router.operation(
    "GET",
    "/user/usage/by-day",
    summary="The caller's model usage per day",
    query=UsageQuery,
    response=UsageByDay,
    errors=(422,),
)
async def usage_by_day(request: Request, ctx: Context, user: User, query: UsageQuery) -> UsageByDay:
    """The tokens of the caller's runs summed per day in `timeZoneForAggregation`."""
    try:
        zone = ZoneInfo(query.time_zone_for_aggregation)
    except (ZoneInfoNotFoundError, ValueError):
        raise InvalidInput(
            "unknown time zone",
            sub_errors=[SubError("invalid_time_zone", f"timeZoneForAggregation: {query.time_zone_for_aggregation!r}")],
        ) from None
    days: dict[str, int] = {}
    async with ctx.services.db.read() as session:
        for run in await agent_runs.history(session, user, query.on_or_after, query.before, 1_000_000):
            day = run.created_at.astimezone(zone).date().isoformat()
            days[day] = days.get(day, 0) + run.tokens
    return UsageByDay(
        data=[DayUsage(date=day, tokens_used=tokens) for day, tokens in sorted(days.items())],
        meta=DayMeta(time_zone_for_aggregation=query.time_zone_for_aggregation),
    )
