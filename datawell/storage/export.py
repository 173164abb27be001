"""Exports: the rows of one checked query written as JSON Lines, CSV or Parquet by a child
process, and streamed from its stdout without holding the rows in the server's memory.

The child reads Arrow batches straight from the store through an ADBC driver (SQLite: its own
copy of SQLite, which must not share a process with the server's, see `storage.bulk`;
PostgreSQL: a binary COPY of the query) and writes each batch as it comes, so the export
costs the server one pipe's worth of memory and runs on the other core. It only ever runs
SQL the query language's checker produced (`tools.rows`), on a read-only connection (SQLite)
or in a read-only transaction as the sandbox's role for the tables read (PostgreSQL).

    python -m datawell.storage.export   (an `ExportJob` as JSON on stdin)"""

from __future__ import annotations

import asyncio
import json
import queue
import sys
import threading
from collections.abc import AsyncIterator, Iterator
from dataclasses import asdict, dataclass, field
from datetime import date, datetime
from typing import Any, BinaryIO, Literal

import adbc_driver_manager as adbc
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

Format = Literal["jsonl", "csv", "parquet"]
MEDIA_TYPES: dict[str, str] = {
    "jsonl": "application/x-ndjson",
    "csv": "text/csv",
    "parquet": "application/vnd.apache.parquet",
}
CHUNK = 1 << 16  # bytes read from the child at a time
BATCH_ROWS = 65536  # rows a batch (and a Parquet row group) holds at most
BATCH_BYTES = 4 << 20  # PostgreSQL: about how large a batch the driver reads
# What each field type is in the file; SQLite hands booleans as integers and timestamps as text.
FILE_TYPES: dict[str, pa.DataType] = {
    "integer": pa.int64(),
    "real": pa.float64(),
    "text": pa.string(),
    "boolean": pa.bool_(),
    "timestamp": pa.timestamp("us", "UTC"),
}
# SQLite: one first row of these values fixes the driver's type for each column (it infers a
# column's type from its first values, and fails on a later text in a column it began as nulls).
_SEED: dict[str, str] = {"integer": "0", "real": "0.0", "text": "''", "boolean": "0", "timestamp": "''"}


@dataclass(frozen=True)
class ExportJob:
    url: str  # the rows database, as SQLAlchemy names it
    sql: str  # checked and compiled; reads `columns` among others
    columns: dict[str, str]  # file column -> field type, in file order
    format: Format
    setup: list[str] = field(default_factory=list)  # PostgreSQL: run first in the read-only transaction


def export_sql(job: ExportJob, dialect: str) -> str:
    """The job's query narrowed to its columns (SQLite: after a seed row the child drops)."""
    names = ", ".join(_quoted(c) for c in job.columns)
    narrowed = f"SELECT {names} FROM ({job.sql}) AS export_rows"
    if dialect != "sqlite":
        return narrowed
    seed = ", ".join(f"{_SEED[kind]} AS {_quoted(c)}" for c, kind in job.columns.items())
    return f"SELECT {seed} UNION ALL {narrowed}"


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


async def stream(job: ExportJob) -> AsyncIterator[bytes]:
    """The file's bytes as the child writes them. The first chunk is read before this returns
    an iterator, so a query the store refuses raises here, before a response has started; a
    consumer that stops early (the client went away) stops the child."""
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "datawell.storage.export",
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    assert process.stdin is not None and process.stdout is not None and process.stderr is not None
    process.stdin.write(json.dumps(asdict(job)).encode())
    await process.stdin.drain()
    process.stdin.close()
    try:
        first = await process.stdout.read(CHUNK)
        if not first and await process.wait() != 0:
            raise ExportRefused(_last_line(await process.stderr.read()))
    except BaseException:
        await _stop(process)
        raise
    return _rest(process, first)


