"""Vectors of releases before the embedded index: a data folder's `qdrant/` (qdrant-client's
local mode) is converted into the embedded index on the first start without a Qdrant server,
then removed. Its vectors are copied, not made again: no row is read or embedded, and a
folder of that time held at most 5,000 row vectors (local mode's cap), so the copy takes
seconds. A start killed halfway copies again (points are replaced by id) until the folder
is gone.

Likewise the embedded index's folder is moved into pgvector on the first start that puts
the vectors in the rows' PostgreSQL (`move_to_pgvector`): its record's points are copied
(half-precision vectors, as it kept them), with progress, then the folder is removed."""

from __future__ import annotations

import json
import logging
import os
import shutil
import sqlite3
from itertools import groupby
from pathlib import Path
from typing import cast

import numpy as np
from sqlalchemy.ext.asyncio import AsyncEngine

from datawell.storage.pgvector import BUILD_MEMORY_MB, PgVectorStore
from datawell.storage.qdrant import QdrantVectorStore
from datawell.storage.vector_index import EmbeddedVectorStore, lock_folder
from datawell.storage.vectors import Point

log = logging.getLogger(__name__)

PAGE = 1_000  # points read from local mode at a time


async def convert_local_mode(old: Path, new: Path, dimension: int) -> int:
    """Copy every point of the local-mode folder `old` into the embedded index in `new`, then
    remove `old`; returns how many points were copied (0 when there is no such folder)."""
    if not (old / "collection").is_dir():
        return 0
    source = QdrantVectorStore(dimension, path=old)
    # Stored names already carry their embedder's space: written as they are, not renamed.
    target = EmbeddedVectorStore(dimension, new)
    copied = 0
    try:
        for collection in (c.name for c in (await source.client.get_collections()).collections):
            total = (await source.client.count(collection, exact=True)).count
            size = (await source.client.get_collection(collection)).config.params.vectors
            if getattr(size, "size", dimension) != dimension:  # another model's: never searched again
                log.warning("local-mode collection %s holds vectors of another size: not converted", collection)
                continue
            offset = None
            while True:
                records, offset = await source.client.scroll(
                    collection, limit=PAGE, offset=offset, with_payload=True, with_vectors=True
                )
                by_dataset: dict[str, list[Point]] = {}
                for record in records:
                    payload = dict(record.payload or {})
                    dataset_id = str(payload.pop("dataset_id", ""))
                    # One unnamed dense vector a point: how VectorStore wrote them.
                    vector = cast("list[float]", record.vector)
                    by_dataset.setdefault(dataset_id, []).append(Point(str(record.id), vector, payload))
                for dataset_id, points in by_dataset.items():
                    await target.upsert(collection, dataset_id, points)
                copied += len(records)
                log.info("converting local-mode vectors of %s: %s of %s", collection, f"{copied:,}", f"{total:,}")
                if offset is None:
                    break
    finally:
        await source.close()
        await target.close()
    shutil.rmtree(old)
    log.info("converted %s local-mode vectors into %s and removed %s", f"{copied:,}", new, old)
    return copied


async def move_to_pgvector(folder: Path, engine: AsyncEngine, *, build_memory_mb: int = BUILD_MEMORY_MB) -> int:
    """Copy every point of the embedded index in `folder` into pgvector tables through
    `engine`, then remove `folder`; how many points (0 when it holds no record)."""
    record = folder / "points.sqlite"
    if not record.exists():
        return 0
    held = lock_folder(folder)  # a process still using the index says so (Conflict)
    copied = 0
    try:
        source = sqlite3.connect(f"file:{record}?mode=ro", uri=True)
        total = source.execute("SELECT count(*) FROM points").fetchone()[0]
        stores: dict[int, PgVectorStore] = {}  # by dimension: stored names already carry their space
        rows = source.execute("SELECT collection, dataset_id, id, payload, vector FROM points ORDER BY key")
        while chunk := rows.fetchmany(PAGE):
            for (collection, dataset_id), same in groupby(chunk, key=lambda r: (r[0], r[1])):
                points = [
                    Point(point_id, np.frombuffer(vector, dtype=np.float16).tolist(), json.loads(payload))
                    for _, _, point_id, payload, vector in same
                ]
                dimension = len(points[0].vector)
                store = stores.setdefault(dimension, PgVectorStore(engine, dimension, build_memory_mb=build_memory_mb))
                await store.upsert(collection, dataset_id, points)
            copied += len(chunk)
            if copied % (20 * PAGE) < PAGE or copied == total:
                log.info("moving the embedded index's vectors into pgvector: %s of %s", f"{copied:,}", f"{total:,}")
        source.close()
        for store in stores.values():  # each dataset's partition gets its HNSW index, built whole
            await store.flush()
    finally:
        os.close(held)
    shutil.rmtree(folder)
    log.info("moved %s vectors from %s into pgvector and removed it", f"{copied:,}", folder)
    return copied
