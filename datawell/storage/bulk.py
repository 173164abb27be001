"""Bulk writes of Arrow batches into a staging table, and the rows' ids.

PostgreSQL takes Arrow batches through the Apache Arrow ADBC driver: binary COPY built in
C, with no Python object per value. SQLite takes large files through the ADBC SQLite driver
in a child process, small ones through the standard library's `sqlite3` (`executemany` of
one prepared INSERT, one transaction per batch): the ADBC driver bundles its own copy of
SQLite, and two copies of SQLite in one process break each other's file locks (its
connections stopped seeing the other's commits in a test). Each call of a writer blocks:
run it in a thread. A database neither can reach
(SQLite in memory, other dialects) gets the rows through the SQLAlchemy connection.

Row ids are time-ordered UUIDs (version 7 layout): 48 bits of milliseconds, 34 random bits
drawn once per attempt run, then a 40-bit row counter. Ids of one attempt ascend in the
order rows were read, so an index on them would only ever append, and they are made with
Arrow kernels, not a Python string per row."""

from __future__ import annotations

import contextlib
import os
import queue
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import adbc_driver_manager as adbc
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.ipc as ipc

COUNTER_DIGITS = 10  # hex digits of the row counter: 40 bits
_HEX = np.frombuffer(b"0123456789abcdef", dtype=np.uint8)


def id_prefix() -> str:
    """The first 26 characters of every id of one attempt run: time, version, random bits."""
    millis = time.time_ns() // 1_000_000
    rand = int.from_bytes(os.urandom(5), "big")  # 40 bits, 34 of them used
    a, b, c = rand & 0xFFF, (rand >> 12) & 0x3FFF, (rand >> 26) & 0xFF
    stamp = f"{millis & (1 << 48) - 1:012x}"
    return f"{stamp[:8]}-{stamp[8:]}-7{a:03x}-{0x8000 | b:04x}-{c:02x}"


def row_ids(prefix: str, first: int, count: int) -> pa.Array:
    """Ids for rows number `first` .. `first + count - 1` of the attempt run named by `prefix`:
    fixed-width text, so the bytes are laid out in one NumPy array and handed to Arrow whole."""
    head = np.frombuffer(prefix.encode("ascii"), dtype=np.uint8)
    numbers = np.arange(first, first + count, dtype=np.uint64)
    shifts = np.arange(4 * (COUNTER_DIGITS - 1), -1, -4, dtype=np.uint64)
    digits = _HEX[((numbers[:, None] >> shifts) & np.uint64(0xF)).astype(np.uint8)]
    width = len(head) + COUNTER_DIGITS
    data = np.empty((count, width), dtype=np.uint8)
    data[:, : len(head)] = head
    data[:, len(head) :] = digits
    offsets = np.arange(0, (count + 1) * width, width, dtype=np.int32)
    return pa.StringArray.from_buffers(count, pa.py_buffer(offsets), pa.py_buffer(data))


def return_freed_arrow_memory() -> None:
    """Arrow's buffers from jemalloc with its decay at 0, so pages Arrow frees go back to the
    system at once (process-wide: called as the service and the writer process start). The
    default, mimalloc, keeps what a thread freed for that thread to reuse: the CSV reader's and
    the writer's threads each held their own, and a 3,000,000-row ingestion kept ≈ 100 MB more
    at its peak (issue 26, docs/decisions.md). A pyarrow built without jemalloc keeps its default."""
    try:
        pool = pa.jemalloc_memory_pool()
    except NotImplementedError:
        return
    pa.set_memory_pool(pool)
    pa.jemalloc_set_decay_ms(0)


@dataclass(frozen=True)
class Stage:
    """One attempt run's staging table, and what its writer adds to every row."""

    table: str
    prefix: str  # of the rows' ids (`id_prefix`)
    dialect: str


def staged(batch: pa.RecordBatch, stage: Stage, first: int) -> pa.RecordBatch:
    """`batch` (one column per field) with the rows' ids in front, as the staging table keeps
    it; `first`: the attempt run's number of its first row. (The ingestion id and source are
    the same for every row of a stage: publishing adds them as column defaults, stored once.)"""
    ids = row_ids(stage.prefix, first, batch.num_rows)
    staged = pa.RecordBatch.from_arrays([ids, *batch.columns], names=["__id", *batch.schema.names])
    return for_backend(staged, stage.dialect)


def execute(connection: adbc.AdbcConnection, sql: str) -> None:
    with adbc.AdbcStatement(connection) as statement:
        statement.set_sql_query(sql)
        statement.execute_update()


