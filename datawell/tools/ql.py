"""The query language (DESIGN.md, "The query language").

The graphs, evals and agents build against the names and signatures here.

`QueryTools` is the one entry point: it authorises the namespace, lets `checker` parse the
text, resolves the tables it names to datasets the caller may read, lets `checker` compile
the rest, answers `semantic()` from the vector store and runs the SQL read-only, under a
time limit and a row cap."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from datetime import time as clock
from decimal import Decimal
from typing import Any, Protocol

from sqlalchemy import select
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncSession

from datawell.errors import Forbidden, QueryError, SubError
from datawell.storage.access import NamespaceRef, Permission, allows, find_namespace, permission_of, readable_namespaces
from datawell.storage.datasets import DatasetRef, list_datasets
from datawell.storage.db import Database
from datawell.storage.ingestions import embedding_incomplete
from datawell.storage.rows import RowStore
from datawell.storage.tables import Dataset, User
from datawell.storage.vectors import ROWS, VectorStore
from datawell.tools.catalog import Catalog, TableInfo, table_info, with_contents
from datawell.tools.checker import (
    ID_COLUMN,
    SCORE_COLUMN,
    SCORE_FUNCTION,
    TARGETS,
    CompiledQuery,
    TableRef,
    close_matches,
    compile_query,
    did_you_mean,
    parse,
)

# The SQLite progress handler runs every this many virtual-machine steps (roughly a
# millisecond of work): often enough to stop on time, rarely enough to cost nothing.
SQLITE_PROGRESS_STEPS = 100_000


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


class TextEmbedder(Protocol):
    async def embed(self, texts: list[str]) -> list[list[float]]: ...


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
        time_limit_seconds: float,
        semantic_hits: int | None = None,
    ) -> None:
        self.db = db
        self.rows = rows
        self.vectors = vectors
        self.embedder = embedder
        self.row_cap = row_cap
        self.time_limit_seconds = time_limit_seconds
        self.semantic_hits = semantic_hits or row_cap  # nearest rows semantic() scores; the rest score 0
        self.target = TARGETS[rows.dialect]

    async def catalog(self, user: User, namespace: NamespaceRef) -> Catalog:
        """Every dataset of the namespace, named as a query in that namespace names it."""
        return await self._catalog(user, namespace, shared=False)

    async def shared_catalog(self, user: User, namespace: NamespaceRef) -> Catalog:
        """The namespace's datasets, then those of every other namespace the user may read,
        named `owner.namespace.dataset`."""
        return await self._catalog(user, namespace, shared=True)

    async def _catalog(self, user: User, namespace: NamespaceRef, *, shared: bool) -> Catalog:
        async with self.db.session() as session:
            await _require_read(session, user, namespace)
            datasets = [(d, d.name) for d in await list_datasets(session, namespace)]
            if shared:
                for other in await readable_namespaces(session, user):
                    if other.id != namespace.id:
                        datasets += [
                            (d, f"{other.owner}.{other.name}.{d.name}") for d in await list_datasets(session, other)
                        ]
        tables = [await with_contents(self.rows, d, table_info(d, name)) for d, name in datasets]
        return Catalog(namespace=namespace, tables=tables)

    async def check(self, user: User, namespace: NamespaceRef, query: str) -> str:
        """The query as it will run (rewritten, transpiled); raises QueryError when refused."""
        return (await self.prepare(user, namespace, query)).sql

    async def prepare(self, user: User, namespace: NamespaceRef, query: str) -> CompiledQuery:
        """Authorise, parse, resolve tables, compile: everything but running."""
        async with self.db.session() as session:
            await _require_read(session, user, namespace)
            parsed = parse(query)
            tables = await _TableResolver(session, user, namespace).resolve(parsed.references)
        return compile_query(parsed, tables, self.target, self.row_cap)

    async def resolve(
        self, user: User, namespace: NamespaceRef, references: list[TableRef]
    ) -> dict[TableRef, TableInfo]:
        """The datasets behind table names, as `prepare` finds them."""
        async with self.db.session() as session:
            await _require_read(session, user, namespace)
            return await _TableResolver(session, user, namespace).resolve(references)

    async def run(self, user: User, namespace: NamespaceRef, query: str) -> QueryResult:
        compiled = await self.prepare(user, namespace, query)
        columns, records = await self.execute(compiled, await self.search(compiled))
        truncated = len(records) > self.row_cap
        rows = [_row(compiled, columns, record) for record in records[: self.row_cap]]
        incomplete = await self._embedding_incomplete(compiled)
        for row in rows if incomplete else []:
            row["__metadata"]["semanticIncomplete"] = True
        return QueryResult(query=query, rows=rows, truncated=truncated, semantic_incomplete=incomplete)

    async def _embedding_incomplete(self, compiled: CompiledQuery) -> tuple[str, ...]:
        """Datasets semantic() searched while their rows' vectors are still being made."""
        searched = {s.table.dataset_id: s.table for s in compiled.searches}
        if not searched:
            return ()
        async with self.db.session() as session:
            pending = await embedding_incomplete(session, list(searched))
        return tuple(sorted("/".join(searched[d].coordinate().values()) for d in pending))

    async def search(self, compiled: CompiledQuery) -> SemanticHits:
        """Each semantic() search's nearest rows, in the form the compiled SQL takes them."""
        hits = SemanticHits()
        if not compiled.searches:
            return hits
        texts = list(dict.fromkeys(s.text for s in compiled.searches))
        vectors = dict(zip(texts, await self.embedder.embed(texts), strict=True))
        for index, search in enumerate(compiled.searches):
            found = await self.vectors.search(ROWS, search.table.dataset_id, vectors[search.text], self.semantic_hits)
            scores = {h.id: h.score for h in found}
            if compiled.target == "postgres":
                hits.parameters.append(json.dumps(scores))
            else:
                hits.parameters.append(json.dumps(list(scores)))
                hits.functions[f"{SCORE_FUNCTION}{index}"] = scores
        return hits

    async def execute(self, compiled: CompiledQuery, hits: SemanticHits | None = None) -> tuple[list[str], list[Any]]:
        """Run compiled SQL read-only under the time limit; database errors become QueryErrors."""
        hits = hits or SemanticHits()
        for attempt in range(2):
            try:
                async with self.rows.engine.connect() as connection:
                    if compiled.target == "postgres":
                        return await self._postgres(connection, compiled.sql, hits)
                    return await self._sqlite(connection, compiled.sql, hits)
            except DBAPIError as exc:
                message = _database_message(exc)
                if attempt == 0 and _missing_table(message, compiled.tables):
                    # A dataset nothing was published to yet has no row table: give it an empty one.
                    for table in compiled.tables:
                        await self.rows.ensure_table(_dataset_stub(table))
                    continue
                raise _query_error(message, compiled, self.time_limit_seconds) from None
        raise AssertionError("unreachable")

    async def _postgres(self, connection: AsyncConnection, sql: str, hits: SemanticHits) -> tuple[list[str], list[Any]]:
        connection = await connection.execution_options(postgresql_readonly=True)
        async with connection.begin():
            milliseconds = max(1, int(self.time_limit_seconds * 1000))
            await connection.exec_driver_sql(f"SET LOCAL statement_timeout = {milliseconds}")
            result = await connection.exec_driver_sql(sql, tuple(hits.parameters))
            return list(result.keys()), list(result.all())

    async def _sqlite(self, connection: AsyncConnection, sql: str, hits: SemanticHits) -> tuple[list[str], list[Any]]:
        driver: Any = (await connection.get_raw_connection()).driver_connection  # an aiosqlite.Connection
        deadline = time.monotonic() + self.time_limit_seconds

        def past_deadline() -> int:
            return 1 if time.monotonic() > deadline else 0

        await connection.exec_driver_sql("PRAGMA query_only = ON")
        await driver.set_progress_handler(past_deadline, SQLITE_PROGRESS_STEPS)
        for name, scores in hits.functions.items():
            await driver.create_function(name, 1, scores.get, deterministic=True)
        try:
            result = await connection.exec_driver_sql(sql, tuple(hits.parameters))
            return list(result.keys()), list(result.all())
        finally:
            # The connection goes back to the pool that ingestion writes through.
            for name in hits.functions:
                await driver.create_function(name, 1, None)
            await driver.set_progress_handler(None, 0)
            await connection.exec_driver_sql("PRAGMA query_only = OFF")


