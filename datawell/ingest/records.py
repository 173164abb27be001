"""The row path of an ingestion: records of the schema's fields read row by row, coerced
with the Python rules of `fieldtypes`. Documents (records the model extracted) always take
it; tables take it when the columnar path (`columnar`) cannot vouch for a file, since it
names the line, field and value of anything that does not fit."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TypeVar

import pyarrow as pa

from datawell.errors import IngestionFailed
from datawell.ingest.batches import Table
from datawell.ingest.fieldtypes import Misfit, TypeInference, coerce_column
from datawell.storage.arrow_values import ARROW_TYPES, arrow_column

SHOWN_VALUE_CHARS = 60

T = TypeVar("T")


@dataclass
class RecordBatch:
    columns: Mapping[str, Sequence[Any]]  # schema field -> its values as read, one per record
    locations: list[int]  # line, row or record number of each record
    position: int  # bytes of the file read so far


class Records(Protocol):
    unit: str  # what `locations` count: "line", "row" or "record"
    sources: dict[str, str]  # schema field -> source column, for messages

    def batches(self, size: int) -> Iterator[RecordBatch]: ...


class TableRecords:
    """A table's rows as records of the schema's fields, through the column mapping."""

    def __init__(self, table: Table, mapped: dict[str, str]) -> None:
        self.table = table
        self.unit = table.unit
        self.sources = mapped
        self.indexes = [(f, table.columns.index(c)) for f, c in mapped.items()]

    def batches(self, size: int) -> Iterator[RecordBatch]:
        for batch in self.table.batches(size):
            columns = list(zip(*batch.rows, strict=True))
            yield RecordBatch({f: columns[i] for f, i in self.indexes}, batch.locations, batch.position)


class SpooledRecords:
    """Records the model extracted, kept in a local JSON Lines file until they are written."""

    unit = "record"

    def __init__(self, path: Path, fields: list[str], size_in_bytes: int) -> None:
        self.path = path
        self.fields = fields
        self.size_in_bytes = size_in_bytes
        self.sources: dict[str, str] = {}

    def batches(self, size: int) -> Iterator[RecordBatch]:
        with self.path.open(encoding="utf-8") as spool:
            records: list[dict[str, Any]] = []
            first = 1
            for number, line in enumerate(spool, start=1):
                records.append(json.loads(line))
                if len(records) >= size:
                    yield self._batch(records, first)
                    records, first = [], number + 1
            if records:
                yield self._batch(records, first)

    def _batch(self, records: list[dict[str, Any]], first: int) -> RecordBatch:
        columns: dict[str, Sequence[Any]] = {f: [r.get(f) for r in records] for f in self.fields}
        return RecordBatch(columns, list(range(first, first + len(records))), self.size_in_bytes)


@dataclass
class Prepared:
    batch: pa.RecordBatch  # one column per field of the dataset, of the field's type
    position: int
    emptied: int = 0  # values that did not fit their type and were left empty


async def pull(iterator: Iterator[T]) -> AsyncIterator[T]:
    """The items of a blocking iterator, each produced in a worker thread. The next item is
    produced while the caller works on the current one (writing it to the database), so
    parsing and writing overlap."""
    done = object()

    def produce() -> asyncio.Future[Any]:
        return asyncio.ensure_future(asyncio.to_thread(next, iterator, done))

    pending = produce()
    try:
        while True:
            item = await pending
            if item is done:
                return
            pending = produce()
            yield item
    finally:
        # A thread cannot be interrupted: let it finish before closing the iterator under it.
        await asyncio.wait([pending])
        if not pending.cancelled():
            pending.exception()  # an error after the caller stopped reading is not an unretrieved one
        close = getattr(iterator, "close", None)
        if close is not None:
            close()


def prepare(records: Records, types: dict[str, str], size: int, *, strict: bool) -> Iterator[Prepared]:
    """Batches of rows with every value coerced to its field's type. Strict: a value that
    does not fit fails the attempt with its line; lenient: it is left empty and counted."""
    for batch in records.batches(size):
        count = len(batch.locations)
        columns: dict[str, list[Any]] = {}
        emptied = 0
        for name, values in batch.columns.items():
            while True:
                try:
                    columns[name] = coerce_column(values, types[name])
                    break
                except Misfit as misfit:
                    if strict:
                        where = batch.locations[misfit.index]
                        raise IngestionFailed(describe_misfit(records, where, name, types[name], misfit)) from None
                    values = list(values)
                    values[misfit.index] = None
                    emptied += 1
        arrays = [
            arrow_column(columns[f], kind) if f in columns else pa.nulls(count, ARROW_TYPES[kind])
            for f, kind in types.items()
        ]
        yield Prepared(pa.RecordBatch.from_arrays(arrays, names=list(types)), batch.position, emptied)


def describe_misfit(records: Records, location: int, name: str, field_type: str, misfit: Misfit) -> str:
    shown = str(misfit.value)
    shown = shown if len(shown) <= SHOWN_VALUE_CHARS else shown[:SHOWN_VALUE_CHARS] + "..."
    column = records.sources.get(name)
    source = f" (column {column!r})" if column and column != name else ""
    return (
        f"{records.unit} {location}: field {name!r}{source} {misfit}, got {shown!r}; "
        f"the dataset stores {name!r} as {field_type} (set at its first ingestion): fix the value and upload again"
    )


def observing(records: Records, inference: TypeInference, size: int) -> Iterator[int]:
    for batch in records.batches(size):
        for name, values in batch.columns.items():
            inference.observe(name, values)
        yield batch.position
