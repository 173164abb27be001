"""Vectors in the rows' own PostgreSQL database, with the pgvector extension: the `VectorStore`
chosen when the rows are in PostgreSQL and its server has pgvector (`services.open_vector_store`).

One table per collection (its stored name, which carries the embedder's space, so the column
has that space's dimension), partitioned by dataset: each dataset's points are a partition
with its own HNSW index (cosine distance, as the other stores score). A search names its
dataset in the `WHERE`, which the planner turns into the choice of that one partition, so the
filter runs inside the search: another tenant's points neither cut a dataset's top-k nor are
read. Deleting a dataset drops its partition, index and all, and can run in the transaction
that drops its rows (`drop`). `nearest` (field vectors across the datasets of a namespace,
a few hundred each) scores exactly: its payload filter may keep few of an index's candidates.

A new partition is written without its index, and `flush` (the end of an ingestion's
embedding) builds it in one `CREATE INDEX`: rows and index at about 900 vectors/s at a million,
where linking each point into the graph as it is inserted ran at 280/s at 50,000, and slower
as the graph grew (docs/decisions.md, issue 48).
Until then a search of that dataset scores its points exactly. Later writes to an indexed
partition link their points as they come. (Tables made before this, with the index declared
on the whole table, keep it: each new partition inherits it.)

The tables are made when first written, as the rows' tables are, not by a migration: their
vector dimension is the embedder's, and the rows database need not be the metadata's."""

from __future__ import annotations

import hashlib
import logging
import math
import re
from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from pgvector.sqlalchemy import Vector
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from datawell.config import Settings
from datawell.storage.vectors import Hit, Point, stored_name

log = logging.getLogger(__name__)
# The HNSW graph's shape and search width, measured at 1,000,000 vectors on the idle machine
# (docs/decisions.md, "Issue 48: pgvector's index built whole" and "... searches from shared
# buffers"). pgvector keeps single-precision vectors and orders by them (no re-ranking step);
# each dataset is its own partition, so the width serves recall alone, not a filter that would
# drop candidates. A search reads its index through the server's shared_buffers, 1.6 times as
# slow when they cannot hold it, which `tell_if_unbuffered` says.
CONNECTIVITY = 16  # m: neighbours per node
EF_CONSTRUCTION = 64  # candidates kept while linking a vector (128: recall@10 0.965 at width 400, built 1.5x slower)
EF_SEARCH = 600  # hnsw.ef_search: recall@10 0.963-0.971, p50 23 ms with the index in shared_buffers (500: 0.957-0.963)
# maintenance_work_mem for building a partition's index, at least (a server's larger setting
# stays; DATAWELL_PGVECTOR_BUILD_MEMORY_MB): the graph is built in memory, about 2.2 KB a vector
# at 384 dimensions, and a graph that outgrows it is finished on disk, many times slower. Only
# what the graph needs is taken.
BUILD_MEMORY_MB: int = Settings.model_fields["pgvector_build_memory_mb"].default
WRITE_CHUNK = 1000  # points per INSERT statement (five parameters each, under asyncpg's 32,767)


def hnsw_index(relation: str) -> str:
    """The name of a partition's HNSW index (or of a table's, made before partitions had their own)."""
    return f"{relation}_hnsw"


async def has_hnsw_index(connection: AsyncConnection, relation: str) -> bool:
    """Whether `relation` has an HNSW index, of its own or inherited from its table."""
    query = (
        "SELECT EXISTS (SELECT 1 FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
        "JOIN pg_am a ON a.oid = c.relam WHERE i.indrelid = to_regclass(:relation) AND a.amname = 'hnsw')"
    )
    return bool(await connection.scalar(sa.text(query), {"relation": relation}))


async def build_hnsw_index(connection: AsyncConnection, relation: str, memory_mb: int = BUILD_MEMORY_MB) -> None:
    """`relation`'s HNSW index, built in one statement with at least `memory_mb` for its graph."""
    await connection.execute(
        sa.text(
            "SELECT set_config('maintenance_work_mem', "
            "(greatest(pg_size_bytes(current_setting('maintenance_work_mem')), :bytes) / 1024)::bigint::text, true)"
        ),
        {"bytes": memory_mb << 20},
    )
    await connection.exec_driver_sql(
        f'CREATE INDEX IF NOT EXISTS "{hnsw_index(relation)}" ON "{relation}" USING hnsw '
        f"(embedding vector_cosine_ops) WITH (m = {CONNECTIVITY}, ef_construction = {EF_CONSTRUCTION})"
    )
    # Statistics now, not when autovacuum comes round: a partition the planner still believes
    # small is searched by sorting every row (exact, and seconds at a million) instead of the index.
    await connection.exec_driver_sql(f'ANALYZE "{relation}"')
    await tell_if_unbuffered(connection, hnsw_index(relation))


