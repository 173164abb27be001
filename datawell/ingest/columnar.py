"""Tabular files the columnar way: pyarrow reads them (CSV/TSV, Parquet, JSON Lines), Arrow
kernels infer and coerce types a batch at a time, and batches go to the row store without a
Python object per value.

It only vouches for what it can read exactly as the row-by-row readers (`tabular`) would.
Anything else (a ragged or badly quoted record, undecodable bytes, a field over the size
limit, a value that does not fit its type, a CSV header not on the first line, a JSON record
pyarrow reads otherwise than Python) raises `Fallback`, and the attempt is read again row by
row from a fresh stage: that path keeps every rule and limit and names the line, field and
value in its message. Values of types Arrow has no rule for (`arrowtypes`) go through the
Python rules a batch at a time, which decide exactly as the row path."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pcsv

from datawell.ingest.arrowtypes import coerce_array, infer_array
from datawell.ingest.delimited import CsvTable
from datawell.ingest.fieldtypes import Misfit, TypeInference, coerce_column
from datawell.ingest.tabular import JsonTable, ParquetTable
from datawell.storage.arrow_values import ARROW_TYPES, arrow_column

BLOCK_BYTES = 4 * 1024 * 1024  # what pyarrow parses at a time (JSON Lines)
# A delimited file's blocks: the first is typed and written while pyarrow parses the rest
# (a 4 MiB first block kept the writer waiting 0.07-0.19 s on a 7 MB file); blocks are then
# regrouped into batches of the batch size. A field longer than a block takes the row path.
CSV_BLOCK_BYTES = 1024 * 1024
# The first batch is cut here: writing starts once these rows are typed, not a whole batch
# (the row types guessed for the stage are then those of these rows: `typed_ahead`).
FIRST_BATCH_ROWS = 8_192
# The batches after it hold at most this many rows (or `ingest_batch_rows`, if fewer): a batch
# is written once it is typed, so smaller ones keep the writer busy while the rest is parsed
# and leave less to write after the last (100,000 rows: 0.80x and 0.78x the script against
# 0.69x and 0.74x with 50,000, at load 6.5-7.5; 1,000,000 rows no slower, 20 MB less RSS).
COLUMNAR_BATCH_ROWS = 16_384
Positioned = tuple[pa.RecordBatch, int]  # a batch and the bytes of the file read so far


class Fallback(Exception):
    """The columnar path cannot read this file exactly as the row path does."""


class ArrowCsv:
    """The mapped columns of a delimited file, as batches of text named by their fields."""

    def __init__(self, table: CsvTable, mapped: dict[str, str]) -> None:
        self.table = table
        self.mapped = mapped  # field -> column

    def batches(self, size: int) -> Iterator[Positioned]:
        table = self.table
        width = len(table.columns)
        names = [f"c{i}" for i in range(width)]
        fields = {f"c{table.columns.index(column)}": field for field, column in self.mapped.items()}
        encoding = "utf8" if table.encoding in ("utf-8", "ascii") else table.encoding
        read = pcsv.ReadOptions(skip_rows=1, column_names=names, block_size=CSV_BLOCK_BYTES, encoding=encoding)
        parse = pcsv.ParseOptions(
            delimiter=table.delimiter, quote_char='"', double_quote=True, escape_char=False, newlines_in_values=True
        )
        convert = pcsv.ConvertOptions(
            column_types=dict.fromkeys(fields, pa.string()),
            include_columns=list(fields),
            strings_can_be_null=False,
            quoted_strings_can_be_null=False,
        )
        limit = table.limits.field_chars
        # An Arrow file, not Python's: the reader reads up to 32 blocks ahead, and through a
        # Python file each block is a bytes object that glibc keeps after it is freed.
        with pa.OSFile(str(table.path)) as raw:
            try:
                reader = pcsv.open_csv(raw, read_options=read, parse_options=parse, convert_options=convert)

                def blocks() -> Iterator[Positioned]:
                    for block in reader:
                        for column in block.columns:
                            # Bytes bound characters from above: count characters only past the limit.
                            if _longest(column, pc.binary_length) > limit and _longest(column, pc.utf8_length) > limit:
                                raise Fallback
                            if _holds_nul(column):  # the row path names its line
                                raise Fallback
                        yield block.rename_columns([fields[n] for n in block.schema.names]), raw.tell()

                yield from regrouped(blocks(), size)
            except (pa.ArrowException, UnicodeError, ValueError) as exc:
                raise Fallback from exc


def regrouped(blocks: Iterator[Positioned], size: int) -> Iterator[Positioned]:
    """Batches of `size` rows (the last one fewer) from parsed blocks; the first block's rows
    come as soon as it is parsed, the rest once `size` rows are there."""
    pending: list[pa.RecordBatch] = []
    rows, position = 0, 0
    for index, (block, position) in enumerate(blocks):
        pending.append(block)
        rows += block.num_rows
        while rows >= size or (index == 0 and rows):
            whole = pending[0] if len(pending) == 1 else pa.Table.from_batches(pending).combine_chunks().to_batches()[0]
            yield whole.slice(0, size), position
            rest = whole.slice(size)
            pending, rows = ([rest] if rest.num_rows else []), rest.num_rows
    if rows:
        whole = pending[0] if len(pending) == 1 else pa.Table.from_batches(pending).combine_chunks().to_batches()[0]
        yield whole, position


def first_small(batches: Iterator[Positioned], rows: int) -> Iterator[Positioned]:
    """The batches, the first one cut after `rows` rows."""
    for index, (batch, position) in enumerate(batches):
        if index == 0 and batch.num_rows > rows:
            yield batch.slice(0, rows), position
            batch = batch.slice(rows)
        yield batch, position


def _holds_nul(column: pa.Array) -> bool:
    """Whether a value of a text column holds a NUL character: one search of the bytes its
    values take, end to end (a search per value took 2-5 ms of each column of a 1 MiB block)."""
    if column.null_count or column.type != pa.string():
        return bool(pc.any(pc.match_substring(column, "\x00")).as_py())
    if len(column) == 0:
        return False
    offsets = np.frombuffer(column.buffers()[1], dtype=np.int32)
    start, end = int(offsets[column.offset]), int(offsets[column.offset + len(column)])
    return end > start and b"\x00" in column.buffers()[2].slice(start, end - start).to_pybytes()


def _longest(column: pa.Array, length: Any) -> int:
    return int(pc.max(length(column)).as_py() or 0) if len(column) else 0


class ArrowParquet:
    """The mapped columns of a Parquet file, in their own Arrow types, named by their fields."""

    def __init__(self, table: ParquetTable, mapped: dict[str, str]) -> None:
        self.table = table
        self.indexes = {field: table.columns.index(column) for field, column in mapped.items()}

    def batches(self, size: int) -> Iterator[Positioned]:
        import pyarrow.parquet as pq

        try:
            file = pq.ParquetFile(self.table.path)
            names = file.schema_arrow.names
            # By name when names are unique (only those columns are read); else all, by position.
            unique = len(set(names)) == len(names)
            wanted = [names[i] for i in self.indexes.values()] if unique else None
            total_rows, total_bytes, done = max(file.metadata.num_rows, 1), self.table.path.stat().st_size, 0
            for batch in file.iter_batches(batch_size=size, columns=wanted):
                done += batch.num_rows
                columns = [batch.column(names[i]) if unique else batch.column(i) for i in self.indexes.values()]
                yield pa.RecordBatch.from_arrays(columns, names=list(self.indexes)), total_bytes * done // total_rows
        except (pa.ArrowException, OSError, ValueError) as exc:
            raise Fallback from exc


class ArrowJsonLines:
    """The mapped keys of a JSON Lines file (UTF-8), through pyarrow's JSON reader, which types
    numbers and booleans as JSON does. Records it would read otherwise than Python's `json`
    (a key repeated in one object, a type that changes from block to block, a value nested in
    an object or list anywhere in the record) fall back to the row path."""

    def __init__(self, table: JsonTable, mapped: dict[str, str]) -> None:
        self.table = table
        self.mapped = mapped

    def batches(self, size: int) -> Iterator[Positioned]:
        import pyarrow.json as pjson

        read = pjson.ReadOptions(block_size=BLOCK_BYTES)
        with self.table.path.open("rb") as raw:
            try:
                reader = pjson.open_json(raw, read_options=read)
                for block in reader:
                    if any(pa.types.is_nested(kind) for kind in block.schema.types):
                        raise Fallback  # the row path checks how deep records nest, and says so
                    columns = [
                        block.column(c) if c in block.schema.names else pa.nulls(block.num_rows)
                        for c in self.mapped.values()
                    ]
                    block = pa.RecordBatch.from_arrays(columns, names=list(self.mapped))
                    position = raw.tell()
                    for start in range(0, block.num_rows, size):
                        yield block.slice(start, size), position
            except (pa.ArrowException, UnicodeError, ValueError) as exc:
                raise Fallback from exc


Columnar = ArrowCsv | ArrowParquet | ArrowJsonLines


def columnar(table: object, mapped: dict[str, str]) -> Columnar | None:
    """The columnar reader of `table`, if it can take it: a delimited file whose header is its
    first line, a Parquet file, a JSON Lines file in UTF-8."""
    if isinstance(table, CsvTable) and table.header_line == 1:
        return ArrowCsv(table, mapped)
    if isinstance(table, ParquetTable):
        return ArrowParquet(table, mapped)
    nested = isinstance(table, JsonTable) and bool(set(mapped.values()) & set(table.nested))
    if isinstance(table, JsonTable) and table.mode == "lines" and table.encoding in ("utf-8", "ascii") and not nested:
        return ArrowJsonLines(table, mapped)
    return None


Converted = dict[str, tuple[str, pa.Array]]  # field -> (its inferred type, its values as that type)


def inferred(
    batches: Iterator[Positioned], inference: TypeInference
) -> Iterator[tuple[pa.RecordBatch, int, Converted]]:
    """Observe every batch's types; each batch comes with the columns that finding its types
    converted. A column's values are first converted to the type the batches before gave it:
    when they all fit, its type stays (the ladder's join of a type with any type whose values
    fit it is that type), found with one conversion instead of the inference's passes."""
    for batch, position in batches:
        converted: Converted = {}
        for name in batch.schema.names:
            known = inference.types[name]
            if known == "text":
                continue
            values = batch.column(name)
            if known is not None and (array := coerce_array(values, known)) is not None:
                converted[name] = (known, array)
                continue
            kind, array = infer_array(values)
            if kind is None:
                inference.observe(name, values.to_pylist())
                continue
            inference.settle(name, kind)
            if array is not None:
                converted[name] = (kind, array)
        yield batch, position, converted


