"""One ingestion attempt, from the uploaded object to published rows.

download -> detect the format -> structure (tabular: map columns to fields; documents:
extract records per chunk with the model, spooled to a local file) -> column types (inferred
at the dataset's first ingestion, else the dataset's) -> stage -> coerce and write in
batches, embedding each batch's text -> publish.

Parsing and coercion run in a thread a batch at a time, so an in-process worker does not
stall the API, and cancellation (shutdown) takes effect between batches."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, TypeVar

from datawell.errors import IngestionFailed, NotFound
from datawell.ingest.documents import chunks
from datawell.ingest.extraction import extract, records_model
from datawell.ingest.fieldtypes import Misfit, TypeInference, coerce_column
from datawell.ingest.formats import TABULAR, Format, detect_format
from datawell.ingest.limits import Limits, check_archive
from datawell.ingest.mapping import map_columns
from datawell.ingest.tabular import Table, open_table, sample_rows
from datawell.services import Services
from datawell.storage.datasets import settle_field_types
from datawell.storage.rows import dataset_columns
from datawell.storage.tables import Dataset, Ingestion
from datawell.storage.vectors import ROWS, Point

SAMPLE_ROWS = 5  # rows shown to the model for the column mapping
EMBED_BATCH = 256
SHOWN_VALUE_CHARS = 60

T = TypeVar("T")


class AttemptStopped(Exception):
    """The attempt is no longer this worker's: another worker took it over after the lease
    expired, or it was cancelled."""


class Tracker(Protocol):
    """How the pipeline reports to the attempt's record; each call renews the worker's lease
    and raises AttemptStopped when the attempt is no longer the worker's."""

    async def progress(self, processed_bytes: int, processed_rows: int, message: str | None = None) -> None: ...

    async def record_mapping(self, mapping: dict[str, Any]) -> None: ...


@dataclass(frozen=True)
class Outcome:
    rows: int
    message: str


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
    rows: list[dict[str, Any]]
    texts: list[str]  # each row's text fields, for its embedding ("" for none)
    position: int
    emptied: int = 0  # values that did not fit their type and were left empty


@dataclass
class Structured:
    records: Records
    strict: bool  # a value that does not fit its type fails the attempt (else it is left empty)
    summary: str
    extra: dict[str, Any] = field(default_factory=dict)


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


def texts_of(columns: dict[str, list[Any]], text_fields: list[str], count: int) -> list[str]:
    """Each row's text fields as `field: value; ...`, what its embedding is made from."""
    parts = [[f"{f}: {v}" if v else "" for v in columns[f]] for f in text_fields]
    return ["; ".join(p for p in row if p) for row in zip(*parts, strict=True)] if parts else [""] * count


def prepare(records: Records, types: dict[str, str], size: int, *, strict: bool, embed: bool) -> Iterator[Prepared]:
    """Batches of rows with every value coerced to its field's type. Strict: a value that
    does not fit fails the attempt with its line; lenient: it is left empty and counted."""
    text_fields = [f for f, t in types.items() if t == "text"]
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
        names = list(columns)
        rows = (
            [dict(zip(names, row, strict=False)) for row in zip(*columns.values(), strict=False)]
            if names
            else [{} for _ in range(count)]
        )
        present = [f for f in text_fields if f in columns]
        texts = texts_of(columns, present, count) if embed else []
        yield Prepared(rows, texts, batch.position, emptied)


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