def append(connection: adbc.AdbcConnection, table: str, data: Any) -> None:
    """Append `data` (Arrow: a table, a batch reader) to `table` through an ADBC driver. The
    driver manager's low-level API, not its DB-API module: that imports pyarrow.dataset and
    pandas, 0.6 s of start-up on a core the ingestion is parsing with."""
    with adbc.AdbcStatement(connection) as statement:
        mode = {adbc.INGEST_OPTION_TARGET_TABLE: table, adbc.INGEST_OPTION_MODE: adbc.INGEST_OPTION_MODE_APPEND}
        statement.set_options(**mode)
        statement.bind_stream(data)
        statement.execute_update()


class SqliteWriter:
    def __init__(self, path: str, stage: Stage) -> None:
        import sqlite3

        self.stage = stage
        self.connection = sqlite3.connect(path, timeout=30, isolation_level=None, check_same_thread=False)
        # A staging table needs no durability before it is published (publishing commits
        # durably; a crash before that starts the attempt from an empty stage).
        self.connection.execute("PRAGMA synchronous=NORMAL")

    def append(self, batch: pa.RecordBatch, first: int) -> None:
        full = staged(batch, self.stage, first)
        names = ", ".join(f'"{n}"' for n in full.schema.names)
        statement = f'INSERT INTO "{self.stage.table}" ({names}) VALUES ({", ".join("?" * full.num_columns)})'
        self.connection.execute("BEGIN")
        self.connection.executemany(statement, zip(*(column.to_pylist() for column in full.columns), strict=True))
        self.connection.execute("COMMIT")

    def close(self) -> None:
        self.connection.close()


