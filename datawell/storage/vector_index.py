"""Vectors on disk without a server: the default `VectorStore` (no DATAWELL_QDRANT_URL).

`points.sqlite` in the folder is the record: every point's id, dataset, payload and vector
(half precision), written in one transaction per batch, so a process killed at any moment
leaves each batch wholly there or wholly absent. Beside it, one HNSW index per collection
and dataset (usearch) answers searches: a search opens only the index of the dataset it was
asked about, so the dataset filter is the choice of file, inside the search, and one
tenant's top-k is never cut by, and never reads, another's vectors. The index holds its
vectors in 8 bits (a quarter of single precision: a smaller file to visit, a faster build);
a search takes its RERANK nearest there and orders them by their exact cosine to the
question, from the record's vectors. Payload filters of `nearest` (field vectors, a few
hundred a dataset) run in the record's SQL, then exactly.

An index file is a copy that may lag the record: it is saved when a batch of writes ends
(`flush`), on close, and every SAVE_EVERY additions, and the record keeps how many points and
which highest key the saved copy held. Keys only grow, so an index whose saved state matches
the record is the record: it is memory-mapped (`view`), opens in milliseconds and reads only
the pages a search visits. One that differs (a process died before saving) is mended from
the record at its first use: what it lacks is added, what the record lost is removed; only
the difference is read. Writing loads the dataset's index into memory until the next flush."""

from __future__ import annotations

import asyncio
import fcntl
import json
import os
import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from usearch.index import Index

from datawell.errors import Conflict
from datawell.storage.vectors import Hit, Point, stored_name

SAVE_EVERY = 100_000  # additions to one index between saves: what a crash makes the next open redo
CONNECTIVITY = 16  # HNSW neighbours per node: recall against the graph's memory (64 bytes a vector)
# Measured at 1,000,000 vectors on the idle machine (docs/decisions.md, "Issue 48: an 8-bit index";
# a sparser graph, 12, built 8% faster through the store for 2 points of recall: "Issue 48: pgvector's index"):
INDEX_DTYPE = "i8"  # the index's copy of a vector: 4,783 vectors/s to build where half precision took 1,731
RERANK = 40  # the index's nearest a search re-orders by exact cosine from the record (at least 4 times its limit)
EXPANSION_ADD = 32  # candidates kept while linking a new vector: build rate against the graph's quality
EXPANSION_SEARCH = 2048  # candidates kept while searching: recall@10 0.984 at 1,000,000 (0.965 at 1024)
READ_CHUNK = 20_000  # record rows read at a time when an index is built or mended

SCHEMA = """
CREATE TABLE IF NOT EXISTS points (
    key INTEGER PRIMARY KEY,
    collection TEXT NOT NULL,
    dataset_id TEXT NOT NULL,
    id TEXT NOT NULL,
    ingestion_id TEXT,
    payload TEXT NOT NULL,
    vector BLOB NOT NULL,
    UNIQUE (collection, dataset_id, id)
);
CREATE INDEX IF NOT EXISTS points_ingestion ON points (collection, dataset_id, ingestion_id);
CREATE TABLE IF NOT EXISTS saved (
    collection TEXT NOT NULL,
    dataset_id TEXT NOT NULL,
    points INTEGER NOT NULL,
    upto INTEGER NOT NULL,
    PRIMARY KEY (collection, dataset_id)
);
CREATE TABLE IF NOT EXISTS next_key (value INTEGER NOT NULL);
"""


@dataclass
class _Opened:
    index: Index
    mutable: bool  # loaded in memory (writable), not a read-only memory map
    unsaved: int = 0  # changes since the file was saved


