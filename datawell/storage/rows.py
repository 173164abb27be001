"""Dataset rows: one real SQL table per dataset (columns = `__id`, the schema's fields,
`__ingestion_id`, `__source`; tables made before issue 19 have the internal columns first).

An ingestion writes into its own staging table; `publish` makes the rows visible in one
transaction: the staging table is renamed to the dataset's table when that has no rows
yet (no row is copied), else its rows are appended and it is dropped. So a failed or
killed attempt leaves nothing visible, and taking an attempt again starts from an empty
stage.

A staging table holds `__id` and the fields only. `__ingestion_id` and `__source` are the
same for all of its rows, so publishing adds them as columns whose default is that value:
SQLite and PostgreSQL keep such a default once, in the schema, for every row written before
the column was added, so the rows' bytes are written once, without them (a third of each
row's bytes in the bench's file). Every insert into a dataset's table names both values.

`__id` is a time-ordered UUID unique by construction (`storage.bulk`); tables carry no
index on it, so bulk writes only append to the table itself."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from datawell.storage.arrow_values import arrow_rows
from datawell.storage.bulk import (
    SqliteProcessWriter,
    Stage,
    Writer,
    WriterProcess,
    as_tuples,
    id_prefix,
    open_writer,
    row_ids,
    sqlite_path,
    staged,
)
from datawell.storage.db import create_engine, has_table
from datawell.storage.row_tables import (
    add_origin,
    dataset_columns,
    drop_origin_defaults,
    stage_table,
    staging_name,
    table_for,
)
from datawell.storage.tables import Dataset

log = logging.getLogger(__name__)
SQLITE_AUTOCHECKPOINT_PAGES = 1000  # SQLite's default
WRITER_RETRY_SECONDS = 60.0  # a writer process that ended before it started is not started again sooner


@dataclass(frozen=True)
class Published:
    rows: int
    renamed: bool  # the stage became the dataset's table (it had no rows); else appended to it


class RowStore:
    """Reads and writes dataset rows in the rows database."""

    def __init__(self, url: str) -> None:
        self.engine: AsyncEngine = create_engine(url)
        self.path = sqlite_path(url)  # a SQLite file: large stages may go to a writer process
        self.writer_process: WriterProcess | None = None  # started, free for the next large stage
        self.large_writers = 0  # large stages being written (each by a writer process of its own)
        self.writer_retry_at = 0.0  # (monotonic) a writer process that failed to start is not restarted before
        self.checkpointing: asyncio.Task[None] | None = None

    def prepare_writer(self) -> WriterProcess | None:
        """Start the writer process of large SQLite stages now, if none is free, so that an
        attempt does not wait for its start (the worker calls this when it starts and between
        attempts); the free one, if any."""
        if self.writer_process is not None and not self.writer_process.alive():
            ended, self.writer_process = self.writer_process, None
            ended.stop()  # reap it
            if not ended.ready:  # it never started: not again before a minute has passed
                self.writer_retry_at = time.monotonic() + WRITER_RETRY_SECONDS
        # None is started while a large stage is being written: its process is all that one needs,
        # and a spare's 65 MB would count in that request's memory (issue 26); a second large
        # stage at the same time starts its own.
        idle = self.writer_process is None and not self.large_writers
        if self.path is not None and idle and time.monotonic() >= self.writer_retry_at:
            self.writer_process = WriterProcess(self.path)
        return self.writer_process

    async def connect(self) -> None:
        """Open a connection to the rows database now and keep it pooled: the first one takes
        20 ms (a thread, the file, the pragmas), which the worker's first stage need not wait."""
        async with self.engine.connect() as connection:
            await connection.exec_driver_sql("SELECT 1")

    def writer_ready(self) -> bool:
        """Whether a writer process has been started and is free: a stage of a few MB is then
        worth giving it (without one, only files of `ingest_bulk_process_bytes`)."""
        return self.writer_process is not None and self.writer_process.alive()

    def take_writer_process(self) -> WriterProcess | None:
        taken, self.writer_process = self.writer_process, None
        return taken

    def free_writer_process(self, child: WriterProcess) -> None:
        if self.writer_process is None:
            self.writer_process = child
        else:  # two large stages ran at once: one free process is enough
            child.stop()

    @property
    def dialect(self) -> str:
        return self.engine.dialect.name

    def table(self, dataset: Dataset) -> sa.Table:
        return table_for(dataset.table_name, dataset_columns(dataset))

    async def ensure_table(self, dataset: Dataset) -> sa.Table:
        table = self.table(dataset)
        try:
            async with self.engine.begin() as connection:
                await connection.run_sync(lambda c: table.create(c, checkfirst=True))
        except sa.exc.DBAPIError:
            # Two ingestions of a new dataset publishing at once: both checked, one created it.
            async with self.engine.connect() as connection:
                if not await has_table(connection, table.name):
                    raise
        return table

    async def stage(self, dataset: Dataset, ingestion_id: str, types: Mapping[str, str] | None = None) -> None:
        """A fresh, empty staging table for this ingestion (dropping any left by a dead worker),
        with the dataset's column types or `types`."""
        staged = stage_table(staging_name(ingestion_id), types or dataset_columns(dataset))
        async with self.engine.begin() as connection:
            await connection.run_sync(lambda c: staged.drop(c, checkfirst=True))
            await connection.run_sync(lambda c: staged.create(c))

    def writer(self, ingestion_id: str, *, large: bool = False) -> StageWriter:
        """A bulk writer into the ingestion's staging table; close it when done. `large`:
        many rows will come, worth a writer with a start-up cost."""
        return StageWriter(self, staging_name(ingestion_id), large)

    async def write(self, dataset: Dataset, ingestion_id: str, rows: Sequence[Mapping[str, Any]]) -> list[str]:
        """Append a batch of rows (field name -> value, already of the fields' types) to the
        ingestion's staging table; returns the rows' `__id`s in order."""
        writer = self.writer(ingestion_id)
        try:
            await writer.append(arrow_rows(rows, dataset_columns(dataset)))
        finally:
            await writer.close()
        return row_ids(writer.stage.prefix, 0, len(rows)).to_pylist()

    async def publish(self, dataset: Dataset, ingestion_id: str, *, source: str, rows: int | None = None) -> Published:
        """Make the staged rows visible, atomically, as rows of `source` (the file's name); how
        many there were, and whether the stage became the dataset's table (then the table
        holds exactly the staged rows). `rows`: how many the stage holds, when its writer
        counted them as they were committed (else counted here: 10 ms for 100,000 rows)."""
        table = self.table(dataset)
        staged = table_for(staging_name(ingestion_id), dataset_columns(dataset))
        async with self.engine.connect() as connection:
            # SQLite: this commit syncs the log, which holds the stage's rows (the writer
            # process does not copy it into the database: `sqlite_ingest`); `checkpoint` does
            # that after the attempt's end, instead of this commit.
            await self._autocheckpoint(connection, 0)
            try:
                async with connection.begin():
                    return await self._publish(connection, table, staged, ingestion_id, source, rows)
            finally:
                await self._autocheckpoint(connection, SQLITE_AUTOCHECKPOINT_PAGES)

    async def _autocheckpoint(self, connection: AsyncConnection, pages: int) -> None:
        if self.dialect == "sqlite":
            await connection.exec_driver_sql(f"PRAGMA wal_autocheckpoint={pages}")
            await connection.commit()  # a pragma begins no transaction; SQLAlchemy's has ended

    async def _publish(
        self,
        connection: AsyncConnection,
        table: sa.Table,
        staged: sa.Table,
        ingestion_id: str,
        source: str,
        rows: int | None,
    ) -> Published:
        # One publisher of a dataset at a time, so "the table is empty: take the stage's
        # place" holds until the rename commits (and drop + rename commit together:
        # Python's sqlite3 would run the DDL outside a transaction).
        if self.dialect == "sqlite":
            await connection.exec_driver_sql("BEGIN IMMEDIATE")
        elif self.dialect == "postgresql":
            await connection.execute(sa.select(sa.func.pg_advisory_xact_lock(sa.func.hashtext(table.name))))
        if (count := rows) is None:
            count = (await connection.execute(sa.select(sa.func.count()).select_from(staged))).scalar_one()
        await connection.run_sync(add_origin, staged.name, ingestion_id, source)
        # The dataset's first rows: the stage takes the place of its table (none yet, or empty).
        exists = await has_table(connection, table.name)
        if (
            not exists
            or (await connection.execute(sa.select(sa.literal(1)).select_from(table).limit(1))).first() is None
        ):
            if exists:
                await connection.run_sync(lambda c: table.drop(c))
            await connection.exec_driver_sql(f'ALTER TABLE "{staged.name}" RENAME TO "{table.name}"')
            await connection.run_sync(drop_origin_defaults, table.name)
            return Published(int(count), renamed=True)
        # The rows of an attempt that published before its worker died are not published twice.
        await connection.execute(table.delete().where(table.c["__ingestion_id"] == ingestion_id))
        columns = [c.name for c in staged.columns]
        await connection.execute(table.insert().from_select(columns, sa.select(*staged.columns)))
        await connection.run_sync(lambda c: staged.drop(c))
        return Published(int(count), renamed=False)

    def checkpoint_soon(self) -> None:
        """SQLite: copy the write-ahead log into the database in the background (PASSIVE: it
        waits for no reader or writer), once an attempt has ended: its stage was written to
        the log and synced there by the publish commit, so the copy is no longer on the way
        to SUCCEEDED. A copy already running is not started twice."""
        if self.dialect == "sqlite" and (self.checkpointing is None or self.checkpointing.done()):
            self.checkpointing = asyncio.create_task(self.checkpoint())

    async def checkpoint(self) -> None:
        try:
            async with self.engine.connect() as connection:
                await connection.exec_driver_sql("PRAGMA wal_checkpoint(PASSIVE)")
        except sa.exc.DBAPIError:  # the next one copies what this one could not
            log.warning("checkpointing the rows database failed", exc_info=True)

    async def published_after(
        self, dataset: Dataset, ingestion_id: str, fields: Sequence[str], after: str, limit: int
    ) -> list[tuple[str, tuple[Any, ...]]]:
        """(__id, values of `fields`) of up to `limit` published rows of one ingestion whose
        ids follow `after`, in id order: the order the rows were read in."""
        table = self.table(dataset)
        query = (
            sa.select(table.c["__id"], *(table.c[f] for f in fields))
            .where(table.c["__ingestion_id"] == ingestion_id, table.c["__id"] > after)
            .order_by(table.c["__id"])
            .limit(limit)
        )
        async with self.engine.connect() as connection:
            return [(row[0], tuple(row[1:])) for row in await connection.execute(query)]

    async def staged_ids(self, dataset: Dataset, ingestion_id: str) -> list[tuple[str, dict[str, Any]]]:
        """(__id, row) of every staged row, for embedding before publication."""
        staged = stage_table(staging_name(ingestion_id), dataset_columns(dataset))
        async with self.engine.connect() as connection:
            result = await connection.execute(sa.select(staged))
            return [(row["__id"], dict(row)) for row in result.mappings()]

    async def discard(self, dataset: Dataset, ingestion_id: str) -> None:
        staged = stage_table(staging_name(ingestion_id), dataset_columns(dataset))
        async with self.engine.begin() as connection:
            await connection.run_sync(lambda c: staged.drop(c, checkfirst=True))

    async def unpublish(self, dataset: Dataset, ingestion_id: str) -> int:
        """Delete the published rows of one ingestion (cancelled as it published); how many."""
        table = self.table(dataset)
        return await self._delete(table, table.c["__ingestion_id"] == ingestion_id)

    async def clear(self, dataset: Dataset, connection: AsyncConnection | None = None) -> int:
        """Delete every row of the dataset; returns how many. In `connection`'s transaction when
        given (the dataset's vectors beside the rows go in it too: `lifecycle.clear_dataset`)."""
        if connection is not None:
            return await _delete(connection, self.table(dataset))
        return await self._delete(self.table(dataset))

    async def _delete(self, table: sa.Table, where: sa.ColumnElement[bool] | None = None) -> int:
        async with self.engine.begin() as connection:
            return await _delete(connection, table, where)

    async def count(self, dataset: Dataset) -> int:
        table = self.table(dataset)
        async with self.engine.connect() as connection:
            if not await has_table(connection, table.name):
                return 0
            return int((await connection.execute(sa.select(sa.func.count()).select_from(table))).scalar_one())

    async def close(self) -> None:
        if self.checkpointing is not None:
            await self.checkpointing
        if (child := self.take_writer_process()) is not None:
            await asyncio.to_thread(child.stop)
        await self.engine.dispose()