Ahead = tuple[pa.RecordBatch | None, int, dict[str, str]]  # typed batch (None: guess broken), position, guess


def typed_ahead(batches: Iterator[Positioned], inference: TypeInference) -> Iterator[Ahead]:
    """`inferred`, and each batch typed by the types the batches so far suggest (the guess:
    what the first batch suggests), so writing need not wait for the whole file's inference:
    the guess usually holds to the end. Once a batch changes a type, no later batch is typed
    (None); the caller reads the file again and writes it with the final types."""
    guess: dict[str, str] | None = None
    broken = False
    for batch, position, converted in inferred(batches, inference):
        seen = inference.result()
        guess = guess or seen
        broken = broken or seen != guess  # for good: a type may come back to the guess later
        yield (None if broken else typed_batch(batch, guess, converted)), position, guess


def at(position: int, batches: Iterator[Positioned]) -> Iterator[Positioned]:
    """The batches, each at `position` (a second read of the file: its progress stays at the end)."""
    for batch, _ in batches:
        yield batch, position


def typed(batches: Iterator[Positioned], types: dict[str, str]) -> Iterator[Positioned]:
    """Batches with one column per field, of the field's type (null where no column feeds it)."""
    for batch, position in batches:
        yield typed_batch(batch, types), position


def typed_batch(batch: pa.RecordBatch, types: dict[str, str], converted: Converted | None = None) -> pa.RecordBatch:
    """`batch` with one column per field, of the field's type; `converted`: columns already
    converted to a type, used where it is the field's."""
    arrays = []
    for name, kind in types.items():
        if name not in batch.schema.names:
            arrays.append(pa.nulls(batch.num_rows, ARROW_TYPES[kind]))
            continue
        ready = (converted or {}).get(name)
        if ready is not None and ready[0] == kind:
            arrays.append(ready[1])
            continue
        values = batch.column(name)
        coerced = coerce_array(values, kind)
        if coerced is None:
            try:
                coerced = arrow_column(coerce_column(values.to_pylist(), kind), kind)
            except Misfit:
                raise Fallback from None  # the row path names its line
        arrays.append(coerced)
    return pa.RecordBatch.from_arrays(arrays, names=list(types))
