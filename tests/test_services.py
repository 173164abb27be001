"""Which vector store a deployment gets (`open_vector_store`, DATAWELL_VECTOR_STORE): pgvector
when the rows are in a PostgreSQL that has it (an earlier embedded index is moved in), else
the embedded index, with a line saying why."""

from __future__ import annotations

import logging
import os
import uuid
from pathlib import Path

import pytest

from datawell.config import Settings
from datawell.llm.embeddings import HashingEmbedder
from datawell.services import open_vector_store
from datawell.storage.pgvector import PgVectorStore, has_hnsw_index, partition_name
from datawell.storage.rows import RowStore
from datawell.storage.vector_index import EmbeddedVectorStore
from datawell.storage.vectors import FIELDS, ROWS, Point
from tests.pgvector_server import fresh_database


@pytest.mark.postgres
async def test_rows_in_a_postgresql_with_pgvector_hold_the_vectors_and_the_embedded_index_moves_in(
    pgvector_url: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    embedder = HashingEmbedder()
    rows_points = [Point(str(uuid.uuid4()), v, {"text": t, "ingestion_id": "i1"}) for t, v in await texts(embedder)]
    field = Point(str(uuid.uuid4()), rows_points[0].vector, {"namespace_id": "n1", "field": "name"})
    earlier = EmbeddedVectorStore(embedder.dimension, tmp_path / "vectors", space=embedder.space)
    await earlier.upsert(ROWS, "d1", rows_points[:2])
    await earlier.upsert(ROWS, "d2", rows_points[2:])
    await earlier.upsert(FIELDS, "d1", [field])
    await earlier.close()
    async with fresh_database(pgvector_url) as url:
        rows = RowStore(url)
        with caplog.at_level(logging.INFO, logger="datawell.storage.migration"):
            store = await open_vector_store(Settings(data_dir=tmp_path, database_url=url), embedder, rows)
        assert isinstance(store, PgVectorStore)
        assert "moved 4 vectors from" in caplog.text and not (tmp_path / "vectors").exists()
        hits = await store.search(ROWS, "d1", rows_points[1].vector, limit=5)
        assert (hits[0].id, hits[0].payload["text"]) == (rows_points[1].id, "blue sky")
        assert await store.count(ROWS, "d1") == 2 and await store.count(ROWS, "d2") == 1
        async with store.engine.connect() as connection:  # each moved dataset's partition indexed whole
            for dataset in ("d1", "d2"):
                assert await has_hnsw_index(connection, partition_name(store.table(ROWS).name, dataset))
        assert await store.delete(ROWS, "d2", ingestion_id="i1") == 1  # the attempt moved with its points
        [moved] = await store.nearest(FIELDS, field.vector, 5, match={"namespace_id": "n1"})
        assert moved.payload == {"namespace_id": "n1", "field": "name", "dataset_id": "d1"}

        chosen = Settings(data_dir=tmp_path, database_url=url, vector_store="pgvector")
        assert isinstance(await open_vector_store(chosen, embedder, rows), PgVectorStore)
        await rows.close()


async def texts(embedder: HashingEmbedder) -> list[tuple[str, list[float]]]:
    words = ["red apple pie", "blue sky", "green garden hose"]
    return list(zip(words, await embedder.embed(words), strict=True))


@pytest.mark.postgres
async def test_a_postgresql_without_pgvector_keeps_the_embedded_index_and_says_why(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """DATAWELL_TEST_POSTGRES_URL: Debian 12's PostgreSQL, which has no pgvector (.ci/run)."""
    server = os.environ.get("DATAWELL_TEST_POSTGRES_URL")
    if not server:
        pytest.skip("DATAWELL_TEST_POSTGRES_URL is not set")
    async with fresh_database(server) as url:
        rows = RowStore(url)
        if await rows_have_pgvector(rows):
            pytest.skip("this PostgreSQL has pgvector")
        with caplog.at_level(logging.INFO, logger="datawell.services"):
            store = await open_vector_store(Settings(data_dir=tmp_path, database_url=url), HashingEmbedder(), rows)
        assert isinstance(store, EmbeddedVectorStore)
        await store.close()
        assert "not pgvector in the rows' database: its PostgreSQL server has no pgvector extension" in caplog.text
        chosen = Settings(data_dir=tmp_path, database_url=url, vector_store="pgvector")
        with pytest.raises(ValueError, match="DATAWELL_VECTOR_STORE=pgvector, but the rows database cannot"):
            await open_vector_store(chosen, HashingEmbedder(), rows)
        await rows.close()


async def rows_have_pgvector(rows: RowStore) -> bool:
    import sqlalchemy as sa

    async with rows.engine.connect() as connection:
        query = "SELECT 1 FROM pg_available_extensions WHERE name = 'vector'"
        return bool(await connection.scalar(sa.text(query)))


async def test_sqlite_rows_keep_the_embedded_index_and_refuse_pgvector(tmp_path: Path) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'rows.db'}"
    rows = RowStore(url)
    store = await open_vector_store(Settings(data_dir=tmp_path, database_url=url), HashingEmbedder(), rows)
    assert isinstance(store, EmbeddedVectorStore)
    await store.close()
    chosen = Settings(data_dir=tmp_path, database_url=url, vector_store="pgvector")
    with pytest.raises(ValueError, match="the rows are in SQLite"):
        await open_vector_store(chosen, HashingEmbedder(), rows)
    await rows.close()
