"""What every vector store offers (`VectorStore`) and the points and hits it takes and gives.
A deployment gets a Qdrant server when DATAWELL_QDRANT_URL names one (`storage/qdrant.py`),
else pgvector in the rows' PostgreSQL when it has the extension (`storage/pgvector.py`), else
the embedded on-disk index in the data folder (`storage/vector_index.py`): DATAWELL_VECTOR_STORE.

Collections named by callers (`ROWS`, `FIELDS`) are stored under names that carry the
embedder's `space`, so vectors of another model (an earlier setting) are never compared with
this one's; a point's payload names the dataset it belongs to, and every search is of one
dataset (or of payload values), filtered inside the store's search."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

ROWS = "rows"
FIELDS = "fields"


@dataclass(frozen=True)
class Point:
    id: str  # a UUID: the row's __id, or any stable id
    vector: Sequence[float]
    payload: dict[str, Any]


@dataclass(frozen=True)
class Hit:
    id: str
    score: float  # cosine similarity
    payload: dict[str, Any]


class VectorStore(Protocol):
    dimension: int
    space: str
    remote: bool  # another process (a server) holds the vectors

    async def upsert(self, collection: str, dataset_id: str, points: Sequence[Point]) -> None: ...

    async def search(self, collection: str, dataset_id: str, vector: Sequence[float], limit: int) -> list[Hit]:
        """The `limit` nearest points of one dataset, nearest first."""
        ...

    async def nearest(
        self,
        collection: str,
        vector: Sequence[float],
        limit: int,
        *,
        match: dict[str, str],
        exclude: dict[str, str] | None = None,
    ) -> list[Hit]:
        """The nearest points whose payload has every `match` value and none of the `exclude`
        values (for example the fields of one namespace outside one dataset)."""
        ...

    async def delete(self, collection: str, dataset_id: str, **match: str) -> int:
        """Delete a dataset's points (optionally only those whose payload matches); returns how many."""
        ...

    async def count(self, collection: str, dataset_id: str) -> int: ...

    async def size(self, collection: str) -> int:
        """Points in `collection`, over every dataset."""
        ...

    async def flush(self) -> None:
        """Make what was written cheap to reopen (a batch of writes has ended)."""
        ...

    async def close(self) -> None: ...


def stored_name(collection: str, space: str) -> str:
    return f"{collection}-{space}" if space else collection
