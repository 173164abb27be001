"""The query language (DESIGN.md, "The query language").

The graphs, evals and agents build against the names and signatures here.

`QueryTools` is the one entry point: it authorises the namespace, lets `checker` parse the
text, resolves the tables it names to datasets the caller may read, lets `checker` compile
the rest, answers `semantic()` from the vector store and runs the SQL in the `sandbox`, which
lets it read only the tables the checker resolved, under time and size limits.

The caller is a `storage.access.Caller`, whose access a run reads once when it starts; a
`User` given instead (the MCP tools, the console, the evals) is read into one per call. A
query prepared once (`prepare`) is what `run` executes."""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass, field
from typing import Any, Protocol

from datawell.observability.recorder import observe_query
from datawell.storage.access import Caller, NamespaceRef
from datawell.storage.datasets import DatasetRef, list_datasets
from datawell.storage.db import Database
from datawell.storage.ingestions import embedding_incomplete
from datawell.storage.links import active_links
from datawell.storage.rows import RowStore
from datawell.storage.tables import User
from datawell.storage.vectors import ROWS, VectorStore
from datawell.tools.catalog import Catalog, TableInfo, table_info, with_contents
from datawell.tools.checker import (
    DEFAULT_CAPS,
    SCORE_FUNCTION,
    TARGETS,
    Caps,
    CompiledQuery,
    TableRef,
    compile_query,
    parse,
)
from datawell.tools.resolver import TableResolver
from datawell.tools.results import dataset_stub, missing_table, query_error, result_row
from datawell.tools.sandbox import Fetched, Limits, Refusal, Sandbox, Statement
from datawell.tools.sandbox.dialects import open_sandbox


@dataclass(frozen=True)
class QueryResult:
    query: str  # the query as the caller wrote it
    rows: list[dict[str, Any]]  # JSON-ready; internal fields start with `__` (`__metadata`: score, dataset, id)
    truncated: bool  # the row cap cut the result
    # datasets searched by semantic() whose rows are not all embedded yet (owner/namespace/name)
    semantic_incomplete: tuple[str, ...] = ()


@dataclass
class SemanticHits:
    """What the vector store found for a query's semantic() calls: SQL parameters, and on
    SQLite the score functions the connection gets for the query."""

    parameters: list[Any] = field(default_factory=list)
    functions: dict[str, dict[str, float]] = field(default_factory=dict)


Who = Caller | User  # a run's caller, or a user whose access is read for this one call
LinkEnds = tuple[
    str, str, str, int
]  # an active link: origin, destination (`namespace/dataset.field`), match type, hits


class TextEmbedder(Protocol):
    async def embed(self, texts: list[str]) -> list[list[float]]: ...


def pairs(resolver: TableResolver, tables: dict[TableRef, TableInfo]) -> list[tuple[DatasetRef, TableInfo]]:
    """Each resolved dataset with its table as the query names it."""
    by_id = {d.record.id: d for d in resolver.resolved}
    return [(by_id[t.dataset_id], t) for t in {t.dataset_id: t for t in tables.values()}.values()]


class Queries(Protocol):
    """What the graphs and the verified examples ask of the query tools (`QueryTools`): the
    narrow side a test replaces with scripted tables."""

    async def catalog(self, who: Who, namespace: NamespaceRef) -> Catalog: ...

    async def links(self, who: Who, namespace: NamespaceRef) -> list[LinkEnds]: ...

    async def check(self, who: Who, namespace: NamespaceRef, query: str) -> str: ...

    async def prepare(self, who: Who, namespace: NamespaceRef, query: str) -> CompiledQuery: ...

    async def run(self, who: Who, namespace: NamespaceRef, query: str | CompiledQuery) -> QueryResult: ...


