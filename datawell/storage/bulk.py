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

import os
import subprocess
import sys
import time
from collections.abc import Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.ipc as ipc
from sqlalchemy.engine import make_url

_HEX4 = pa.array([f"{i:04x}" for i in range(1 << 16)])


def id_prefix() -> str:
    """The first 26 characters of every id of one attempt run: time, version, random bits."""
    millis = time.time_ns() // 1_000_000
    rand = int.from_bytes(os.urandom(5), "big")  # 40 bits, 34 of them used
    a, b, c = rand & 0xFFF, (rand >> 12) & 0x3FFF, (rand >> 26) & 0xFF
    stamp = f"{millis & (1 << 48) - 1:012x}"
    return f"{stamp[:8]}-{stamp[8:]}-7{a:03x}-{0x8000 | b:04x}-{c:02x}"


def row_ids(prefix: str, first: int, count: int) -> pa.Array:
    """Ids for rows number `first` .. `first + count - 1` of the attempt run named by `prefix`."""
    import numpy as np

    numbers = np.arange(first, first + count, dtype=np.uint64)
    digits = [pc.take(_HEX4, pa.array((numbers >> np.uint64(shift)) & np.uint64(0xFFFF))) for shift in (32, 16, 0)]
    counter = pc.utf8_slice_codeunits(pc.binary_join_element_wise(*digits, ""), 2)
    return pc.binary_join_element_wise(pa.scalar(prefix), counter, "")


class SqliteWriter:
    def __init__(self, path: str) -> None:
        import sqlite3

        self.connection = sqlite3.connect(path, timeout=30, isolation_level=None, check_same_thread=False)
        # A staging table needs no durability before it is published (publishing commits
        # durably; a crash before that starts the attempt from an empty stage).
        self.connection.execute("PRAGMA synchronous=NORMAL")

    def append(self, table: str, batch: pa.RecordBatch) -> None:
        names = ", ".join(f'"{n}"' for n in batch.schema.names)
        statement = f'INSERT INTO "{table}" ({names}) VALUES ({", ".join("?" * batch.num_columns)})'
        self.connection.execute("BEGIN")
        self.connection.executemany(statement, zip(*(column.to_pylist() for column in batch.columns), strict=True))
        self.connection.execute("COMMIT")

    def close(self) -> None:
        self.connection.close()


class SqliteProcessWriter:
    """Arrow batches to the ADBC SQLite driver in a child process (`storage.sqlite_ingest`):
    about twice as fast as `executemany`, for the cost of starting the process."""

    def __init__(self, path: str) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "datawell.storage.sqlite_ingest", path],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )

    def append(self, table: str, batch: pa.RecordBatch) -> None:
        assert self.process.stdin is not None and self.process.stdout is not None
        schema = batch.schema.with_metadata({"table": table})
        try:
            with ipc.new_stream(self.process.stdin, schema) as stream:
                stream.write_batch(batch.replace_schema_metadata(schema.metadata))
            self.process.stdin.flush()
            acknowledged = self.process.stdout.readline() == b"ok\n"
        except BrokenPipeError:
            acknowledged = False
        if not acknowledged:
            raise RuntimeError(f"the SQLite writer process failed: {self._errors()}")

    def _errors(self) -> str:
        self.process.kill()
        _, errors = self.process.communicate()
        return errors.decode(errors="replace")[-2000:]

    def close(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()
        if self.process.wait() != 0:
            raise RuntimeError(f"the SQLite writer process failed: {self._errors()}")


class PostgresWriter:
    def __init__(self, uri: str) -> None:
        import adbc_driver_postgresql.dbapi as postgresql

        self.connection: Any = postgresql.connect(uri)

    def append(self, table: str, batch: pa.RecordBatch) -> None:
        with self.connection.cursor() as cursor:
            cursor.adbc_ingest(table, batch, mode="append")
        self.connection.commit()

    def close(self) -> None:
        self.connection.close()


Writer = SqliteWriter | SqliteProcessWriter | PostgresWriter


def open_writer(url: str, *, large: bool) -> Writer | None:
    """A bulk writer into the database SQLAlchemy `url` names, or None when there is none for
    it. `large`: worth starting a process for (SQLite)."""
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        path = parsed.database
        if not path or path == ":memory:" or path.startswith("file:"):
            return None
        return SqliteProcessWriter(path) if large else SqliteWriter(path)
    if parsed.get_backend_name() == "postgresql":
        return PostgresWriter(parsed.set(drivername="postgresql").render_as_string(hide_password=False))
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