async def tell_if_unbuffered(connection: AsyncConnection, index: str | None = None) -> None:
    """A warning in the log when `index` (by default the database's largest HNSW index) is larger
    than the server's shared_buffers: each search of it then reads its pages again through the
    operating system, 1.6 times as slow at a million vectors (docs/ingestion.md)."""
    largest = (
        "SELECT c.relname, pg_relation_size(c.oid) AS bytes, pg_size_bytes(current_setting('shared_buffers')) AS buffers "
        "FROM pg_class c JOIN pg_am a ON a.oid = c.relam "
        "WHERE a.amname = 'hnsw' AND (CAST(:index AS text) IS NULL OR c.relname = :index) ORDER BY bytes DESC LIMIT 1"
    )
    found = (await connection.execute(sa.text(largest), {"index": index})).first()
    if found and found.bytes > found.buffers:
        log.warning(
            "pgvector: the index %s (%d MB) is larger than the server's shared_buffers (%d MB), so each "
            "search of its dataset reads index pages again through the operating system (1.6 times as slow "
            "at a million vectors); a shared_buffers of a quarter of the server's memory, or at least the "
            "largest index's size, holds it (docs/ingestion.md)",
            found.relname,
            found.bytes >> 20,
            found.buffers >> 20,
        )


async def enable_pgvector(engine: AsyncEngine) -> str | None:
    """Make sure the database has the `vector` extension (created when the server offers it);
    None when it has, else why it cannot have it."""
    available = "SELECT 1 FROM pg_available_extensions WHERE name = 'vector'"
    for attempt in range(2):  # two processes starting at once: one creates it, the other sees it
        try:
            async with engine.begin() as connection:
                if await connection.scalar(sa.text("SELECT 1 FROM pg_extension WHERE extname = 'vector'")):
                    return None
                if not await connection.scalar(sa.text(available)):
                    return "its PostgreSQL server has no pgvector extension (no `vector` in pg_available_extensions)"
                await connection.execute(sa.text("CREATE EXTENSION IF NOT EXISTS vector"))
                return None
        except DBAPIError as exc:
            if attempt:
                return f"CREATE EXTENSION vector failed: {exc.orig}"
    return None