class QueryTools:
    """Catalog, check and run, for one caller. Built from `Services`; raises `errors.QueryError`
    (a message plus sub_errors naming unknown tables/columns with close matches) for a query
    that is refused or fails, and `errors.Forbidden` for a namespace the caller may not read."""

    def __init__(
        self,
        db: Database,
        rows: RowStore,
        vectors: VectorStore,
        embedder: TextEmbedder,
        *,
        row_cap: int,
        limits: Limits,
        caps: Caps = DEFAULT_CAPS,
        semantic_hits: int | None = None,
    ) -> None:
        self.db, self.rows, self.vectors, self.embedder = db, rows, vectors, embedder
        self.row_cap = row_cap
        self.limits = limits  # while a query runs
        self.caps = caps  # checked before it runs
        self.semantic_hits = semantic_hits or row_cap  # nearest rows semantic() scores; the rest score 0
        self.target = TARGETS[rows.dialect]
        self.sandbox: Sandbox = open_sandbox(rows.engine, self.limits)  # where queries run

    async def start(self) -> None:
        """Check at start that the store can build the second wall (PostgreSQL: roles)."""
        start = getattr(self.sandbox, "start", None)
        if start is not None:
            await start()

    async def close(self) -> None:
        await self.sandbox.close()

    async def caller(self, who: Who) -> Caller:
        if isinstance(who, Caller):
            return who
        async with self.db.read() as session:
            return await Caller.of(session, who)

    async def catalog(self, who: Who, namespace: NamespaceRef) -> Catalog:
        """Every dataset of the namespace, named as a query in that namespace names it."""
        return await self._catalog(who, namespace, shared=False)

    async def shared_catalog(self, who: Who, namespace: NamespaceRef) -> Catalog:
        """The namespace's datasets, then those of every other namespace the caller may read,
        named `owner.namespace.dataset`."""
        return await self._catalog(who, namespace, shared=True)

    async def _catalog(self, who: Who, namespace: NamespaceRef, *, shared: bool) -> Catalog:
        caller = await self.caller(who)
        caller.require_read(namespace)
        async with self.db.read() as session:
            datasets = [(d, d.name) for d in await list_datasets(session, namespace)]
            for other in caller.readable if shared else ():
                if other.id != namespace.id:
                    datasets += [
                        (d, f"{other.owner}.{other.name}.{d.name}") for d in await list_datasets(session, other)
                    ]
        tables = await with_contents(self.db, self.rows, [(d, table_info(d, name)) for d, name in datasets])
        return Catalog(namespace=namespace, tables=tables)

    async def links(self, who: Who, namespace: NamespaceRef) -> list[LinkEnds]:
        """The namespace's active links, the joins a query may make."""
        (await self.caller(who)).require_read(namespace)
        async with self.db.read() as session:
            return [(x.origin, x.destination, x.match_type, x.hits) for x in await active_links(session, namespace.id)]

    async def check(self, who: Who, namespace: NamespaceRef, query: str) -> str:
        """The query as it will run (rewritten, transpiled); raises QueryError when refused."""
        return (await self.prepare(who, namespace, query)).sql

    async def prepare(
        self, who: Who, namespace: NamespaceRef, query: str, *, row_cap: int | None = None
    ) -> CompiledQuery:
        """Authorise, parse, resolve tables, compile: everything but running. `row_cap`: another
        cap than the service's (an export reads every row)."""
        caller = await self.caller(who)
        caller.require_read(namespace)
        # In a worker thread: reading a query within the limits still takes milliseconds of
        # CPU, which the event loop (other requests, /health) should not wait out.
        parsed = await asyncio.to_thread(parse, query, self.caps)
        async with self.db.read() as session:
            resolver = TableResolver(session, caller, namespace)
            await resolver.refuse_taken_names(parsed.ctes)
            tables = await resolver.resolve(parsed.references)
        # The checker's date rules read what each column holds (years, month names, Unix seconds).
        described = {t.dataset_id: t for t in await with_contents(self.db, self.rows, pairs(resolver, tables))}
        tables = {ref: described.get(info.dataset_id, info) for ref, info in tables.items()}
        return await asyncio.to_thread(compile_query, parsed, tables, self.target, row_cap or self.row_cap)

    async def resolve(self, who: Who, namespace: NamespaceRef, references: list[TableRef]) -> dict[TableRef, TableInfo]:
        """The datasets behind table names, as `prepare` finds them."""
        caller = await self.caller(who)
        caller.require_read(namespace)
        async with self.db.read() as session:
            return await TableResolver(session, caller, namespace).resolve(references)

    async def run(self, who: Who, namespace: NamespaceRef, query: str | CompiledQuery) -> QueryResult:
        """Runs a query: its text, prepared here, or the form `prepare` gave, run as it is."""
        with observe_query(query if isinstance(query, str) else query.text) as observed:
            compiled = query if isinstance(query, CompiledQuery) else await self.prepare(who, namespace, query)
            # The time limit covers the vector searches too: a query may call semantic() many times.
            deadline = time.monotonic() + self.limits.seconds
            try:
                hits = await self.search(compiled, deadline)
            except Refusal as refusal:
                raise query_error(refusal, compiled, self.limits.seconds) from None
            fetched = await self.execute(compiled, hits, caller=str(who.id), deadline=deadline)
            truncated = fetched.cut or len(fetched.records) > self.row_cap
            rows = [result_row(compiled, fetched.columns, record) for record in fetched.records[: self.row_cap]]
            observed.rows, observed.truncated = len(rows), truncated
        incomplete = await self._embedding_incomplete(compiled)
        for row in rows if incomplete else []:
            row["__metadata"]["semanticIncomplete"] = True
        return QueryResult(query=compiled.text, rows=rows, truncated=truncated, semantic_incomplete=incomplete)

    async def _embedding_incomplete(self, compiled: CompiledQuery) -> tuple[str, ...]:
        """Datasets semantic() searched while their rows' vectors are still being made."""
        searched = {s.table.dataset_id: s.table for s in compiled.searches}
        if not searched:
            return ()
        async with self.db.session() as session:
            pending = await embedding_incomplete(session, list(searched))
        return tuple(sorted("/".join(searched[d].coordinate().values()) for d in pending))

    async def search(self, compiled: CompiledQuery, deadline: float) -> SemanticHits:
        """Each semantic() search's nearest rows, in the form the compiled SQL takes them;
        raises a time Refusal when `deadline` (`time.monotonic()`) passes. The local vector
        store searches without yielding, so the deadline is checked between searches."""
        hits = SemanticHits()
        if not compiled.searches:
            return hits
        texts = list(dict.fromkeys(s.text for s in compiled.searches))
        vectors = dict(zip(texts, await self.embedder.embed(texts), strict=True))
        for index, search in enumerate(compiled.searches):
            if time.monotonic() > deadline:
                raise Refusal("semantic() searches took the whole time", "time")
            found = await self.vectors.search(ROWS, search.table.dataset_id, vectors[search.text], self.semantic_hits)
            scores = {h.id: h.score for h in found}
            if compiled.target == "postgres":
                hits.parameters.append(json.dumps(scores))
            else:
                hits.parameters.append(json.dumps(list(scores)))
                hits.functions[f"{SCORE_FUNCTION}{index}"] = scores
        return hits

    async def execute(
        self,
        compiled: CompiledQuery,
        hits: SemanticHits | None = None,
        *,
        caller: str = "",
        deadline: float | None = None,
    ) -> Fetched:
        """Run compiled SQL in the sandbox, reading only `compiled.tables`, until `deadline`
        (`time.monotonic()`; default: the time limit from now) in a turn of `caller`; database
        refusals become QueryErrors."""
        hits = hits or SemanticHits()
        deadline = deadline if deadline is not None else time.monotonic() + self.limits.seconds
        functions = {name: scores.get for name, scores in hits.functions.items()}
        physical = [t.physical for t in compiled.tables]
        for attempt in range(2):
            seconds = max(0.001, deadline - time.monotonic())
            statement = Statement(compiled.sql, hits.parameters, physical, functions, caller, seconds)
            try:
                return await self.sandbox.run(statement)
            except Refusal as refusal:
                if attempt == 0 and missing_table(refusal, compiled.tables):
                    # A dataset nothing was published to yet has no row table: give it an empty one.
                    for table in compiled.tables:
                        await self.rows.ensure_table(dataset_stub(table))
                    continue
                raise query_error(refusal, compiled, self.limits.seconds) from None
        raise AssertionError("unreachable")