class ExportRefused(Exception):
    """The store refused the export's query before the file began (the child's last words)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def _last_line(stderr: bytes) -> str:
    lines = [line.strip() for line in stderr.decode(errors="replace").splitlines() if line.strip()]
    return lines[-1][:500] if lines else "the export process failed"


async def _rest(process: asyncio.subprocess.Process, first: bytes) -> AsyncIterator[bytes]:
    assert process.stdout is not None
    try:
        chunk = first
        while chunk:
            yield chunk
            chunk = await process.stdout.read(CHUNK)
        if await process.wait() != 0:
            # Too late for an error status: the response is cut short, which clients see as a failed download.
            raise RuntimeError("the export process failed after it had started writing")
    finally:
        await _stop(process)


async def _stop(process: asyncio.subprocess.Process) -> None:
    if process.returncode is None:
        process.kill()
        await process.wait()


def read_batches(job: ExportJob) -> Iterator[pa.RecordBatch]:
    """The query's rows from the store as Arrow batches of the file's types."""
    from sqlalchemy.engine import make_url

    url = make_url(job.url)
    dialect = url.get_backend_name()
    if dialect == "sqlite":
        import adbc_driver_sqlite

        database = adbc_driver_sqlite.connect(f"file:{url.database}?mode=ro")
    else:
        import adbc_driver_postgresql

        database = adbc_driver_postgresql.connect(url.set(drivername="postgresql").render_as_string(False))
    with database, adbc.AdbcConnection(database) as connection:
        for statement in ["BEGIN READ ONLY", *job.setup] if dialect != "sqlite" else []:
            _execute(connection, statement)
        with adbc.AdbcStatement(connection) as query:
            if dialect == "sqlite":
                # The driver's default, 1,024 rows a batch, would make as many Parquet row groups.
                query.set_options(**{"adbc.sqlite.query.batch_rows": str(BATCH_ROWS)})
            else:
                # Its default (16 MB batches), read ahead while one is written, passed 300 MB.
                query.set_options(**{"adbc.postgresql.batch_size_hint_bytes": str(BATCH_BYTES)})
            query.set_sql_query(export_sql(job, dialect))
            handle, _ = query.execute_query()
            reader = pa.RecordBatchReader._import_from_c(handle.address)
            seeded = dialect == "sqlite"
            for batch in reader:
                if seeded:
                    batch, seeded = batch.slice(1), False
                yield _typed(batch, job.columns)


def _execute(connection: adbc.AdbcConnection, sql: str) -> None:
    with adbc.AdbcStatement(connection) as statement:
        statement.set_sql_query(sql)
        statement.execute_update()


def _typed(batch: pa.RecordBatch, columns: dict[str, str]) -> pa.RecordBatch:
    arrays = []
    for column, kind in zip(batch.columns, columns.values(), strict=True):
        wanted = FILE_TYPES[kind]
        if column.type != wanted:
            if kind == "boolean" and pa.types.is_integer(column.type):
                column = pc.not_equal(column, 0)
            elif kind == "timestamp" and pa.types.is_timestamp(column.type):
                column = column.cast(pa.timestamp("us")).cast(wanted) if column.type.tz is None else column.cast(wanted)
            elif kind == "timestamp":
                column = pc.cast(pc.cast(column, pa.string()), pa.timestamp("us")).cast(wanted)
            else:
                column = column.cast(wanted)
        arrays.append(column)
    return pa.RecordBatch.from_arrays(arrays, schema=schema_of(columns))


def schema_of(columns: dict[str, str]) -> pa.Schema:
    return pa.schema([pa.field(name, FILE_TYPES[kind]) for name, kind in columns.items()])


def write(job: ExportJob, batches: Iterator[pa.RecordBatch], out: BinaryIO) -> None:
    """Write `batches` to `out` in the job's format, one batch at a time."""
    schema = schema_of(job.columns)
    if job.format == "parquet":
        import pyarrow.parquet as pq

        with pq.ParquetWriter(out, schema) as writer:
            for batch in batches:
                writer.write_batch(batch, row_group_size=BATCH_ROWS)
    elif job.format == "csv":
        import pyarrow.csv as csv

        text_stamps = pa.schema([pa.field(f.name, pa.string()) if _stamp(f.type) else f for f in schema])
        with csv.CSVWriter(out, text_stamps) as writer:
            for batch in batches:
                writer.write_batch(_stamps_as_text(batch, text_stamps))
    else:
        for batch in batches:
            if batch.num_rows:
                out.write(_json_lines(batch))


def _stamp(kind: pa.DataType) -> bool:
    return pa.types.is_timestamp(kind)


