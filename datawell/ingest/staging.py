"""Staging one attempt's rows: the column types (inferred at the dataset's first ingestion,
else the dataset's), then the rows coerced and written into the attempt's stage a batch at a
time, the columnar way when the file allows it (`columnar`), else row by row (`records`).
What the batches tell of the rows is observed on the way (`observed`), for the hints of the
published table. The attempt (`pipeline.Ingest`) structures the file before and publishes
the stage after."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from datawell.ingest.columnar import (
    COLUMNAR_BATCH_ROWS,
    FIRST_BATCH_ROWS,
    Ahead,
    Columnar,
    Fallback,
    Positioned,
    at,
    first_small,
    typed,
    typed_ahead,
)
from datawell.ingest.fieldtypes import TypeInference
from datawell.ingest.records import Records, observing, prepare, pull
from datawell.storage import hints
from datawell.storage.datasets import settle_field_types
from datawell.storage.db import Database
from datawell.storage.row_tables import dataset_columns
from datawell.storage.rows import RowStore, StageWriter
from datawell.storage.tables import Dataset

# From this size a stage goes to the SQLite writer process when one has been started: its
# ADBC inserts take half the time of `executemany` and none of this process's core, and below
# it the batches are too few to gain the time it takes to send them.
WARM_PROCESS_BYTES = 1024 * 1024
INFERRING = "reading the file to infer column types (first ingestion of this dataset)"

B = TypeVar("B", Positioned, Ahead)  # what a write reads: a typed batch (None: none) first


class Tracker(Protocol):
    """How the pipeline reports to the attempt's record; each call raises AttemptStopped when
    the attempt is no longer the worker's, and returns only while the worker's lease has most
    of its length to run (a call that changes only the counts may be skipped right after a
    renewal: `worker.Lease`)."""

    async def progress(self, processed_bytes: int, processed_rows: int, message: str | None = None) -> None: ...

    async def record_mapping(self, mapping: dict[str, Any]) -> None: ...


@dataclass
class Structured:
    records: Records
    strict: bool  # a value that does not fit its type fails the attempt (else it is left empty)
    summary: str
    columnar: Columnar | None = None  # the same file for the columnar path, when it can take it


@dataclass
class Staging:
    """The rows of one attempt written into its stage. Reads and writes only the row store
    and, to settle a first ingestion's types, the database."""

    rows: RowStore
    db: Database
    dataset: Dataset
    attempt_id: str
    tracker: Tracker
    total_bytes: int  # the file's size, for progress and the choice of writer
    batch_rows: int
    bulk_process_bytes: int  # from this size a writer process is worth starting
    # What the batches of the current write tell of the rows (restarted with each write).
    observed: hints.BatchHints = field(init=False)

    def __post_init__(self) -> None:
        self.observed = hints.BatchHints(self.rows.dialect)

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
        async with self.db.session() as session:
            types = await settle_field_types(session, self.dataset.id, inference.result())
        self.dataset.field_types = types
        return dataset_columns(self.dataset)

    async def write_columnar(self, arrow: Columnar) -> int:
        """Parse, type and write the file the columnar way; raises Fallback when it cannot."""
        size = min(self.batch_rows, COLUMNAR_BATCH_ROWS)
        batches = first_small(arrow.batches(size), FIRST_BATCH_ROWS)
        if self.dataset.field_types:
            return await self.write_typed(typed(batches, dataset_columns(self.dataset)))
        # A first ingestion: rows are written on the types the first batch suggests while the
        # whole file's types are inferred; if they differ, the file is read again and written
        # with the final types (the local file, parsed twice in that rare case: spooling every
        # batch to write it again cost 0.09-0.2 s of each 100,000-row first ingestion).
        inference = TypeInference(self.dataset.schema_definition)
        ahead = await self.write_ahead(typed_ahead(batches, inference))
        types = await self.settle(inference)
        if ahead is not None and ahead[1] == types:
            return ahead[0]
        return await self.write_typed(typed(at(self.total_bytes, arrow.batches(size)), types))

    def bulk_writer(self) -> StageWriter:
        """A file of `ingest_bulk_process_bytes` is worth starting a writer process for; one
        of `WARM_PROCESS_BYTES` is worth the writer process already started (`prepare_writer`)."""
        rows = self.rows
        large = self.total_bytes >= self.bulk_process_bytes
        large = large or (self.total_bytes >= WARM_PROCESS_BYTES and rows.writer_ready())
        return rows.writer(self.attempt_id, large=large)

    async def write_typed(self, batches: Iterator[Positioned]) -> int:
        writer = self.bulk_writer()
        opening = asyncio.ensure_future(writer.open())  # while the stage is made
        try:
            await self.rows.stage(self.dataset, self.attempt_id)
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
                    await self.rows.stage(self.dataset, self.attempt_id, guess)
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
            # Checked before the write (or renewed within the last second: `Lease`): a worker
            # that lost the attempt never writes into the stage its successor has taken over.
            await self.tracker.progress(min(position, self.total_bytes), written, "writing rows")
            await writer.append(batch)
            written += batch.num_rows
        return written

    def observing(self, batches: Iterator[B]) -> Iterator[B]:
        """The batches of a write, observed for the hints afresh: a write starts from an empty
        stage, so the hints see exactly the batches staged."""
        self.observed = hints.BatchHints(self.rows.dialect)
        return observe(batches, self.observed)

    async def write(self, structured: Structured) -> tuple[int, int]:
        """Stage every row; (rows written, values left empty)."""
        if structured.columnar is not None:
            try:
                return await self.write_columnar(structured.columnar), 0
            except Fallback:
                pass  # read again row by row, from a fresh stage
        types = await self.column_types(structured.records)
        await self.rows.stage(self.dataset, self.attempt_id)
        return await self.write_rows(structured, types)

    async def write_rows(self, structured: Structured, types: dict[str, str]) -> tuple[int, int]:
        emptied = 0

        def batches() -> Iterator[Positioned]:
            nonlocal emptied
            for prepared in prepare(structured.records, types, self.batch_rows, strict=structured.strict):
                emptied += prepared.emptied
                yield prepared.batch, prepared.position

        writer = self.rows.writer(self.attempt_id)
        try:
            written = await self.write_batches(writer, batches())
        finally:
            await writer.close()
        return written, emptied


def observe(items: Iterator[B], into: hints.BatchHints) -> Iterator[B]:
    """The items, each batch observed as it is produced: in the thread that produces it
    (`pull`), while the batch before it is written."""
    for item in items:
        if item[0] is not None:
            into.observe(item[0])
        yield item