class EmbeddedVectorStore:
    remote = False

    def __init__(self, dimension: int, folder: Path, *, space: str = "") -> None:
        self.dimension = dimension
        self.space = space
        self.folder = folder
        folder.mkdir(parents=True, exist_ok=True)
        self._lock_file = lock_folder(folder)
        self.db = sqlite3.connect(folder / "points.sqlite", check_same_thread=False, isolation_level=None)
        # WAL with synchronous=NORMAL: a killed process loses nothing committed; only a power
        # cut can lose the last transactions, which the rows' embedding state then redoes.
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=NORMAL")
        self.db.executescript(SCHEMA)
        if self.db.execute("SELECT count(*) FROM next_key").fetchone()[0] == 0:
            self.db.execute("INSERT INTO next_key VALUES (1)")
        self._open: dict[tuple[str, str], _Opened] = {}
        self._busy = asyncio.Lock()  # one thread at a time touches the record and the indexes

    async def _run(self, function: Any, *args: Any) -> Any:
        async with self._busy:
            return await asyncio.to_thread(function, *args)

    # The VectorStore interface: each call runs its blocking part in a thread.

    async def upsert(self, collection: str, dataset_id: str, points: Sequence[Point]) -> None:
        if points:
            await self._run(self._upsert, stored_name(collection, self.space), dataset_id, points)

    async def search(self, collection: str, dataset_id: str, vector: Sequence[float], limit: int) -> list[Hit]:
        result: list[Hit] = await self._run(
            self._search, stored_name(collection, self.space), dataset_id, vector, limit
        )
        return result

    async def nearest(
        self,
        collection: str,
        vector: Sequence[float],
        limit: int,
        *,
        match: dict[str, str],
        exclude: dict[str, str] | None = None,
    ) -> list[Hit]:
        name = stored_name(collection, self.space)
        result: list[Hit] = await self._run(self._nearest, name, vector, limit, match, exclude or {})
        return result

    async def delete(self, collection: str, dataset_id: str, **match: str) -> int:
        result: int = await self._run(self._delete, stored_name(collection, self.space), dataset_id, match)
        return result

    async def count(self, collection: str, dataset_id: str) -> int:
        name = stored_name(collection, self.space)
        query = "SELECT count(*) FROM points WHERE collection = ? AND dataset_id = ?"
        result: int = await self._run(lambda: self.db.execute(query, (name, dataset_id)).fetchone()[0])
        return result

    async def size(self, collection: str) -> int:
        name = stored_name(collection, self.space)
        query = "SELECT count(*) FROM points WHERE collection = ?"
        result: int = await self._run(lambda: self.db.execute(query, (name,)).fetchone()[0])
        return result

    async def flush(self) -> None:
        await self._run(self._flush)

    async def close(self) -> None:
        await self.flush()
        self.db.close()
        self._open.clear()
        os.close(self._lock_file)

    # The blocking parts.

    def _upsert(self, name: str, dataset_id: str, points: Sequence[Point]) -> None:
        opened = self._index(name, dataset_id, mutable=True)
        vectors = np.asarray([p.vector for p in points], dtype=np.float32)
        with self.db:
            self.db.execute("BEGIN IMMEDIATE")
            replaced = [
                key
                for chunk in _chunks([p.id for p in points], 500)
                for (key,) in self.db.execute(
                    f"DELETE FROM points WHERE collection = ? AND dataset_id = ? AND id IN ({_marks(chunk)}) "
                    "RETURNING key",
                    (name, dataset_id, *chunk),
                )
            ]
            (last,) = self.db.execute(
                "UPDATE next_key SET value = value + ? RETURNING value", (len(points),)
            ).fetchone()
            keys = np.arange(last - len(points), last, dtype=np.uint64)
            self.db.executemany(
                "INSERT INTO points VALUES (?, ?, ?, ?, ?, ?, ?)",
                [
                    (
                        int(key),
                        name,
                        dataset_id,
                        p.id,
                        p.payload.get("ingestion_id"),
                        json.dumps(p.payload),
                        v.tobytes(),
                    )
                    for key, p, v in zip(keys, points, vectors.astype(np.float16), strict=True)
                ],
            )
        if replaced:
            opened.index.remove(np.asarray(replaced, dtype=np.uint64))
        opened.index.add(keys, vectors, threads=0)
        opened.unsaved += len(points) + len(replaced)
        if opened.unsaved >= SAVE_EVERY:
            self._save(name, dataset_id, opened)

    def _search(self, name: str, dataset_id: str, vector: Sequence[float], limit: int) -> list[Hit]:
        index = self._index(name, dataset_id, mutable=False).index
        if len(index) == 0:
            return []
        candidates = min(max(RERANK, 4 * limit), len(index))
        index.expansion_search = max(EXPANSION_SEARCH, candidates)  # type: ignore[misc]  # usearch types no setter
        question = np.asarray(vector, dtype=np.float32)
        keys = [int(k) for k in index.search(question, candidates).keys]
        rows = [
            row
            for chunk in _chunks(keys, 500)
            for row in self.db.execute(f"SELECT id, payload, vector FROM points WHERE key IN ({_marks(chunk)})", chunk)
        ]
        if not rows:
            return []
        scores = _cosines(_matrix([r[2] for r in rows]), question)
        best = np.argsort(-scores, kind="stable")[:limit]
        return [Hit(rows[i][0], float(scores[i]), {**json.loads(rows[i][1]), "dataset_id": dataset_id}) for i in best]

    def _nearest(
        self, name: str, vector: Sequence[float], limit: int, match: dict[str, str], exclude: dict[str, str]
    ) -> list[Hit]:
        where, values = ["collection = ?"], [name]
        for key, value in match.items():
            where.append(f"{_column(key)} = ?")
            values.append(value)
        for key, value in exclude.items():
            where.append(f"{_column(key)} IS NOT ?")
            values.append(value)
        query = f"SELECT id, dataset_id, payload, vector FROM points WHERE {' AND '.join(where)}"
        rows = self.db.execute(query, values).fetchall()
        if not rows:
            return []
        scores = _cosines(_matrix([r[3] for r in rows]), np.asarray(vector, dtype=np.float32))
        best = np.argsort(-scores, kind="stable")[:limit]
        return [Hit(rows[i][0], float(scores[i]), {**json.loads(rows[i][2]), "dataset_id": rows[i][1]}) for i in best]

    def _delete(self, name: str, dataset_id: str, match: dict[str, str]) -> int:
        where = "collection = ? AND dataset_id = ?" + "".join(f" AND {_column(k)} = ?" for k in match)
        values = (name, dataset_id, *match.values())
        if not match:  # the whole dataset: its index file goes with its points
            with self.db:
                self.db.execute("BEGIN IMMEDIATE")
                removed = self.db.execute(f"DELETE FROM points WHERE {where}", values).rowcount
                self.db.execute("DELETE FROM saved WHERE collection = ? AND dataset_id = ?", (name, dataset_id))
            self._open.pop((name, dataset_id), None)
            self._file(name, dataset_id).unlink(missing_ok=True)
            return removed
        with self.db:
            self.db.execute("BEGIN IMMEDIATE")
            keys = [key for (key,) in self.db.execute(f"DELETE FROM points WHERE {where} RETURNING key", values)]
        if keys:
            opened = self._index(name, dataset_id, mutable=True)
            opened.index.remove(np.asarray(keys, dtype=np.uint64))
            self._save(name, dataset_id, opened)  # deletes are rare: the file never shows a deleted point
        return len(keys)

    def _flush(self) -> None:
        for (name, dataset_id), opened in list(self._open.items()):
            if opened.mutable:
                self._save(name, dataset_id, opened)
                self._open[(name, dataset_id)] = _Opened(_view(self._file(name, dataset_id)), mutable=False)

    def _file(self, name: str, dataset_id: str) -> Path:
        return self.folder / name / f"{dataset_id}.usearch"

    def _new_index(self) -> Index:
        return Index(
            ndim=self.dimension,
            metric="cos",
            dtype=INDEX_DTYPE,
            connectivity=CONNECTIVITY,
            expansion_add=EXPANSION_ADD,
            expansion_search=EXPANSION_SEARCH,
        )

    def _index(self, name: str, dataset_id: str, *, mutable: bool) -> _Opened:
        """The dataset's index, mended from the record if its file lags it; in memory when `mutable`."""
        opened = self._open.get((name, dataset_id))
        if opened is not None and (opened.mutable or not mutable):
            return opened
        path = self._file(name, dataset_id)
        points, upto = self.db.execute(
            "SELECT count(*), coalesce(max(key), 0) FROM points WHERE collection = ? AND dataset_id = ?",
            (name, dataset_id),
        ).fetchone()
        saved = self.db.execute(
            "SELECT points, upto FROM saved WHERE collection = ? AND dataset_id = ?", (name, dataset_id)
        ).fetchone()
        stored = Index.restore(str(path), view=not mutable) if path.exists() and saved else None
        if stored is not None and tuple(saved) == (points, upto) and len(stored) == points:
            opened = _Opened(stored, mutable=mutable)
        else:
            if stored is not None and not mutable:  # mended in memory, then saved
                stored = Index.restore(str(path))
            opened = self._mend(name, dataset_id, stored)
        self._open[(name, dataset_id)] = opened
        return opened

    def _mend(self, name: str, dataset_id: str, stored: Index | None) -> _Opened:
        """The index `stored` (or a new one) made to hold exactly the record's points, then saved."""
        index = stored if stored is not None else self._new_index()
        recorded = np.fromiter(
            (
                key
                for (key,) in self.db.execute(
                    "SELECT key FROM points WHERE collection = ? AND dataset_id = ? ORDER BY key", (name, dataset_id)
                )
            ),
            dtype=np.uint64,
        )
        held = np.asarray(index.keys, dtype=np.uint64) if len(index) else np.empty(0, dtype=np.uint64)
        gone = np.setdiff1d(held, recorded)
        if len(gone):
            index.remove(gone)
        missing = np.setdiff1d(recorded, held)
        for chunk in _chunks(missing.tolist(), READ_CHUNK):
            rows = self.db.execute(f"SELECT key, vector FROM points WHERE key IN ({_marks(chunk)})", chunk).fetchall()
            index.add(np.asarray([k for k, _ in rows], dtype=np.uint64), _matrix([v for _, v in rows]), threads=0)
        opened = _Opened(index, mutable=True, unsaved=len(gone) + len(missing))
        if opened.unsaved:
            self._save(name, dataset_id, opened)
        return opened

    def _save(self, name: str, dataset_id: str, opened: _Opened) -> None:
        """Write the index whole to a new file and put it in place: a crash leaves the old or the new one."""
        path = self._file(name, dataset_id)
        path.parent.mkdir(parents=True, exist_ok=True)
        staging = path.with_suffix(".saving")
        opened.index.save(str(staging))
        os.replace(staging, path)
        points, upto = self.db.execute(
            "SELECT count(*), coalesce(max(key), 0) FROM points WHERE collection = ? AND dataset_id = ?",
            (name, dataset_id),
        ).fetchone()
        with self.db:
            self.db.execute("INSERT OR REPLACE INTO saved VALUES (?, ?, ?, ?)", (name, dataset_id, points, upto))
        opened.unsaved = 0


