"""Vectors in a Qdrant server (DATAWELL_QDRANT_URL), or in qdrant-client's local mode, which
only reads the folders of releases before the embedded index (`storage/migration.py`).

Collections hold points whose payload names the dataset they belong to, with a payload index
on it, so one dataset's points are searched or deleted on their own."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from pathlib import Path

from qdrant_client import AsyncQdrantClient, models

from datawell.errors import Conflict
from datawell.storage.vectors import Hit, Point, stored_name


def _dataset_filter(dataset_id: str, **extra: str) -> models.Filter:
    conditions = [models.FieldCondition(key="dataset_id", match=models.MatchValue(value=dataset_id))]
    conditions += [models.FieldCondition(key=k, match=models.MatchValue(value=v)) for k, v in extra.items()]
    return models.Filter(must=conditions)  # type: ignore[arg-type]


def _without_fsync_per_point(client: AsyncQdrantClient, collection: str) -> None:
    """Local mode commits every point to its SQLite file, and SQLite's defaults fsync every
    commit: about 20 ms a point, 50 points a second. Write-ahead logging with `synchronous=
    NORMAL` syncs at checkpoints instead; a crash can lose the last points written, which
    re-ingesting restores (the rows are the source of truth). Reaches into qdrant-client's
    local storage (pinned version); a collection held only in memory has no file to tune."""
    local = getattr(client, "_client", None)
    persistence = getattr(getattr(local, "collections", {}).get(collection), "storage", None)
    connection = getattr(persistence, "storage", None)
    if connection is not None:
        connection.execute("PRAGMA journal_mode=WAL")
        connection.execute("PRAGMA synchronous=NORMAL")


def open_local(path: Path | None) -> AsyncQdrantClient:
    """Qdrant's local mode in a folder (or memory). It locks the folder: one process at a time."""
    try:
        return AsyncQdrantClient(path=str(path) if path else ":memory:")
    except RuntimeError as exc:
        if "already accessed" not in str(exc):
            raise
        raise Conflict(
            f"the vector store in {path} is in use by another process (a running `datawell serve`?): "
            "use the server (`datawell ask`, `datawell upload`), stop it, or set DATAWELL_QDRANT_URL "
            "to a Qdrant server that every process shares"
        ) from None


class QdrantVectorStore:
    """A `VectorStore` in Qdrant: a server by `url`, else local mode in `path` (or memory)."""

    def __init__(self, dimension: int, *, url: str | None = None, path: Path | None = None, space: str = "") -> None:
        self.dimension = dimension
        self.space = space
        self.remote = url is not None
        self.client = AsyncQdrantClient(url=url) if url else open_local(path)
        self._ready: set[str] = set()

    def _name(self, collection: str) -> str:
        return stored_name(collection, self.space)

    async def _exists(self, collection: str) -> bool:
        name = self._name(collection)
        return name in self._ready or await self.client.collection_exists(name)

    async def _collection(self, collection: str) -> str:
        """The stored name of `collection`, created if it does not exist yet."""
        name = self._name(collection)
        if name in self._ready:
            return name
        if not await self.client.collection_exists(name):
            await self.client.create_collection(
                name, vectors_config=models.VectorParams(size=self.dimension, distance=models.Distance.COSINE)
            )
            if self.remote:  # local mode filters by scanning; indexes only matter on a server
                await self.client.create_payload_index(name, "dataset_id", models.PayloadSchemaType.KEYWORD)
        if not self.remote:
            _without_fsync_per_point(self.client, name)
        self._ready.add(name)
        return name

    async def upsert(self, collection: str, dataset_id: str, points: Sequence[Point]) -> None:
        if not points:
            return
        name = await self._collection(collection)
        await self.client.upsert(
            name,
            points=[
                models.PointStruct(
                    id=str(uuid.UUID(p.id)), vector=list(p.vector), payload={**p.payload, "dataset_id": dataset_id}
                )
                for p in points
            ],
        )

    async def search(self, collection: str, dataset_id: str, vector: Sequence[float], limit: int) -> list[Hit]:
        name = await self._collection(collection)
        response = await self.client.query_points(
            name, query=list(vector), query_filter=_dataset_filter(dataset_id), limit=limit, with_payload=True
        )
        return [Hit(id=str(p.id), score=float(p.score), payload=dict(p.payload or {})) for p in response.points]

    async def nearest(
        self,
        collection: str,
        vector: Sequence[float],
        limit: int,
        *,
        match: dict[str, str],
        exclude: dict[str, str] | None = None,
    ) -> list[Hit]:
        """The nearest points whose payload has every `match` value and none of the `exclude` values
        (for example the fields of one namespace outside one dataset)."""
        name = await self._collection(collection)

        def conditions(values: dict[str, str]) -> list[models.Condition]:
            return [models.FieldCondition(key=k, match=models.MatchValue(value=v)) for k, v in values.items()]

        response = await self.client.query_points(
            name,
            query=list(vector),
            query_filter=models.Filter(must=conditions(match), must_not=conditions(exclude or {})),
            limit=limit,
            with_payload=True,
        )
        return [Hit(id=str(p.id), score=float(p.score), payload=dict(p.payload or {})) for p in response.points]

    async def delete(self, collection: str, dataset_id: str, **match: str) -> int:
        """Delete a dataset's points (optionally only those whose payload matches); returns how many.
        A collection that does not exist holds none: it is not made (0.04 s locally) to be emptied."""
        if not await self._exists(collection):
            return 0
        name = await self._collection(collection)
        selector = _dataset_filter(dataset_id, **match)
        count = (await self.client.count(name, count_filter=selector, exact=True)).count
        await self.client.delete(name, points_selector=models.FilterSelector(filter=selector))
        return count

    async def count(self, collection: str, dataset_id: str) -> int:
        name = await self._collection(collection)
        return (await self.client.count(name, count_filter=_dataset_filter(dataset_id), exact=True)).count

    async def size(self, collection: str) -> int:
        """Points in `collection`, over every dataset."""
        name = await self._collection(collection)
        return (await self.client.count(name, exact=True)).count

    async def flush(self) -> None:
        """Qdrant persists each write itself."""

    async def close(self) -> None:
        await self.client.close()