class Ingest:
    def __init__(
        self, services: Services, attempt: Ingestion, dataset: Dataset, tracker: Tracker, workdir: Path
    ) -> None:
        self.services = services
        self.attempt = attempt
        self.dataset = dataset
        self.tracker = tracker
        self.workdir = workdir
        self.batch_rows = services.settings.ingest_batch_rows
        self.embed = services.settings.ingest_embed_rows
        self.total_bytes = attempt.expected_total_bytes
        self.limits = Limits.of(services.settings)

    async def run(self) -> Outcome:
        source = self.workdir / ("source" + Path(self.attempt.name).suffix.lower()[:16])
        try:
            await self.services.objects.download(self.attempt.object_key, source)
        except NotFound:
            raise IngestionFailed("the uploaded file is no longer in the object store; upload it again") from None
        self.total_bytes = source.stat().st_size
        fmt = await asyncio.to_thread(detect_format, source, self.attempt.name)
        if fmt == "xlsx":
            await asyncio.to_thread(check_archive, source, self.limits)
        if fmt in TABULAR:
            structured = await self.structure_table(source, fmt)
        else:
            structured = await self.structure_document(source, fmt)
        types = await self.column_types(structured.records)
        await self.services.vectors.delete(ROWS, self.dataset.id, ingestion_id=self.attempt.id)
        await self.services.rows.stage(self.dataset, self.attempt.id)
        written, emptied = await self.write(structured, types)
        await self.tracker.progress(self.total_bytes, written, "publishing the rows")
        published = await self.services.rows.publish(self.dataset, self.attempt.id)
        message = f"ingested {published} {'row' if published == 1 else 'rows'} from {self.attempt.name}: "
        message += structured.summary
        if emptied:
            message += f"; {emptied} extracted values did not fit their field's type and were left empty"
        return Outcome(published, message)

    async def structure_table(self, source: Path, fmt: Format) -> Structured:
        await self.tracker.progress(0, 0, f"reading {fmt} columns and mapping them to the dataset's fields")
        table = await asyncio.to_thread(open_table, source, fmt, json_depth=self.limits.json_depth)
        samples = await asyncio.to_thread(sample_rows, table, SAMPLE_ROWS)
        schema = self.dataset.schema_definition
        mapping = await map_columns(
            self.services.models,
            self.services.prompts,
            description=self.dataset.description,
            schema=schema,
            columns=table.columns,
            samples=samples,
            file_name=self.attempt.name,
            prompt_chars=self.limits.prompt_chars,
        )
        await self.tracker.record_mapping({"format": fmt, "columns": table.columns, **mapping.record()})
        if not mapping.mapped:
            raise IngestionFailed(
                f"none of the file's columns ({', '.join(table.columns)}) match the dataset's fields "
                f"({', '.join(schema)}); rename the columns like the fields and upload again"
            )
        summary = f"{len(mapping.mapped)} of {len(schema)} fields filled from the file's columns"
        if mapping.method == "similarity":
            summary += " (matched by name: " + mapping.note + ")"
        return Structured(TableRecords(table, mapping.mapped), strict=True, summary=summary)

    async def structure_document(self, source: Path, fmt: Format) -> Structured:
        schema = self.dataset.schema_definition
        shape = records_model(schema)
        spool_path = self.workdir / "records.jsonl"
        passages = records = 0
        with spool_path.open("w", encoding="utf-8") as spool:
            async for chunk in pull(chunks(source, fmt, self.limits)):
                await self.tracker.progress(
                    min(chunk.position, self.total_bytes), 0, f"extracting records with the model ({chunk.label})"
                )
                found = await extract(
                    self.services.models,
                    self.services.prompts,
                    shape,
                    description=self.dataset.description,
                    schema=schema,
                    chunk=chunk,
                    file_name=self.attempt.name,
                )
                for record in found:
                    spool.write(json.dumps(record, ensure_ascii=False, default=str) + "\n")
                passages += 1
                records += len(found)
        await self.tracker.record_mapping(
            {"format": fmt, "method": "extraction", "passages": passages, "records": records}
        )
        summary = f"{records} records extracted from {passages} {'passage' if passages == 1 else 'passages'}"
        records_read = SpooledRecords(spool_path, list(schema), self.total_bytes)
        return Structured(records_read, strict=False, summary=summary)

    async def column_types(self, records: Records) -> dict[str, str]:
        """The dataset's types; at its first ingestion, inferred from this file and stored
        before staging (the row table is created from them)."""
        if self.dataset.field_types:
            return dataset_columns(self.dataset)
        await self.tracker.progress(0, 0, "reading the file to infer column types (first ingestion of this dataset)")
        inference = TypeInference(self.dataset.schema_definition)
        async for _position in pull(observing(records, inference, self.batch_rows)):
            pass
        async with self.services.db.session() as session:
            types = await settle_field_types(session, self.dataset.id, inference.result())
        self.dataset.field_types = types
        return dataset_columns(self.dataset)

    async def write(self, structured: Structured, types: dict[str, str]) -> tuple[int, int]:
        written = emptied = 0
        batches = prepare(structured.records, types, self.batch_rows, strict=structured.strict, embed=self.embed)
        async for batch in pull(batches):
            # Checked before the write: a worker that lost the attempt never writes into the
            # stage its successor has taken over.
            await self.tracker.progress(min(batch.position, self.total_bytes), written, "writing rows")
            ids = await self.services.rows.write(self.dataset, self.attempt.id, batch.rows, self.attempt.name)
            written += len(batch.rows)
            emptied += batch.emptied
            if self.embed:
                await self.embed_rows(ids, batch.texts)
        return written, emptied

    async def embed_rows(self, ids: list[str], texts: list[str]) -> None:
        pairs = [(i, t) for i, t in zip(ids, texts, strict=True) if t]
        for start in range(0, len(pairs), EMBED_BATCH):
            part = pairs[start : start + EMBED_BATCH]
            vectors = await self.services.embedder.embed([t for _, t in part])
            points = [
                Point(i, v, {"ingestion_id": self.attempt.id, "text": t})
                for (i, t), v in zip(part, vectors, strict=True)
            ]
            await self.services.vectors.upsert(ROWS, self.dataset.id, points)


async def discard(services: Services, dataset: Dataset, ingestion_id: str, *, published: bool = False) -> None:
    """Remove what an attempt staged: its staging table and its vectors; with `published`,
    also the rows it published (it was cancelled while publishing)."""
    await services.rows.discard(dataset, ingestion_id)
    if published:
        await services.rows.unpublish(dataset, ingestion_id)
    await services.vectors.delete(ROWS, dataset.id, ingestion_id=ingestion_id)