def _stamps_as_text(batch: pa.RecordBatch, schema: pa.Schema) -> pa.RecordBatch:
    """UTC timestamps as `2024-05-01 10:00:00.000000Z`, what Arrow's CSV writer would print,
    formatted without a time zone lookup per value (fifty times faster)."""
    columns = [
        pc.binary_join_element_wise(column.cast(pa.timestamp("us")).cast(pa.string()), "Z", "")
        if _stamp(column.type)
        else column
        for column in batch.columns
    ]
    return pa.RecordBatch.from_arrays(columns, schema=schema)


# What JSON strings escape besides `\\` and `"`; any other control character sends its batch
# down the slow path, which escapes everything.
_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t", "\b": "\\b", "\f": "\\f"}
_OTHER_CONTROL = r"[\x00-\x07\x0b\x0e-\x1f]"


def _json_lines(batch: pa.RecordBatch) -> bytes:
    """The batch as JSON Lines, built column by column with Arrow kernels (a row at a time in
    Python costs thirty times as much); batches they cannot spell exactly go row by row."""
    parts: list[Any] = []
    for index, (name, column) in enumerate(zip(batch.schema.names, batch.columns, strict=True)):
        text = _json_column(column)
        if text is None:
            lines = (json.dumps(row, default=_json_default, ensure_ascii=False) for row in batch.to_pylist())
            return ("\n".join(lines) + "\n").encode()
        parts += [("{" if index == 0 else ", ") + json.dumps(name, ensure_ascii=False) + ": ", text]
    parts.append("}\n")
    return _string_bytes(pc.binary_join_element_wise(*parts, ""))


def _string_bytes(strings: pa.Array) -> bytes:
    """The values of a string array without nulls, back to back (as Arrow keeps them)."""
    _, offsets, data = strings.buffers()
    bounds = np.frombuffer(offsets, dtype=np.int32)[strings.offset : strings.offset + len(strings) + 1]
    return data[int(bounds[0]) : int(bounds[-1])].to_pybytes()


def _json_column(column: pa.Array) -> pa.Array | None:
    """Each value as JSON text (`null` for none); None when a value needs the slow path."""
    kind = column.type
    if pa.types.is_string(kind):
        if pc.any(pc.match_substring_regex(column, _OTHER_CONTROL)).as_py():
            return None
        text = pc.replace_substring(pc.replace_substring(column, "\\", "\\\\"), '"', '\\"')
        for raw, escaped in _ESCAPES.items():
            text = pc.replace_substring(text, raw, escaped)
        text = pc.binary_join_element_wise('"', text, '"', "")
    elif pa.types.is_timestamp(kind):
        naive = pc.replace_substring(column.cast(pa.timestamp("us")).cast(pa.string()), " ", "T", max_replacements=1)
        text = pc.binary_join_element_wise('"', naive, 'Z"', "")
    elif pa.types.is_floating(kind):
        if pc.any(pc.or_(pc.is_nan(column), pc.is_inf(column))).as_py():
            return None
        text = column.cast(pa.string())
    else:
        text = column.cast(pa.string())
    return pc.fill_null(text, "null")


def _json_default(value: Any) -> Any:
    if isinstance(value, datetime | date):
        return value.isoformat()
    raise TypeError(f"{type(value).__name__} is not JSON")


def read_ahead(batches: Iterator[pa.RecordBatch], depth: int = 1) -> Iterator[pa.RecordBatch]:
    """`batches`, read by a thread of their own while the caller writes the ones before (the
    driver and Arrow's writers let go of the GIL): reading and writing overlap."""
    ready: queue.Queue[pa.RecordBatch | BaseException | None] = queue.Queue(depth)

    def read() -> None:
        try:
            for batch in batches:
                ready.put(batch)
            ready.put(None)
        except BaseException as exc:  # raised again where the batches are consumed
            ready.put(exc)

    threading.Thread(target=read, daemon=True).start()
    while (item := ready.get()) is not None:
        if isinstance(item, BaseException):
            raise item
        yield item


def main() -> None:
    raw = json.loads(sys.stdin.buffer.read())
    job = ExportJob(**raw)
    batches = read_ahead(read_batches(job))
    first = next(batches, None)  # the query ran: only now does the file begin

    def everything() -> Iterator[pa.RecordBatch]:
        if first is not None:
            yield first
            yield from batches

    write(job, everything(), sys.stdout.buffer)
    sys.stdout.buffer.flush()


if __name__ == "__main__":
    main()
