from __future__ import annotations

import uuid
from pathlib import Path

from datawell.llm.embeddings import HashingEmbedder
from datawell.storage.vectors import ROWS, Point, VectorStore


async def test_search_is_scoped_to_a_dataset_and_delete_counts() -> None:
    embedder = HashingEmbedder()
    store = VectorStore(embedder.dimension)
    texts = {"a": ["red apple pie", "blue sky"], "b": ["red apple juice"]}
    for dataset_id, items in texts.items():
        vectors = await embedder.embed(items)
        await store.upsert(
            ROWS, dataset_id, [Point(str(uuid.uuid4()), v, {"text": t}) for t, v in zip(items, vectors, strict=True)]
        )
    [query] = await embedder.embed(["apple pie"])
    hits = await store.search(ROWS, "a", query, limit=5)
    assert [h.payload["text"] for h in hits] == ["red apple pie", "blue sky"]
    assert hits[0].score > hits[1].score
    assert await store.delete(ROWS, "a") == 2
    assert await store.count(ROWS, "a") == 0
    assert await store.count(ROWS, "b") == 1
    await store.close()


async def test_vectors_of_another_embedder_are_never_compared(tmp_path: Path) -> None:
    [vector] = await HashingEmbedder().embed(["red apple pie"])
    store = VectorStore(len(vector), path=tmp_path, space="minilm")
    await store.upsert(ROWS, "a", [Point(str(uuid.uuid4()), vector, {"text": "red apple pie"})])
    await store.close()
    store = VectorStore(len(vector), path=tmp_path, space="minilm-static")  # the setting changed
    assert await store.search(ROWS, "a", vector, limit=5) == []
    assert await store.count(ROWS, "a") == 0
    await store.close()


async def test_deleting_from_a_collection_that_was_never_made_does_not_make_it() -> None:
    """An attempt deletes its vectors before it writes; with none ever stored, the collection
    is not created (0.04 s locally) only to be emptied."""
    store = VectorStore(HashingEmbedder().dimension)
    assert await store.delete(ROWS, "a", ingestion_id="x") == 0
    assert not await store.client.collection_exists(ROWS)
    await store.close()