class WriterProcess:
    """A child process (`storage.sqlite_ingest`) that appends Arrow batches to one SQLite
    database with the ADBC driver. It serves one stage after another: started once (an
    interpreter, pyarrow and the driver: 0.3 s), ahead of the first stage when the worker
    starts (`RowStore.prepare_writer`), and kept between attempts."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.process = subprocess.Popen(
            [sys.executable, "-m", "datawell.storage.sqlite_ingest", path],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        self.ready = False  # it said it has started (its first line)

    def alive(self) -> bool:
        return self.process.poll() is None

    def wait_ready(self) -> bool:
        """Wait until the child has started; False when it did not."""
        assert self.process.stdout is not None
        if not self.ready:
            self.ready = self.process.stdout.readline() == b"ready\n"
        return self.ready

    def stop(self) -> None:
        """End the child: it stops at the end of its input."""
        if self.process.stdin is not None and not self.process.stdin.closed:
            with contextlib.suppress(BrokenPipeError):
                self.process.stdin.close()
        try:
            self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


class SqliteProcessWriter:
    """Arrow batches to the ADBC SQLite driver in a child process (`WriterProcess`): about
    twice as fast as `executemany`, and off this process's core. The child adds the rows'
    ids, and one batch is written there while the next is sent, so the two processes work at
    once: the acknowledgement of a batch is awaited only when the one after it has been sent.
    After `close` the child is free for the next stage (`child`), unless it failed."""

    def __init__(self, path: str, stage: Stage, child: WriterProcess | None = None) -> None:
        self.stage = stage
        self.unacknowledged = 0
        self.failure: RuntimeError | None = None  # the child's error, once it has been stopped
        self.child = child if child is not None and child.alive() else WriterProcess(path)
        self.process = self.child.process

    def append(self, batch: pa.RecordBatch, first: int) -> None:
        assert self.process.stdin is not None
        if self.failure is not None:
            raise self.failure
        metadata = {"table": self.stage.table, "prefix": self.stage.prefix, "first": str(first)}
        schema = batch.schema.with_metadata(metadata)
        try:
            with ipc.new_stream(self.process.stdin, schema) as stream:
                stream.write_batch(batch.replace_schema_metadata(schema.metadata))
            self.process.stdin.flush()
        except BrokenPipeError:
            raise self._failed() from None
        self.unacknowledged += 1
        while self.unacknowledged > 1:
            self._acknowledged()

    def _acknowledged(self) -> None:
        assert self.process.stdout is not None
        if not self.child.wait_ready() or self.process.stdout.readline() != b"ok\n":
            raise self._failed()
        self.unacknowledged -= 1

    def _failed(self) -> RuntimeError:
        """Stop the child and keep its error: nothing it was sent will be acknowledged now."""
        self.process.kill()
        _, errors = self.process.communicate()
        self.unacknowledged = 0
        self.failure = RuntimeError(f"the SQLite writer process failed: {errors.decode(errors='replace')[-2000:]}")
        return self.failure

    def close(self) -> None:
        """Wait until every batch is committed; a failure not reported yet is raised here."""
        if self.failure is not None:
            return  # already raised by `append`
        while self.unacknowledged:
            self._acknowledged()

    def free(self) -> WriterProcess | None:
        """The child, for the next stage, once this writer closed without a failure."""
        return self.child if self.failure is None and self.child.alive() else None


class PostgresWriter:
    """Every batch of a stage goes to the server in one binary COPY: the ADBC driver ingests a
    stream of batches that a thread of its own reads from a short queue, so the server loads
    batch k while this process parses and types the next ones (one COPY per batch made each
    wait for the other, and paid the COPY's start-up twenty times for a million rows)."""

    QUEUED = 2  # batches waiting for the COPY: bounds memory, keeps the server busy

    def __init__(self, uri: str, stage: Stage) -> None:
        import adbc_driver_postgresql

        self.stage = stage
        self.database = adbc_driver_postgresql.connect(uri)
        self.connection = adbc.AdbcConnection(self.database)  # autocommit: the COPY is one transaction
        self.queue: queue.Queue[pa.RecordBatch | None] = queue.Queue(self.QUEUED)
        self.copying: threading.Thread | None = None
        self.failure: BaseException | None = None

    def append(self, batch: pa.RecordBatch, first: int) -> None:
        full = staged(batch, self.stage, first)
        if self.copying is None:
            self.copying = threading.Thread(target=self._copy, args=(full.schema,), daemon=True)
            self.copying.start()
        if not self._hand_over(self.copying, full):
            raise self._failed() from self.failure

    def _hand_over(self, copying: threading.Thread, item: pa.RecordBatch | None) -> bool:
        """Queue `item` for the COPY (None ends it); False when the COPY has stopped."""
        while copying.is_alive():
            try:
                self.queue.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def _failed(self) -> RuntimeError:
        return RuntimeError(f"the COPY into PostgreSQL failed: {self.failure}")

    def _copy(self, schema: pa.Schema) -> None:
        def batches() -> Iterator[pa.RecordBatch]:
            while (batch := self.queue.get()) is not None:
                yield batch

        try:
            append(self.connection, self.stage.table, pa.RecordBatchReader.from_batches(schema, batches()))
        except BaseException as exc:  # reported by the next append, or by close
            self.failure = exc

    def close(self) -> None:
        """End the COPY and wait until the server has committed every batch sent."""
        try:
            if self.copying is not None:
                self._hand_over(self.copying, None)
                self.copying.join()
        finally:
            self.connection.close()
            self.database.close()
        if self.failure is not None:
            raise self._failed() from self.failure


Writer = SqliteWriter | SqliteProcessWriter | PostgresWriter


def sqlite_path(url: str) -> str | None:
    """The file of a SQLite database SQLAlchemy `url` names, or None (another database, or
    one in memory)."""
    from sqlalchemy.engine import make_url  # here: the SQLite writer process starts without SQLAlchemy

    parsed = make_url(url)
    path = parsed.database
    if parsed.get_backend_name() != "sqlite" or not path or path == ":memory:" or path.startswith("file:"):
        return None
    return path


def open_writer(url: str, stage: Stage, *, large: bool, child: WriterProcess | None = None) -> Writer | None:
    """A bulk writer into `stage` in the database SQLAlchemy `url` names, or None when there is
    none for it. `large`: worth a writer process (SQLite): `child`, or one started now."""
    from sqlalchemy.engine import make_url

    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        path = sqlite_path(url)
        if path is None:
            return None
        return SqliteProcessWriter(path, stage, child) if large else SqliteWriter(path, stage)
    if parsed.get_backend_name() == "postgresql":
        return PostgresWriter(parsed.set(drivername="postgresql").render_as_string(hide_password=False), stage)
    return None


def for_backend(batch: pa.RecordBatch, dialect: str) -> pa.RecordBatch:
    """Timestamps as each store keeps them: SQLite as SQLAlchemy's text (UTC, no zone, so reads
    parse them back), PostgreSQL as `timestamptz`."""
    columns = []
    for column in batch.columns:
        if pa.types.is_timestamp(column.type):
            stamps = column.cast(pa.timestamp("us"))
            column = pc.cast(stamps, pa.string()) if dialect == "sqlite" else stamps.cast(pa.timestamp("us", "UTC"))
        columns.append(column)
    return pa.RecordBatch.from_arrays(columns, names=batch.schema.names)


def as_tuples(batch: pa.RecordBatch) -> list[tuple[Any, ...]]:
    """The batch's rows as Python tuples, for a driver without Arrow ingest."""
    columns: Sequence[list[Any]] = [column.to_pylist() for column in batch.columns]
    return list(zip(*columns, strict=True))
