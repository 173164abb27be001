"""Which vector store a deployment gets (`open_vector_store`, DATAWELL_VECTOR_STORE): pgvector
when the rows are in a PostgreSQL that has it, else the embedded index, with a line saying why."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest

from datawell.config import Settings
from datawell.llm.embeddings import HashingEmbedder
from datawell.services import open_vector_store
from datawell.storage.pgvector import PgVectorStore
from datawell.storage.rows import RowStore
from datawell.storage.vector_index import EmbeddedVectorStore
from tests.pgvector_server import fresh_database


@pytest.mark.postgres
async def test_rows_in_a_postgresql_with_pgvector_hold_the_vectors_unless_the_data_folder_already_does(
    pgvector_url: str, tmp_path: Path
) -> None:
    async with fresh_database(pgvector_url) as url:
        rows = RowStore(url)
        store = await open_vector_store(Settings(data_dir=tmp_path, database_url=url), HashingEmbedder(), rows)
        assert isinstance(store, PgVectorStore)

        embedded = EmbeddedVectorStore(HashingEmbedder().dimension, tmp_path / "vectors")  # an earlier release's
        await embedded.close()
        store = await open_vector_store(Settings(data_dir=tmp_path, database_url=url), HashingEmbedder(), rows)
        assert isinstance(store, EmbeddedVectorStore)  # its vectors stay searchable
        await store.close()
        chosen = Settings(data_dir=tmp_path, database_url=url, vector_store="pgvector")
        assert isinstance(await open_vector_store(chosen, HashingEmbedder(), rows), PgVectorStore)
        await rows.close()


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