async def _delete(connection: AsyncConnection, table: sa.Table, where: sa.ColumnElement[bool] | None = None) -> int:
    """Delete the rows `where` holds for (all of them without); how many. A dataset that never
    had rows has no table yet: nothing to delete."""
    if not await has_table(connection, table.name):
        return 0
    statement = table.delete() if where is None else table.delete().where(where)
    return int((await connection.execute(statement)).rowcount or 0)


class StageWriter:
    """Appends Arrow batches of typed field values to one staging table; the bulk writer gives
    each row its `__id` (`bulk.staged`)."""

    def __init__(self, store: RowStore, table: str, large: bool) -> None:
        self.large = large
        self.store = store
        self.stage = Stage(table, id_prefix(), store.dialect)
        self.written = 0
        self.bulk: Writer | None = None
        self.opened = False

    async def append(self, batch: pa.RecordBatch) -> None:
        """Write `batch` (one column per field, of the field's Arrow type)."""
        first, count = self.written, batch.num_rows
        self.written += count
        if count == 0:
            return
        await self.open()
        if self.bulk is not None:
            await asyncio.to_thread(self.bulk.append, batch, first)
            return
        full = staged(batch, self.stage, first)
        names = ", ".join(f'"{n}"' for n in full.schema.names)
        statement = f'INSERT INTO "{self.stage.table}" ({names}) VALUES ({", ".join("?" * full.num_columns)})'
        async with self.store.engine.begin() as connection:
            await connection.exec_driver_sql(statement, as_tuples(full))  # type: ignore[arg-type]

    async def open(self) -> None:
        """Start the bulk writer (a child process for large SQLite files) now rather than at the
        first batch, so its start-up overlaps other work."""
        if not self.opened:
            url = self.store.engine.url.render_as_string(hide_password=False)
            child = self.store.take_writer_process() if self.large else None
            self.opened = True
            self.store.large_writers += self.large
            bulk = await asyncio.to_thread(open_writer, url, self.stage, large=self.large, child=child)
            self.bulk = bulk

    async def close(self) -> None:
        try:
            if self.bulk is not None:
                bulk, self.bulk = self.bulk, None
                await asyncio.to_thread(bulk.close)
                if isinstance(bulk, SqliteProcessWriter) and (child := bulk.free()) is not None:
                    self.store.free_writer_process(child)
        finally:
            if self.opened and self.large:
                self.store.large_writers -= 1
                self.large = False  # counted once, however often it is closed
