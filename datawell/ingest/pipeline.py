"""One ingestion attempt, from the uploaded object to published rows, then their vectors.

download -> detect the format -> structure (tabular: map columns to fields; documents:
extract records per chunk with the model, spooled to a local file) -> column types (inferred
at the dataset's first ingestion, else the dataset's) -> stage -> coerce and write in
batches (`staging`) -> publish -> embed the published rows (`embedding`).

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
from dataclasses import dataclass
from datetime import datetime
from functools import partial
from pathlib import Path
from typing import Any

from datawell.errors import IngestionFailed, NotFound
from datawell.ingest import values
from datawell.ingest.batches import Limits, sample_rows
from datawell.ingest.columnar import columnar
from datawell.ingest.documents import chunks
from datawell.ingest.embedding import RowEmbedding
from datawell.ingest.extraction import extract, records_model
from datawell.ingest.formats import TABULAR, Format, detect_format
from datawell.ingest.limits import FileLimits, check_archive
from datawell.ingest.mapping import map_columns
from datawell.ingest.records import Records, SpooledRecords, TableRecords, pull
from datawell.ingest.staging import Staging, Structured, Tracker
from datawell.ingest.tabular import open_table
from datawell.ingest.values import ReadRecords
from datawell.scheduler import Priority
from datawell.services import Services
from datawell.storage import hints
from datawell.storage.tables import Dataset, Ingestion, utcnow
from datawell.storage.vectors import ROWS

SAMPLE_ROWS = 5  # rows shown to the model for the column mapping
EMBEDDING_FAILED = (
    "embedding the rows for semantic() failed (logged): the rows are queryable, semantic() finds only part of them"
)

# What a running attempt records in its mapping to resume after a crash (removed once done;
# an incomplete `rowEmbeddings` stays when embedding failed, for `semantic()` to report).
PROGRESS_KEYS = ("published", "rowEmbeddings")

log = logging.getLogger(__name__)


class AttemptStopped(Exception):
    """The attempt is no longer this worker's: another worker took it over after the lease
    expired, or it was cancelled."""


@dataclass(frozen=True)
class Outcome:
    rows: int
    message: str
    mapping: dict[str, Any] | None = None  # the attempt's mapping as it ends (None: as recorded)


@dataclass
class Ingest:
    """One attempt, from its object to published rows (and their vectors): parse or structure,
    stage, publish; a takeover resumes from what the attempt's mapping recorded."""

    services: Services
    attempt: Ingestion
    dataset: Dataset
    tracker: Tracker
    workdir: Path

    def __post_init__(self) -> None:
        services, attempt = self.services, self.attempt
        settings = services.settings
        self.batch_rows = settings.ingest_batch_rows
        self.embed = settings.ingest_embed_rows
        self.limits = settings.group(Limits, "ingest_max_")
        self.total_bytes = attempt.expected_total_bytes
        # Every model call of the attempt waits for a scheduler slot behind any question.
        self.model_slot = partial(services.scheduler.slot, f"ingest:{attempt.created_by}", Priority.BACKGROUND)
        self.file_limits = settings.group(FileLimits, "ingest_max_")
        self.mapping: dict[str, Any] = dict(attempt.mapping or {})
        # The hints the written batches give when the published table holds exactly those rows.
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
                await embedding.run(self.mapping.get("rowEmbeddings"), outcome.rows, self.total_bytes)
            except (AttemptStopped, IngestionFailed):
                raise
            except Exception:  # the rows are published and stay: say their vectors are missing
                log.exception("embedding the rows of ingestion %s failed", self.attempt.id)
                return Outcome(outcome.rows, outcome.message + "; " + EMBEDDING_FAILED)
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
        staging = self.staging()
        written, emptied = await self.write(staging, structured)
        await self.tracker.progress(self.total_bytes, written, "publishing the rows")
        # `written`: every batch was acknowledged as committed before the writer closed.
        published = await self.services.rows.publish(
            self.dataset, self.attempt.id, source=self.attempt.name, rows=written
        )
        if published.renamed:  # the table holds exactly the rows written: no pass over it
            # Of the rows as published: a change after that refreshes the hints after this.
            published_at = utcnow()
            found = await hints.observed(self.services.rows, self.dataset, staging.observed)
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

    def staging(self) -> Staging:
        settings = self.services.settings
        return Staging(
            self.services.rows,
            self.services.db,
            self.dataset,
            self.attempt.id,
            self.tracker,
            self.total_bytes,
            self.batch_rows,
            settings.ingest_bulk_process_bytes,
        )

    async def write(self, staging: Staging, structured: Structured) -> tuple[int, int]:
        """Stage every row; (rows written, values left empty)."""
        return await staging.write(structured)


async def discard(services: Services, dataset: Dataset, ingestion_id: str, *, published: bool = False) -> None:
    """Remove what an attempt staged: its staging table and its vectors; with `published`,
    also the rows it published (it was cancelled while publishing)."""
    await services.rows.discard(dataset, ingestion_id)
    if published:
        await services.rows.unpublish(dataset, ingestion_id)
        await hints.refresh(services.db, services.rows, dataset)
    await services.vectors.delete(ROWS, dataset.id, ingestion_id=ingestion_id)