def lock_folder(folder: Path) -> int:
    """Hold the folder for this process: indexes in memory are not shared with another."""
    descriptor = os.open(folder / "lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(descriptor)
        raise Conflict(
            f"the vector store in {folder} is in use by another process (a running `datawell serve`?): "
            "use the server (`datawell ask`, `datawell upload`), stop it, or set DATAWELL_QDRANT_URL "
            "to a Qdrant server that every process shares"
        ) from None
    return descriptor


def _view(path: Path) -> Index:
    index = Index.restore(str(path), view=True)
    if index is None:
        raise RuntimeError(f"{path} was just saved and cannot be opened")
    return index


def _column(key: str) -> str:
    """A payload key as the record's SQL reads it (keys are the store's callers' own names)."""
    if key in ("dataset_id", "ingestion_id"):
        return key
    if not key.isidentifier():
        raise ValueError(f"payload key {key!r}")
    return f"json_extract(payload, '$.{key}')"


def _matrix(stored: Sequence[bytes]) -> np.ndarray:
    """The record's half-precision vectors, one a row, in single precision."""
    return np.frombuffer(b"".join(stored), dtype=np.float16).reshape(len(stored), -1).astype(np.float32)


def _cosines(matrix: np.ndarray, vector: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(matrix, axis=1) * (np.linalg.norm(vector) or 1.0)
    return np.asarray(matrix @ vector / np.where(norms == 0, 1.0, norms))


def _chunks(items: list[Any], size: int) -> Iterable[list[Any]]:
    return (items[start : start + size] for start in range(0, len(items), size))


def _marks(items: Sequence[Any]) -> str:
    return ", ".join("?" * len(items))
