"""Fakes the eval runner is tested with: query tools that run SQL on the rows database
directly (dataset names rewritten to their row tables, `semantic('text')` turned into the
vector store's scores), and graph runs that answer from a table of questions."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any

import sqlalchemy as sa
import sqlglot
from sqlglot import exp

from datawell.errors import QueryError, QueryRefused
from datawell.evals.records import PredictedLink
from datawell.evals.runner import Targets
from datawell.graphs.events import CuratedLink, GraphEvent, LinksCurated, QueryGenerated, RowsReady, RunFailed
from datawell.llm.models import FixedChatModels
from datawell.llm.scripted import ScriptedChatModel
from datawell.runs import AskRequest, CurateRequest, Events, Runs
from datawell.services import Services
from datawell.storage import datasets
from datawell.storage.access import Caller, NamespaceRef
from datawell.storage.arrow_values import to_json_value
from datawell.storage.tables import User
from datawell.storage.vectors import ROWS
from datawell.tools.ql import QueryResult


class SqliteQueryTools:
    """Runs a SELECT over a namespace's datasets straight on the rows database."""

    def __init__(self, services: Services) -> None:
        self.services = services

    async def run(self, user: User, namespace: NamespaceRef, query: str) -> QueryResult:
        try:
            tree = sqlglot.parse_one(query, read="sqlite")
        except sqlglot.errors.ParseError as exc:
            raise QueryError(f"cannot parse the query: {exc}") from None
        if not isinstance(tree, exp.Query):
            raise QueryError("only SELECT queries are allowed")
        async with self.services.db.session() as session:
            found = {d.name: d.record for d in await datasets.list_datasets(session, namespace)}
        scored: exp.Table | None = None
        for table in tree.find_all(exp.Table):
            if table.name not in found:
                raise QueryError(f"unknown table {table.name!r}")
            alias = table.alias_or_name
            record = found[table.name]
            table.set("this", exp.to_identifier(record.table_name))
            table.set("alias", exp.TableAlias(this=exp.to_identifier(alias)))
            if scored is None and await self.services.vectors.count(ROWS, record.id):
                scored = table
        for call in list(tree.find_all(exp.Anonymous)):
            if call.name.lower() != "semantic":
                continue
            if scored is None:
                raise QueryError("semantic() needs a dataset with embedded text")
            call.replace(await self._scores(scored, found, call.expressions[0].name))
        sql = tree.sql(dialect="sqlite")
        try:
            async with self.services.rows.engine.connect() as connection:
                result = await connection.execute(sa.text(sql))
                rows = [{k: to_json_value(v) for k, v in row.items()} for row in result.mappings()]
        except sa.exc.DBAPIError as exc:
            raise QueryError(f"the query failed: {exc.orig}") from None
        return QueryResult(query=query, rows=rows, truncated=False)

    async def _scores(self, table: exp.Table, found: Mapping[str, Any], text: str) -> exp.Expression:
        record = next(r for r in found.values() if r.table_name == table.name)
        (vector,) = await self.services.embedder.embed([text])
        hits = await self.services.vectors.search(ROWS, record.id, vector, limit=10_000)
        column = exp.column("__id", table=table.alias_or_name, quoted=True)
        case = exp.Case(this=column)
        for hit in hits:
            case = case.when(exp.Literal.string(hit.id), exp.Literal.number(round(hit.score, 6)))
        return case.else_(exp.Literal.number(0))


Answer = str | None  # a query to run, or None to refuse


def scripted_nl2ql(answers: Mapping[str, Answer], attempts: int = 1) -> Callable[..., AsyncIterator[GraphEvent]]:
    """An nl2ql run that answers each question with a fixed query (run on the fake tools)."""

    async def run(services: Services, request: AskRequest) -> AsyncIterator[GraphEvent]:
        query = answers.get(request.question)
        if query is None:
            yield RunFailed(error=QueryRefused("the datasets cannot answer this: no such data"))
            return
        yield QueryGenerated(query=query, attempts=attempts)
        try:
            result = await SqliteQueryTools(services).run(request.user, request.namespace, query)
        except QueryError as exc:
            yield RunFailed(error=exc)
            return
        yield RowsReady(query=query, rows=result.rows)

    return run


GraphRun = Callable[[Services, AskRequest], AsyncIterator[GraphEvent]]


def targets(
    nl2ql: GraphRun | None = None,
    assistant: GraphRun | None = None,
    links: Mapping[str, list[PredictedLink]] | None = None,
) -> Targets:
    """Runs whose events come from `nl2ql` and `assistant`, and whose curator finds `links`
    (per namespace name); the checks before each run are the real ones."""

    async def never(services: Services, request: AskRequest) -> AsyncIterator[GraphEvent]:
        raise AssertionError("this target should not run")
        yield  # pragma: no cover

    class ScriptedRuns(Runs):
        def __init__(self, services: Services) -> None:
            # The scripted runs ask no model, so any configured one (or none) will do.
            super().__init__(dataclasses.replace(services, models=FixedChatModels(ScriptedChatModel([]))))

        async def nl2ql_events(self, request: AskRequest, caller: Caller) -> Events:
            async for event in (nl2ql or never)(self.services, request):
                yield event

        async def assistant_events(self, request: AskRequest, caller: Caller, conversation_id: str) -> Events:
            async for event in (assistant or never)(self.services, request):
                yield event

        async def curator_events(self, request: CurateRequest, datasets: Any, focus: Any) -> Events:
            found = (links or {}).get(str(request.namespace.name), [])
            curated = [
                CuratedLink(
                    origin=link.origin,
                    destination=link.destination,
                    match_type=link.match_type,
                    hits=link.hits,
                    score=1.0,
                    reason="",
                )
                for link in found
            ]
            yield LinksCurated(datasets_processed=len(datasets), links=curated, activated=False)

    return Targets(runs=ScriptedRuns, query_tools=SqliteQueryTools)
