"""Row embeddings, after the rows are published: off the critical path.

The published rows of an attempt are read back in id order (the order they were read in),
a chunk at a time, and embedded a batch at a time (`ingest_embed_batch_rows`). After each
batch the attempt records how far it got (`mapping.rowEmbeddings`: rows embedded, the last
id) and says so in its `statusMessage`; a worker that takes the attempt over after a crash
starts after that id, so no finished batch is embedded twice.

A row's text is its text fields, `field: value; …`, cut to `ingest_embed_text_chars`
characters: the model reads at most 128 tokens anyway, and shorter inputs embed faster.
Rows without text get no vector.

Every row with text is embedded, whatever the store: the embedded index keeps its vectors
on disk. A batch's vectors are in the store before the attempt records the batch, so a crash
between the two embeds that batch again (the store replaces points by id), never skips it;
when the last batch is in, the store is flushed (`VectorStore.flush`: the embedded index is
saved, so a restart maps it instead of mending it). Memory is bounded by a chunk of rows read
back and one batch of texts and vectors."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from datawell.services import Services
from datawell.storage.row_tables import dataset_columns
from datawell.storage.tables import Dataset
from datawell.storage.vectors import ROWS, Point

log = logging.getLogger(__name__)

READ_ROWS = 50_000  # rows read back per query; each query scans the table once


class Progress(Protocol):
    async def progress(self, processed_bytes: int, processed_rows: int, message: str | None = None) -> None: ...


def row_text(fields: list[str], values: tuple[Any, ...], limit: int) -> str:
    return "; ".join(f"{f}: {v}" for f, v in zip(fields, values, strict=True) if v)[:limit]


@dataclass
class RowEmbedding:
    """The vectors of an attempt's published rows, embedded in batches and resumable from the
    state an earlier run recorded."""

    services: Services
    dataset: Dataset
    ingestion_id: str
    tracker: Progress
    record: Callable[..., Awaitable[None]]
    rows: int = field(default=0, init=False)
    total_bytes: int = field(default=0, init=False)

    def __post_init__(self) -> None:
        settings = self.services.settings
        self.batch_rows = settings.ingest_embed_batch_rows
        self.text_chars = settings.ingest_embed_text_chars

    async def run(self, state: dict[str, Any] | None, rows: int, total_bytes: int) -> dict[str, Any]:
        """Embed the rows not embedded yet; `state` is what an earlier run recorded. Returns
        the final state."""
        self.rows, self.total_bytes = rows, total_bytes
        state = dict(state or {"embedded": 0, "after": "", "complete": False})
        fields = [f for f, kind in dataset_columns(self.dataset).items() if kind == "text"]
        state["complete"] = state["complete"] or not fields  # no text field: nothing to embed
        await self.report(state)
        while not state["complete"]:
            chunk = await self.services.rows.published_after(
                self.dataset, self.ingestion_id, fields, state["after"], READ_ROWS
            )
            for start in range(0, len(chunk), self.batch_rows):
                part = chunk[start : start + self.batch_rows]
                await self.embed(fields, part)
                state = {**state, "embedded": state["embedded"] + len(part), "after": part[-1][0]}
                await self.report(state)
            if len(chunk) < READ_ROWS:
                await self.services.vectors.flush()
                state["complete"] = True
                await self.report(state)
        return state

    async def embed(self, fields: list[str], part: list[tuple[str, tuple[Any, ...]]]) -> None:
        texts = [(row_id, row_text(fields, values, self.text_chars)) for row_id, values in part]
        texts = [(row_id, text) for row_id, text in texts if text]
        if not texts:
            return
        vectors = await self.services.embedder.embed([text for _, text in texts])
        points = [
            Point(row_id, vector, {"ingestion_id": self.ingestion_id, "text": text})
            for (row_id, text), vector in zip(texts, vectors, strict=True)
        ]
        await self.services.vectors.upsert(ROWS, self.dataset.id, points)

    async def report(self, state: dict[str, Any]) -> None:
        await self.record(rowEmbeddings=state)
        done = "all" if state["complete"] else f"{state['embedded']:,} of {self.rows:,}"
        message = f"published {self.rows:,} rows (queryable); embedding them for semantic(): {done} rows embedded"
        await self.tracker.progress(self.total_bytes, self.rows, message)