async def _require_read(session: AsyncSession, user: User, namespace: NamespaceRef) -> None:
    if not allows(await permission_of(session, user, namespace), Permission.READ):
        raise Forbidden(f"user {user.username!r} has no read access to namespace {namespace}")


class _TableResolver:
    """Table names to datasets: `orders` in the request's namespace, `owner.namespace.orders` in
    any namespace the caller may read. Every unresolved name is one sub_error."""

    def __init__(self, session: AsyncSession, user: User, namespace: NamespaceRef) -> None:
        self.session = session
        self.user = user
        self.namespace = namespace
        self.datasets: dict[str, list[DatasetRef]] = {}

    async def _datasets(self, namespace: NamespaceRef) -> list[DatasetRef]:
        if namespace.id not in self.datasets:
            self.datasets[namespace.id] = await list_datasets(self.session, namespace)
        return self.datasets[namespace.id]

    async def resolve(self, references: list[TableRef]) -> dict[TableRef, TableInfo]:
        tables: dict[TableRef, TableInfo] = {}
        problems: list[SubError] = []
        for ref in references:
            try:
                tables[ref] = await self._one(ref)
            except QueryError as exc:
                problems += exc.sub_errors
        if problems:
            raise QueryError("the query names tables that are not datasets you can read", sub_errors=problems)
        return tables

    async def _one(self, ref: TableRef) -> TableInfo:
        if ref.owner is None and ref.namespace is not None:
            hint = await self._elsewhere(ref.name, ref.namespace)
            raise _unknown(
                ref,
                f"name a table as dataset (in namespace {self.namespace}) or owner.namespace.dataset"
                + (f": did you mean {hint}?" if hint else ""),
            )
        namespace = self.namespace
        if (
            ref.owner is not None
            and ref.namespace is not None
            and (ref.owner, ref.namespace)
            != (
                self.namespace.owner,
                self.namespace.name,
            )
        ):
            found = await find_namespace(self.session, ref.owner, ref.namespace)
            if found is None:
                raise _unknown(ref, f"there is no namespace {ref.owner}/{ref.namespace}", "unknown_namespace")
            if not allows(await permission_of(self.session, self.user, found), Permission.READ):
                raise _unknown(
                    ref,
                    f"you have no read access to namespace {found}: its owner can grant it",
                    "no_read_access",
                )
            namespace = found
        datasets = await self._datasets(namespace)
        exact = [d for d in datasets if d.name == ref.name] or [
            d for d in datasets if d.name.lower() == ref.name.lower()
        ]
        if len(exact) == 1:
            name = (
                exact[0].name
                if namespace.id == self.namespace.id
                else f"{namespace.owner}.{namespace.name}.{exact[0].name}"
            )
            return table_info(exact[0], name)
        names = [d.name for d in datasets]
        suggestion = did_you_mean(ref.name, names)
        if not suggestion and namespace.id == self.namespace.id:
            hint = await self._elsewhere(ref.name)
            suggestion = f": did you mean {hint}?" if hint else ""
        where = "this namespace" if namespace.id == self.namespace.id else f"namespace {namespace}"
        raise _unknown(ref, f"no dataset named {ref.name!r} in {where}{suggestion}")

    async def _elsewhere(self, name: str, namespace_name: str | None = None) -> str:
        """Datasets of that name in other namespaces the caller may read, as owner.namespace.dataset."""
        readable = {n.id: n for n in await readable_namespaces(self.session, self.user) if n.id != self.namespace.id}
        if namespace_name is not None:
            readable = {i: n for i, n in readable.items() if n.name.lower() == namespace_name.lower()}
        if not readable:
            return ""
        rows = await self.session.execute(
            select(Dataset.name, Dataset.namespace_id).where(Dataset.namespace_id.in_(list(readable)))
        )
        qualified = [f"{readable[ns].owner}.{readable[ns].name}.{n}" for n, ns in rows]
        matches = [q for q in qualified if q.rsplit(".", 1)[1].lower() == name.lower()]
        matches = matches or [
            q for q in qualified if q.rsplit(".", 1)[1] in close_matches(name, [x.rsplit(".", 1)[1] for x in qualified])
        ]
        return " or ".join(repr(m) for m in matches[:3])