class PgVectorStore:
    """A `VectorStore` in PostgreSQL tables beside the rows (`engine`: the rows' engine)."""

    remote = True  # the database server holds the vectors; every process shares them

    def __init__(
        self, engine: AsyncEngine, dimension: int, *, space: str = "", build_memory_mb: int = BUILD_MEMORY_MB
    ) -> None:
        self.engine = engine
        self.dimension = dimension
        self.space = space
        self.build_memory_mb = build_memory_mb
        self._tables: dict[str, sa.Table] = {}
        self._made: set[str] = set()  # tables known to exist
        self._partitions: set[str] = set()  # partitions this process made or wrote to
        self._unindexed: set[str] = set()  # of those, the ones with no HNSW index yet (built by `flush`)

    def table(self, collection: str) -> sa.Table:
        """The table of `collection` (in this embedder's space); it may not exist yet."""
        name = _table_name(stored_name(collection, self.space))
        if name not in self._tables:
            self._tables[name] = sa.Table(
                name,
                sa.MetaData(),
                sa.Column("dataset_id", sa.Text, primary_key=True),
                sa.Column("id", sa.Text, primary_key=True),
                sa.Column("ingestion_id", sa.Text),
                sa.Column("payload", JSONB, nullable=False),
                sa.Column("embedding", Vector(self.dimension), nullable=False),
                postgresql_partition_by="LIST (dataset_id)",
            )
        return self._tables[name]

    async def _exists(self, connection: AsyncConnection, table: sa.Table) -> bool:
        if table.name not in self._made and await connection.scalar(sa.select(sa.func.to_regclass(table.name))):
            self._made.add(table.name)
        return table.name in self._made

    async def _make(self, connection: AsyncConnection, table: sa.Table, dataset_id: str) -> None:
        """The table and the dataset's partition, made if missing (under a lock: another process
        may be making them)."""
        partition = partition_name(table.name, dataset_id)
        if partition in self._partitions:
            return
        await connection.execute(sa.select(sa.func.pg_advisory_xact_lock(sa.func.hashtext(table.name))))
        if not await self._exists(connection, table):
            await connection.run_sync(table.create, checkfirst=True)
            await connection.exec_driver_sql(
                f'CREATE INDEX IF NOT EXISTS "{table.name}_attempt" ON "{table.name}" (dataset_id, ingestion_id)'
            )
            self._made.add(table.name)
        await connection.exec_driver_sql(
            f'CREATE TABLE IF NOT EXISTS "{partition}" PARTITION OF "{table.name}" '
            f"FOR VALUES IN ({_literal(dataset_id)})"
        )
        self._partitions.add(partition)
        if not await has_hnsw_index(connection, partition):
            self._unindexed.add(partition)

    # The VectorStore interface.

    async def upsert(self, collection: str, dataset_id: str, points: Sequence[Point]) -> None:
        if not points:
            return
        table = self.table(collection)
        excluded = pg_insert(table).excluded
        statement = pg_insert(table).on_conflict_do_update(
            index_elements=[table.c.dataset_id, table.c.id],
            set_={c: excluded[c] for c in ("ingestion_id", "payload", "embedding")},
        )
        values = [
            {
                "dataset_id": dataset_id,
                "id": p.id,
                "ingestion_id": p.payload.get("ingestion_id"),
                "payload": dict(p.payload),
                "embedding": [float(x) for x in p.vector],
            }
            for p in points
        ]
        for attempt in range(2):
            try:
                async with self.engine.begin() as connection:
                    await self._make(connection, table, dataset_id)
                    for start in range(0, len(values), WRITE_CHUNK):
                        await connection.execute(statement, values[start : start + WRITE_CHUNK])
                return
            except DBAPIError as exc:
                # Another process dropped the dataset (or the table) since this one made it.
                if attempt or "no partition of relation" not in str(exc.orig):
                    raise
                self._partitions.discard(partition_name(table.name, dataset_id))
                self._made.discard(table.name)

    async def search(self, collection: str, dataset_id: str, vector: Sequence[float], limit: int) -> list[Hit]:
        table = self.table(collection)
        distance = table.c.embedding.cosine_distance(_as_vector(vector))
        query = (
            sa.select(table.c.id, table.c.payload, distance)
            .where(table.c.dataset_id == sa.literal(dataset_id, literal_execute=True))  # prunes at planning
            .order_by(distance)
            .limit(limit)
        )
        async with self.engine.begin() as connection:
            if not await self._exists(connection, table):
                return []
            # Candidates the HNSW scan keeps (it returns no more than this many points); and a
            # plan made for this vector and limit each time: a prepared statement's generic plan
            # guesses the limit (a tenth of the rows) and may prefer sorting the whole partition.
            await connection.execute(
                sa.select(
                    sa.func.set_config("hnsw.ef_search", str(EF_SEARCH), True),
                    sa.func.set_config("plan_cache_mode", "force_custom_plan", True),
                )
            )
            rows = (await connection.execute(query)).all()
        return [Hit(i, _score(d), {**payload, "dataset_id": dataset_id}) for i, payload, d in rows]

    async def nearest(
        self,
        collection: str,
        vector: Sequence[float],
        limit: int,
        *,
        match: dict[str, str],
        exclude: dict[str, str] | None = None,
    ) -> list[Hit]:
        table = self.table(collection)
        where = [_payload(table, k) == v for k, v in match.items()]
        where += [_payload(table, k).is_distinct_from(v) for k, v in (exclude or {}).items()]
        # The function, not the `<=>` operator: no index serves it, so every point that passes
        # the filter is scored exactly and the top `limit` are complete.
        distance = sa.func.cosine_distance(table.c.embedding, sa.bindparam(None, vector, type_=Vector(self.dimension)))
        query = (
            sa.select(table.c.id, table.c.dataset_id, table.c.payload, distance)
            .where(*where)
            .order_by(distance)
            .limit(limit)
        )
        async with self.engine.connect() as connection:
            if not await self._exists(connection, table):
                return []
            rows = (await connection.execute(query)).all()
        return [Hit(i, _score(d), {**payload, "dataset_id": dataset}) for i, dataset, payload, d in rows]

    async def delete(self, collection: str, dataset_id: str, **match: str) -> int:
        async with self.engine.begin() as connection:
            return await self.drop(connection, collection, dataset_id, **match)

    async def drop(self, connection: AsyncConnection, collection: str, dataset_id: str, **match: str) -> int:
        """`delete` in the caller's transaction on the rows' database (a dataset's rows and its
        vectors go together). Without `match` the dataset's partition is dropped whole."""
        table = self.table(collection)
        if not await self._exists(connection, table):
            return 0
        if match:
            where = [table.c.dataset_id == dataset_id] + [_payload(table, k) == v for k, v in match.items()]
            return int((await connection.execute(sa.delete(table).where(*where))).rowcount)
        partition = partition_name(table.name, dataset_id)
        if not await connection.scalar(sa.select(sa.func.to_regclass(partition))):
            return 0
        count = await connection.scalar(sa.text(f'SELECT count(*) FROM "{partition}"'))
        await connection.exec_driver_sql(f'DROP TABLE "{partition}"')
        self._partitions.discard(partition)
        self._unindexed.discard(partition)
        return int(count or 0)

    async def count(self, collection: str, dataset_id: str) -> int:
        table = self.table(collection)
        async with self.engine.connect() as connection:
            if not await self._exists(connection, table):
                return 0
            query = sa.select(sa.func.count()).select_from(table).where(table.c.dataset_id == dataset_id)
            return int(await connection.scalar(query) or 0)

    async def size(self, collection: str) -> int:
        """Points in `collection`, over every dataset."""
        table = self.table(collection)
        async with self.engine.connect() as connection:
            if not await self._exists(connection, table):
                return 0
            return int(await connection.scalar(sa.select(sa.func.count()).select_from(table)) or 0)

    async def flush(self) -> None:
        """Each write commits in the database; the partitions written without an index get it
        now, one `CREATE INDEX` each (searches go on meanwhile, exactly; writes to that dataset wait)."""
        for partition in sorted(self._unindexed):
            async with self.engine.begin() as connection:
                await connection.execute(sa.select(sa.func.pg_advisory_xact_lock(sa.func.hashtext(partition))))
                if await connection.scalar(sa.select(sa.func.to_regclass(partition))) and not await has_hnsw_index(
                    connection, partition
                ):
                    await build_hnsw_index(connection, partition, self.build_memory_mb)
            self._unindexed.discard(partition)

    async def tell_if_unbuffered(self) -> None:
        """At start: a warning when the largest index is larger than shared_buffers (`tell_if_unbuffered`)."""
        async with self.engine.connect() as connection:
            await tell_if_unbuffered(connection)

    async def close(self) -> None:
        """The engine is the rows' own: their store disposes of it."""


