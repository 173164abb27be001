"""One ingestion attempt, from the uploaded object to published rows, then their vectors.

download -> detect the format -> structure (tabular: map columns to fields; documents:
extract records per chunk with the model, spooled to a local file) -> column types (inferred
at the dataset's first ingestion, else the dataset's) -> stage -> coerce and write in
batches -> publish -> embed the published rows (`embedding`).

Delimited, Parquet and JSON Lines files take the columnar path (`columnar`: parsed once by
pyarrow, typed by Arrow kernels, written in bulk); other formats, and any file the columnar path cannot vouch for,
take the row path (`records`). Parsing and coercion run in a thread a batch at a time, so an
in-process worker does not stall the API, and cancellation (shutdown) takes effect between
batches.

Once the rows are published the attempt records it (`mapping.published`), so a worker that
takes the attempt over after a crash goes straight on with the vectors."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from functools import partial
from pathlib import Path
from typing import Any, Protocol, TypeVar

from datawell.errors import IngestionFailed, NotFound
from datawell.ingest import values
from datawell.ingest.batches import Limits, sample_rows
from datawell.ingest.columnar import (
    COLUMNAR_BATCH_ROWS,
    FIRST_BATCH_ROWS,
    Ahead,
    Columnar,
    Fallback,
    Positioned,
    columnar,
    first_small,
    spooled,
    typed,
    typed_ahead,
)
from datawell.ingest.documents import chunks
from datawell.ingest.embedding import RowEmbedding
from datawell.ingest.extraction import extract, records_model
from datawell.ingest.fieldtypes import TypeInference
from datawell.ingest.formats import TABULAR, Format, detect_format
from datawell.ingest.limits import FileLimits, check_archive
from datawell.ingest.mapping import map_columns
from datawell.ingest.records import Records, SpooledRecords, TableRecords, observing, prepare, pull
from datawell.ingest.tabular import open_table
from datawell.ingest.values import ReadRecords
from datawell.scheduler import Priority
from datawell.services import Services
from datawell.storage import hints
from datawell.storage.datasets import settle_field_types
from datawell.storage.rows import StageWriter, dataset_columns
from datawell.storage.tables import Dataset, Ingestion, utcnow
from datawell.storage.vectors import ROWS

SAMPLE_ROWS = 5  # rows shown to the model for the column mapping
# From this size a stage goes to the SQLite writer process when one has been started: its
# ADBC inserts take half the time of `executemany` and none of this process's core, and below
# it the batches are too few to gain the time it takes to send them.
WARM_PROCESS_BYTES = 1024 * 1024
EMBEDDING_FAILED = (
    "embedding the rows for semantic() failed (logged): the rows are queryable, semantic() finds only part of them"
)

# What a running attempt records in its mapping to resume after a crash (removed once done;
# an incomplete `rowEmbeddings` stays when embedding failed or was capped, for `semantic()` to report).
PROGRESS_KEYS = ("published", "rowEmbeddings")

log = logging.getLogger(__name__)
B = TypeVar("B", Positioned, Ahead)  # what a write reads: a typed batch (None: none) first


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
    mapping: dict[str, Any] | None = None  # the attempt's mapping as it ends (None: as recorded)


@dataclass
class Structured:
    records: Records
    strict: bool  # a value that does not fit its type fails the attempt (else it is left empty)
    summary: str
    columnar: Columnar | None = None  # the same file for the columnar path, when it can take it


class Ingest:
    def __init__(
        self, services: Services, attempt: Ingestion, dataset: Dataset, tracker: Tracker, workdir: Path
    ) -> None:
        self.services = services
        self.attempt = attempt
        self.dataset = dataset
        self.tracker = tracker
        self.workdir = workdir
        settings = services.settings
        self.batch_rows = settings.ingest_batch_rows
        self.embed = settings.ingest_embed_rows
        self.limits = Limits(
            settings.ingest_max_header_chars,
            settings.ingest_max_field_chars,
            settings.ingest_max_columns,
            settings.ingest_max_json_depth,
        )
        self.total_bytes = attempt.expected_total_bytes
        # Every model call of the attempt waits for a scheduler slot behind any question.
        self.model_slot = partial(services.scheduler.slot, f"ingest:{attempt.created_by}", Priority.BACKGROUND)
        self.file_limits = FileLimits.of(settings)
        self.mapping: dict[str, Any] = dict(attempt.mapping or {})
        # What the batches of the current write tell of the rows (restarted with each write),
        # and the hints they give when the published table holds exactly those rows.
        self.observed = hints.BatchHints(services.rows.dialect)
        self.fresh_hints: tuple[hints.TableHints, datetime] | None = None

    async def run(self) -> Outcome:
        published = self.mapping.get("published")
        if published is None:
            outcome = await self.ingest()
            if self.embed:  # a takeover goes straight on with the vectors (else it runs again)
                await self.record(published={"rows": outcome.rows, "message": outcome.message})
        else:  # published before its last worker died: only the vectors may be missing
            outcome = Outcome(int(published["rows"]), str(published["message"]))
        if self.fresh_hints is not None:
            await hints.store(self.services.db, self.dataset, *self.fresh_hints)
        else:  # appended, or again on a takeover: the worker that published may have died before this
            await hints.refresh(self.services.db, self.services.rows, self.dataset)
        if self.embed:
            embedding = RowEmbedding(self.services, self.dataset, self.attempt.id, self.tracker, self.record)
            try:
                embedded = await embedding.run(self.mapping.get("rowEmbeddings"), outcome.rows, self.total_bytes)
            except (AttemptStopped, IngestionFailed):
                raise
            except Exception:  # the rows are published and stay: say their vectors are missing
                log.exception("embedding the rows of ingestion %s failed", self.attempt.id)
                return Outcome(outcome.rows, outcome.message + "; " + EMBEDDING_FAILED)
            if embedded.get("capped"):  # the incomplete `rowEmbeddings` stays: semantic() says so
                return Outcome(outcome.rows, outcome.message + "; " + embedding.capped(embedded))
        # Done: the mapping shows how the file was read, not how far the work went (written
        # with the attempt's end, in one transaction).
        return Outcome(outcome.rows, outcome.message, {k: v for k, v in self.mapping.items() if k not in PROGRESS_KEYS})

    async def record(self, **values: Any) -> None:
        """Add `values` to the attempt's recorded mapping (kept whole: the column mapping too)."""
        self.mapping.update(values)
        await self.tracker.record_mapping(dict(self.mapping))

    async def ingest(self) -> Outcome:
        source = self.workdir / ("source" + Path(self.attempt.name).suffix.lower()[:16])
        try:
            await self.services.objects.download(self.attempt.object_key, source)
        except NotFound:
            raise IngestionFailed("the uploaded file is no longer in the object store; upload it again") from None
        self.total_bytes = source.stat().st_size
        fmt = await asyncio.to_thread(detect_format, source, self.attempt.name)
        if fmt == "xlsx":
            await asyncio.to_thread(check_archive, source, self.file_limits)
        if fmt in TABULAR:
            structured = await self.structure_table(source, fmt)
        else:
            structured = await self.structure_document(source, fmt)
        await self.services.vectors.delete(ROWS, self.dataset.id, ingestion_id=self.attempt.id)
        written, emptied = await self.write(structured)
        await self.tracker.progress(self.total_bytes, written, "publishing the rows")
        published = await self.services.rows.publish(self.dataset, self.attempt.id, source=self.attempt.name)
        if published.renamed:  # the table holds exactly the rows written: no pass over it
            # Of the rows as published: a change after that refreshes the hints after this.
            published_at = utcnow()
            found = await hints.observed(self.services.rows, self.dataset, self.observed)
            self.fresh_hints = None if found is None else (found, published_at)
        count = published.rows
        message = f"ingested {count} {'row' if count == 1 else 'rows'} from {self.attempt.name}: "
        message += structured.summary
        if emptied:
            message += f"; {emptied} extracted values did not fit their field's type and were left empty"
        if isinstance(structured.records, ReadRecords) and structured.records.unreadable:
            message += "; " + structured.records.report()
        return Outcome(count, message)

    async def structure_table(self, source: Path, fmt: Format) -> Structured:
        await self.tracker.progress(0, 0, f"reading {fmt} columns and mapping them to the dataset's fields")
        table = await asyncio.to_thread(open_table, source, fmt, self.limits)
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
            prompt_chars=self.file_limits.prompt_chars,
            model_slot=self.model_slot,
        )
        await self.record(format=fmt, columns=table.columns, **mapping.record())
        if not mapping.mapped:
            raise IngestionFailed(
                f"none of the file's columns ({', '.join(table.columns)}) match the dataset's fields "
                f"({', '.join(schema)}); rename the columns like the fields and upload again"
            )
        summary = f"{len(mapping.mapped)} of {len(schema)} fields filled from the file's columns"
        if mapping.method == "header":
            summary += " (named in the header)"
        elif mapping.method == "similarity":
            summary += " (matched by name: " + mapping.note + ")"
        records = TableRecords(table, mapping.mapped)
        read = await self.read_values(records)
        if read is not None:  # values written for people: the row path reads them
            return Structured(read, strict=True, summary=summary)
        return Structured(records, strict=True, summary=summary, columnar=columnar(table, mapping.mapped))

    async def read_values(self, records: Records) -> ReadRecords | None:
        """The records with their localised numbers, money, dates and booleans read in their
        field's meaning (`values`), or None when no column needs that."""
        found = await asyncio.to_thread(values.plan, records, self.dataset.schema_definition, self.batch_rows)
        if not found.readings:
            return None
        await self.record(readings=found.record())
        return ReadRecords(records, found.readings)

    async def structure_document(self, source: Path, fmt: Format) -> Structured:
        schema = self.dataset.schema_definition
        shape = records_model(schema)
        spool_path = self.workdir / "records.jsonl"
        passages = records = 0
        with spool_path.open("w", encoding="utf-8") as spool:
            async for chunk in pull(chunks(source, fmt, self.file_limits)):
                await self.tracker.progress(
                    min(chunk.position, self.total_bytes), 0, f"extracting records with the model ({chunk.label})"
                )
                async with self.model_slot():
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
        await self.record(format=fmt, method="extraction", passages=passages, records=records)
        summary = f"{records} records extracted from {passages} {'passage' if passages == 1 else 'passages'}"
        records_read: Records = SpooledRecords(spool_path, list(schema), self.total_bytes)
        records_read = await self.read_values(records_read) or records_read
        return Structured(records_read, strict=False, summary=summary)

    async def column_types(self, records: Records) -> dict[str, str]:
        """The dataset's types; at its first ingestion, inferred from this file and stored
        before staging (the row table is created from them)."""
        if self.dataset.field_types:
            return dataset_columns(self.dataset)
        await self.tracker.progress(0, 0, INFERRING)
        inference = TypeInference(self.dataset.schema_definition)
        async for _position in pull(observing(records, inference, self.batch_rows)):
            pass
        return await self.settle(inference)

    async def settle(self, inference: TypeInference) -> dict[str, str]:
        async with self.services.db.session() as session:
            types = await settle_field_types(session, self.dataset.id, inference.result())
        self.dataset.field_types = types
        return dataset_columns(self.dataset)

    async def write_columnar(self, arrow: Columnar) -> int:
        """Parse, type and write the file the columnar way; raises Fallback when it cannot."""
        batches = first_small(arrow.batches(min(self.batch_rows, COLUMNAR_BATCH_ROWS)), FIRST_BATCH_ROWS)
        if self.dataset.field_types:
            return await self.write_typed(typed(batches, dataset_columns(self.dataset)))
        # A first ingestion: rows are written on the types the first batch suggests while the
        # whole file's types are inferred, and written again from the spool if they differ.
        spool = self.workdir / "columns.arrows"
        inference = TypeInference(self.dataset.schema_definition)
        ahead = await self.write_ahead(typed_ahead(batches, inference, spool))
        types = await self.settle(inference)
        if ahead is not None and ahead[1] == types:
            return ahead[0]
        return await self.write_typed(typed(spooled(spool, self.total_bytes), types))

    def bulk_writer(self) -> StageWriter:
        """A file of `ingest_bulk_process_bytes` is worth starting a writer process for; one
        of `WARM_PROCESS_BYTES` is worth the writer process already started (`prepare_writer`)."""
        rows = self.services.rows
        large = self.total_bytes >= self.services.settings.ingest_bulk_process_bytes
        large = large or (self.total_bytes >= WARM_PROCESS_BYTES and rows.writer_ready())
        return rows.writer(self.attempt.id, large=large)

    async def write_typed(self, batches: Iterator[Positioned]) -> int:
        writer = self.bulk_writer()
        opening = asyncio.ensure_future(writer.open())  # while the stage is made
        try:
            await self.services.rows.stage(self.dataset, self.attempt.id)
            await opening
            return await self.write_batches(writer, batches)
        finally:
            await asyncio.wait([opening])
            await writer.close()

    async def write_ahead(self, batches: Iterator[Ahead]) -> tuple[int, dict[str, str]] | None:
        """Stage the batches typed on the guess; (rows written, the guess) if it held to the
        end, else None (the rest of the file was only read, for its types)."""
        writer = self.bulk_writer()
        opening = asyncio.ensure_future(writer.open())  # while the first batch is parsed
        written, staged_as = 0, None
        try:
            async for batch, position, guess in pull(self.observing(batches)):
                message = INFERRING if batch is None else "writing rows"
                await self.tracker.progress(min(position, self.total_bytes), max(written, 0), message)
                if batch is None:
                    if staged_as is not None:  # stop writing, and let the writer go
                        staged_as = None
                        await writer.close()
                    written = -1
                    continue
                if staged_as is None:
                    await self.services.rows.stage(self.dataset, self.attempt.id, guess)
                    await opening
                    staged_as = guess
                await writer.append(batch)
                written += batch.num_rows
        finally:
            await asyncio.wait([opening])
            await writer.close()
        return None if written < 0 or staged_as is None else (written, staged_as)

    async def write_batches(self, writer: StageWriter, batches: Iterator[Positioned]) -> int:
        written = 0
        async for batch, position in pull(self.observing(batches)):
            # Checked before the write: a worker that lost the attempt never writes into the
            # stage its successor has taken over.
            await self.tracker.progress(min(position, self.total_bytes), written, "writing rows")
            await writer.append(batch)
            written += batch.num_rows
        return written

    def observing(self, batches: Iterator[B]) -> Iterator[B]:
        """The batches of a write, observed for the hints afresh: a write starts from an empty
        stage, so the hints see exactly the batches staged."""
        self.observed = hints.BatchHints(self.services.rows.dialect)
        return observe(batches, self.observed)

    async def write(self, structured: Structured) -> tuple[int, int]:
        """Stage every row; (rows written, values left empty)."""
        if structured.columnar is not None:
            try:
                return await self.write_columnar(structured.columnar), 0
            except Fallback:
                pass  # read again row by row, from a fresh stage
        types = await self.column_types(structured.records)
        await self.services.rows.stage(self.dataset, self.attempt.id)
        return await self.write_rows(structured, types)

    async def write_rows(self, structured: Structured, types: dict[str, str]) -> tuple[int, int]:
        emptied = 0

        def batches() -> Iterator[Positioned]:
            nonlocal emptied
            for prepared in prepare(structured.records, types, self.batch_rows, strict=structured.strict):
                emptied += prepared.emptied
                yield prepared.batch, prepared.position

        writer = self.services.rows.writer(self.attempt.id)
        try:
            written = await self.write_batches(writer, batches())
        finally:
            await writer.close()
        return written, emptied


INFERRING = "reading the file to infer column types (first ingestion of this dataset)"


def observe(items: Iterator[B], into: hints.BatchHints) -> Iterator[B]:
    """The items, each batch observed as it is produced: in the thread that produces it
    (`pull`), while the batch before it is written."""
    for item in items:
        if item[0] is not None:
            into.observe(item[0])
        yield item


async def discard(services: Services, dataset: Dataset, ingestion_id: str, *, published: bool = False) -> None:
    """Remove what an attempt staged: its staging table and its vectors; with `published`,
    also the rows it published (it was cancelled while publishing)."""
    await services.rows.discard(dataset, ingestion_id)
    if published:
        await services.rows.unpublish(dataset, ingestion_id)
        await hints.refresh(services.db, services.rows, dataset)
    await services.vectors.delete(ROWS, dataset.id, ingestion_id=ingestion_id)