def _unknown(ref: TableRef, message: str, code: str = "unknown_table") -> QueryError:
    return QueryError(message, sub_errors=[SubError(code, f"table {str(ref)!r}: {message}")])


def _dataset_stub(table: TableInfo) -> Dataset:
    """Enough of a dataset record for the row store to create its (empty) table."""
    return Dataset(
        id=table.dataset_id,
        table_name=table.physical,
        schema_definition=table.column_descriptions or dict.fromkeys(table.columns, ""),
        field_types=table.columns,
    )


def _database_message(exc: DBAPIError) -> str:
    original = exc.orig.__cause__ or exc.orig if exc.orig is not None else exc
    text = str(original).strip().splitlines()[0] if str(original).strip() else type(original).__name__
    if text.startswith("<class "):  # SQLAlchemy's asyncpg adapter prefixes the class
        text = text.split(": ", 1)[-1]
    return text


def _missing_table(message: str, tables: list[TableInfo]) -> bool:
    lowered = message.lower()
    return any(t.physical in message for t in tables) and ("no such table" in lowered or "does not exist" in lowered)


def _query_error(message: str, compiled: CompiledQuery, limit: float) -> QueryError:
    lowered = message.lower()
    if "interrupted" in lowered or "statement timeout" in lowered:
        text = f"the query ran longer than the time limit of {limit:g} s"
        return QueryError(text, sub_errors=[SubError("time_limit", text)])
    for table in compiled.tables:  # users never see row-table names
        message = message.replace(table.physical, table.name)
    text = f"the database refused the query: {message}"
    return QueryError(text, sub_errors=[SubError("database_error", text)])


