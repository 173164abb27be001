"""The DataLinks SDK's question paths: `POST /query` runs the DataLinks query language
(`tools.dlql`, compiled to the QL and run by the same query tools) or a natural-language
query (the nl2ql run); `POST /query/ask` streams the assistant run with the SDK's event names."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import aclosing
from typing import Any

from pydantic import Field
from sse_starlette import EventSourceResponse, ServerSentEvent
from starlette.requests import Request
from starlette.responses import Response

from datawell.api.autorag import AutoRagRequest, assistant_request
from datawell.api.errors import error_body
from datawell.api.routing import Context, Router, named_user
from datawell.api.schemas import ApiModel
from datawell.errors import InvalidInput, SubError
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
from datawell.llm.models import StageChoices
from datawell.ontology.links import ACTIVE, FieldRef, list_links
from datawell.runs import AskRequest, Run, Runs
from datawell.services import Services
from datawell.storage.access import NamespaceRef, Permission, authorize, namespace_named
from datawell.storage.datasets import get_dataset
from datawell.storage.tables import User
from datawell.storage.users import SELF
from datawell.tools import dlql, dlql_compile

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
) -> tuple[list[dlql_compile.Table], list[dlql_compile.Join]]:
    """Each hop's dataset as the QL names it from `namespace`, and the active link between hops."""
    tables: list[dlql_compile.Table] = []
    joins: list[dlql_compile.Join] = []
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
                path, join = dlql_compile.hop_join(previous, hop, ends)
                joins.append(join)
                owner, ns_name, name = path.split("/")
            else:
                target = hop.dataset
                owner, ns_name, name = target.owner or namespace.owner, target.namespace, target.name
            ns = await authorize(session, user, named_user(owner, user), ns_name, Permission.READ)
            dataset = await get_dataset(session, ns, name)
            same = ns.id == namespace.id
            ql_name = (
                dlql_compile.identifier(name)
                if same
                else ".".join(dlql_compile.identifier(p) for p in (ns.owner, ns.name, name))
            )
            tables.append(
                dlql_compile.Table(f"{ns.owner}/{ns.name}/{name}", ql_name, list(dataset.record.schema_definition))
            )
    return tables, joins


@router.post("/query", QueryResponse, body=QueryRequest, errors=(403, 404, 502))
async def query(request: Request, ctx: Context, user: User, body: QueryRequest) -> QueryResponse:
    """Query with the DataLinks query language or a question

    Runs `query` (the DataLinks query language: `Ontology("ns/ds")` then `.filter(...)`,
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
    ql = dlql_compile.compile_query(parsed, tables, joins)
    ran = await services.query_tools.run(user, namespace, ql)
    return QueryResponse(
        data=ran.rows,
        metadata=QueryMetadata(count=len(ran.rows), executed_query=ql, query=text, truncated=ran.truncated),
    )


ASK_EVENTS = """Server-Sent Events with the DataLinks SDK's names, one JSON object per `data:` line:
`run-started` `{conversationId, runId}`, `planningStarted` `{}`, `plan` `{steps, reasoning}`,
per step `stepStarted` `{index, instruction}` and `step` `{index, instruction, query, reasoning, data, error}`
(`index` from 0), `answerStarted` `{}`, `answer` `{response}`; a failed run ends with `error` (an ErrorResponse, with `message`)."""


@router.post("/query/ask", body=AutoRagRequest, errors=(403, 404, 502), streams={"text/event-stream": ASK_EVENTS})
async def ask(request: Request, ctx: Context, user: User, body: AutoRagRequest) -> Response:
    """Ask a question, answered as a stream (DataLinks SDK events)

    The assistant run of `/query/autorag`, streamed with the SDK's event names and shapes."""
    runs: Runs = ctx.runs
    run = await runs.start_assistant(await assistant_request(runs, user, body))
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