def _table_name(stored: str) -> str:
    """`vectors_` and the collection's stored name in the characters an identifier keeps unquoted."""
    slug = re.sub(r"[^a-z0-9]+", "_", stored.lower()).strip("_")[:30]
    return f"vectors_{slug}"


def partition_name(table: str, dataset_id: str) -> str:
    """Under PostgreSQL's 63-byte names: a digest of the dataset's id (ids are any text)."""
    return f"{table}_{hashlib.sha256(dataset_id.encode()).hexdigest()[:16]}"


def _literal(value: str) -> str:
    """A string constant for DDL, which takes no parameters (standard_conforming_strings is on)."""
    return "'" + value.replace("'", "''") + "'"


def _payload(table: sa.Table, key: str) -> sa.ColumnElement[Any]:
    """A payload value as the SQL reads it: the dataset and the attempt have columns of their own."""
    if key in ("dataset_id", "ingestion_id"):
        return table.c[key]
    return table.c.payload[key].astext


def _as_vector(vector: Sequence[float]) -> list[float]:
    return [float(x) for x in vector]


def _score(distance: float | None) -> float:
    """Cosine similarity; a zero vector has no direction (pgvector's distance is NaN): 0."""
    return 0.0 if distance is None or math.isnan(distance) else 1.0 - float(distance)