def _row(compiled: CompiledQuery, columns: list[str], record: Sequence[Any]) -> dict[str, Any]:
    row: dict[str, Any] = {}
    metadata: dict[str, Any] = {}
    if compiled.dataset is not None:
        metadata["dataset"] = compiled.dataset.coordinate()
    for column, value in zip(columns, record, strict=True):
        if column == ID_COLUMN:
            metadata["id"] = value
        elif column == SCORE_COLUMN:
            metadata["score"] = float(value)
        else:
            key = column
            while key in row:  # SELECT a.x, b.x: both kept
                key += "_"
            row[key] = _json_value(value, compiled.kinds.get(column))
    row["__metadata"] = metadata
    return row


def _json_value(value: Any, kind: str | None = None) -> Any:
    """A database value as JSON, alike on every store (SQLite returns booleans as 0/1 and
    timestamps as text)."""
    if value is None:
        return None
    if kind == "boolean" and isinstance(value, int):
        return bool(value)
    if kind == "timestamp" and isinstance(value, str):
        try:
            value = datetime.fromisoformat(value)
        except ValueError:
            return value
        return (value if value.tzinfo else value.replace(tzinfo=UTC)).isoformat()
    if isinstance(value, Decimal):
        exponent = value.as_tuple().exponent
        return int(value) if isinstance(exponent, int) and exponent >= 0 else float(value)
    if isinstance(value, datetime | date | clock):
        return value.isoformat()
    if isinstance(value, timedelta):
        return value.total_seconds()
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, bytes):
        return value.hex()
    if isinstance(value, list | tuple):
        return [_json_value(v) for v in value]
    return value
