"""Every vector store (the embedded on-disk index, the default; Qdrant: its local mode
stands in for the server, same client and filters; pgvector, when DATAWELL_TEST_PGVECTOR_URL
names a server: tests/pgvector_server.py) searches one dataset inside the search,
counts and deletes what it holds; the embedded index opens a saved index as it is and mends
one that lags its record."""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import subprocess
import sys
import textwrap
import uuid
import zlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import numpy as np
import pytest
import sqlalchemy as sa
from usearch.index import ScalarKind

from datawell.config import Settings
from datawell.errors import Conflict
from datawell.llm.embeddings import HashingEmbedder
from datawell.services import open_vector_store
from datawell.storage.db import create_engine
from datawell.storage.migration import convert_local_mode
from datawell.storage.pgvector import PgVectorStore, enable_pgvector, has_hnsw_index, hnsw_index, partition_name
from datawell.storage.qdrant import QdrantVectorStore
from datawell.storage.rows import RowStore
from datawell.storage.vector_index import EmbeddedVectorStore
from datawell.storage.vectors import FIELDS, ROWS, Point, VectorStore
from tests.pgvector_server import SETTING, fresh_database, pgserver_cluster

DIMENSION = HashingEmbedder().dimension


@pytest.fixture(params=["embedded", "qdrant", pytest.param("pgvector", marks=pytest.mark.postgres)])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[VectorStore]:
    if request.param == "pgvector":
        async with pgvector_store(request.getfixturevalue("pgvector_url")) as pgvector:
            yield pgvector
        return
    opened: VectorStore = (
        EmbeddedVectorStore(DIMENSION, tmp_path / "vectors")
        if request.param == "embedded"
        else QdrantVectorStore(DIMENSION)
    )
    yield opened
    await opened.close()


@asynccontextmanager
async def pgvector_store(server: str, dimension: int = DIMENSION) -> AsyncIterator[PgVectorStore]:
    async with fresh_database(server) as url:
        engine = create_engine(url)
        assert await enable_pgvector(engine) is None
        yield PgVectorStore(engine, dimension)
        await engine.dispose()


async def points(texts: list[str], **payload: str) -> list[Point]:
    vectors = await HashingEmbedder().embed(texts)
    return [Point(str(uuid.uuid4()), v, {"text": t, **payload}) for t, v in zip(texts, vectors, strict=True)]


async def test_search_is_scoped_to_a_dataset_and_delete_counts(store: VectorStore) -> None:
    await store.upsert(ROWS, "a", await points(["red apple pie", "blue sky"]))
    await store.upsert(ROWS, "b", await points(["red apple juice"]))
    [query] = await HashingEmbedder().embed(["apple pie"])
    hits = await store.search(ROWS, "a", query, limit=5)
    assert [h.payload["text"] for h in hits] == ["red apple pie", "blue sky"]
    assert hits[0].score > hits[1].score
    assert hits[0].payload["dataset_id"] == "a"
    assert await store.delete(ROWS, "a") == 2
    assert await store.count(ROWS, "a") == 0
    assert await store.search(ROWS, "a", query, limit=5) == []
    assert await store.count(ROWS, "b") == 1
    assert await store.size(ROWS) == 1


async def test_a_datasets_top_k_is_complete_when_another_datasets_points_are_all_nearer(store: VectorStore) -> None:
    """The dataset filter runs inside the search: 300 of another tenant's points equal to the
    question do not push this dataset's 12 out of its top 10."""
    await store.upsert(ROWS, "theirs", await points(["apple pie"] * 300))
    await store.upsert(ROWS, "mine", await points([f"row {i} apple" for i in range(12)]))
    [query] = await HashingEmbedder().embed(["apple pie"])
    hits = await store.search(ROWS, "mine", query, limit=10)
    assert len(hits) == 10
    assert {h.payload["dataset_id"] for h in hits} == {"mine"}


async def test_a_pgvector_search_reads_only_its_own_datasets_partition(pgvector_url: str) -> None:
    """Another dataset's points are not read: with their partition locked against everything
    (as a DROP would), this dataset's search still answers."""
    async with pgvector_store(pgvector_url) as store:
        await store.upsert(ROWS, "theirs", await points(["apple pie"] * 50))
        await store.upsert(ROWS, "mine", await points(["row 1 apple", "row 2 apple"]))
        [query] = await HashingEmbedder().embed(["apple pie"])
        theirs = partition_name(store.table(ROWS).name, "theirs")
        async with store.engine.connect() as other:
            await other.exec_driver_sql("BEGIN")
            await other.exec_driver_sql(f'LOCK TABLE "{theirs}" IN ACCESS EXCLUSIVE MODE')
            hits = await asyncio.wait_for(store.search(ROWS, "mine", query, limit=10), timeout=30)
            await other.exec_driver_sql("ROLLBACK")
        assert sorted(h.payload["text"] for h in hits) == ["row 1 apple", "row 2 apple"]


async def test_a_pgvector_partition_gets_its_index_when_its_first_ingestion_flushes(
    pgvector_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    """A new dataset's points go in without an HNSW index (searched exactly meanwhile); `flush`
    builds it in one statement and the planner then searches through it. A process that died
    before flushing leaves the partition unindexed: the next one to write it builds the index."""
    made = np.random.default_rng(48).standard_normal((300, DIMENSION))
    written = [Point(str(uuid.uuid4()), v.tolist(), {"text": f"row {i} apple"}) for i, v in enumerate(made)]
    async with pgvector_store(pgvector_url) as store:
        await store.upsert(ROWS, "mine", written[:200])
        partition = partition_name(store.table(ROWS).name, "mine")
        async with store.engine.connect() as connection:
            assert not await has_hnsw_index(connection, partition)
        hits = await store.search(ROWS, "mine", written[7].vector, limit=1)
        assert [h.payload["text"] for h in hits] == ["row 7 apple"]

        # The first process died before its flush; the next one builds with the memory it is given.
        second = PgVectorStore(store.engine, DIMENSION, build_memory_mb=96)
        await second.upsert(ROWS, "mine", written[200:])
        sent: list[str] = []

        def record(_connection: object, _cursor: object, statement: str, parameters: object, *_: object) -> None:
            sent.append(f"{statement} {parameters}")

        sa.event.listen(store.engine.sync_engine, "before_cursor_execute", record)
        await second.flush()
        sa.event.remove(store.engine.sync_engine, "before_cursor_execute", record)
        assert any("maintenance_work_mem" in line and str(96 << 20) in line for line in sent)
        async with store.engine.connect() as connection:
            assert await has_hnsw_index(connection, partition)
            query = (
                f"EXPLAIN SELECT id FROM \"{store.table(ROWS).name}\" WHERE dataset_id = 'mine' "
                f"ORDER BY embedding <=> '{list(written[250].vector)}' LIMIT 10"
            )
            plan = "\n".join(row[0] for row in await connection.exec_driver_sql(query))
        assert hnsw_index(partition) in plan
        hits = await store.search(ROWS, "mine", written[250].vector, limit=1)
        assert [h.payload["text"] for h in hits] == ["row 250 apple"]
        assert await store.count(ROWS, "mine") == 300
    assert not [r for r in caplog.records if "shared_buffers" in r.getMessage()]  # its index fits them


@pytest.mark.postgres
@pytest.mark.skipif(SETTING != "pgserver", reason="starts a server of its own: DATAWELL_TEST_PGVECTOR_URL=pgserver")
async def test_an_index_larger_than_the_servers_shared_buffers_is_told_to_the_operator(
    caplog: pytest.LogCaptureFixture, tmp_path: Path
) -> None:
    """An HNSW index that outgrows the server's shared_buffers is read through the operating
    system at each search (1.6 times as slow at a million vectors): its build says so, with both
    sizes and the setting to raise, and so does each start of the service after."""
    made = np.random.default_rng(48).standard_normal((3000, DIMENSION))
    written = [Point(str(uuid.uuid4()), v.tolist(), {"text": f"row {i}"}) for i, v in enumerate(made)]
    caplog.set_level(logging.WARNING, logger="datawell.storage.pgvector")
    with pgserver_cluster({"shared_buffers": "1MB"}) as server:
        async with fresh_database(server) as url:
            engine = create_engine(url)
            assert await enable_pgvector(engine) is None
            store = PgVectorStore(engine, DIMENSION)
            await store.upsert(ROWS, "mine", written)
            await store.flush()
            index = hnsw_index(partition_name(store.table(ROWS).name, "mine"))
            async with engine.connect() as connection:
                size = await connection.scalar(sa.func.pg_relation_size(index))
            await engine.dispose()
            [built] = [r.getMessage() for r in caplog.records if "shared_buffers" in r.getMessage()]
            caplog.clear()
            rows = RowStore(url)
            await open_vector_store(Settings(data_dir=tmp_path, database_url=url), HashingEmbedder(), rows)
            await rows.close()
    [started] = [r.getMessage() for r in caplog.records if "shared_buffers" in r.getMessage()]
    for told in (built, started):
        assert f"the index {index} ({size >> 20} MB) is larger than the server's shared_buffers (1 MB)" in told
        assert "a quarter of the server's memory" in told


async def test_recall_at_10_against_exact_search(store: VectorStore) -> None:
    """A few thousand vectors in clusters (as text embeddings are): the approximate top 10
    holds at least 95% of the exact one, for a dataset beside another of the same size."""
    rng = np.random.default_rng(7)
    centers = rng.standard_normal((40, DIMENSION))
    made = centers[rng.integers(0, 40, 4000)] + 0.6 * rng.standard_normal((4000, DIMENSION))
    made /= np.linalg.norm(made, axis=1, keepdims=True)
    ids = [str(uuid.uuid4()) for _ in made]
    mine = [Point(i, v.tolist(), {"n": str(n)}) for n, (i, v) in enumerate(zip(ids, made, strict=True))]
    for start in range(0, 2000, 500):
        await store.upsert(ROWS, "mine", mine[start : start + 500])
        await store.upsert(ROWS, "theirs", mine[2000 + start : 2500 + start])
    await store.flush()
    found = 0
    for query in made[rng.integers(0, 2000, 20)] + 0.1 * rng.standard_normal((20, DIMENSION)):
        exact = set(np.argsort(-(made[:2000] @ query))[:10].tolist())
        hits = await store.search(ROWS, "mine", query.tolist(), limit=10)
        found += len(exact & {int(h.payload["n"]) for h in hits})
    assert found / 200 >= 0.95


async def test_a_point_written_again_replaces_the_old_one(store: VectorStore) -> None:
    [point] = await points(["red apple pie"])
    await store.upsert(ROWS, "a", [point])
    [other] = await HashingEmbedder().embed(["blue sky"])
    await store.upsert(ROWS, "a", [Point(point.id, other, {"text": "blue sky"})])
    hits = await store.search(ROWS, "a", other, limit=5)
    assert [(h.id, h.payload["text"]) for h in hits] == [(point.id, "blue sky")]
    assert await store.count(ROWS, "a") == 1


async def test_delete_by_payload_removes_only_the_matching_points(store: VectorStore) -> None:
    await store.upsert(ROWS, "a", await points(["red apple pie", "blue sky"], ingestion_id="old"))
    await store.upsert(ROWS, "a", await points(["green apple"], ingestion_id="new"))
    assert await store.delete(ROWS, "a", ingestion_id="old") == 2
    [query] = await HashingEmbedder().embed(["apple"])
    assert [h.payload["text"] for h in await store.search(ROWS, "a", query, limit=5)] == ["green apple"]


async def test_nearest_filters_by_payload_inside_the_search(store: VectorStore) -> None:
    await store.upsert(FIELDS, "a", await points(["customer name"], namespace_id="n1"))
    await store.upsert(FIELDS, "b", await points(["customer id"], namespace_id="n1"))
    await store.upsert(FIELDS, "c", await points(["customer"], namespace_id="n2"))
    [query] = await HashingEmbedder().embed(["customer"])
    hits = await store.nearest(FIELDS, query, 5, match={"namespace_id": "n1"}, exclude={"dataset_id": "a"})
    assert [(h.payload["text"], h.payload["dataset_id"]) for h in hits] == [("customer id", "b")]


async def test_vectors_of_another_embedder_are_never_compared(tmp_path: Path) -> None:
    [vector] = await HashingEmbedder().embed(["red apple pie"])
    store = EmbeddedVectorStore(len(vector), tmp_path, space="minilm")
    await store.upsert(ROWS, "a", [Point(str(uuid.uuid4()), vector, {"text": "red apple pie"})])
    await store.close()
    store = EmbeddedVectorStore(len(vector), tmp_path, space="minilm-static")  # the setting changed
    assert await store.search(ROWS, "a", vector, limit=5) == []
    assert await store.count(ROWS, "a") == 0
    await store.close()


async def test_deleting_from_a_qdrant_collection_that_was_never_made_does_not_make_it() -> None:
    """An attempt deletes its vectors before it writes; with none ever stored, the collection
    is not created (0.04 s locally) only to be emptied."""
    store = QdrantVectorStore(DIMENSION)
    assert await store.delete(ROWS, "a", ingestion_id="x") == 0
    assert not await store.client.collection_exists(ROWS)
    await store.close()


async def test_a_closed_index_reopens_from_its_file_and_a_lagging_one_is_mended(tmp_path: Path) -> None:
    store = EmbeddedVectorStore(DIMENSION, tmp_path)
    written = await points([f"row {i} apple" for i in range(50)])
    await store.upsert(ROWS, "a", written)
    await store.close()  # saved: the next open maps the file as it is
    assert (tmp_path / "rows" / "a.usearch").exists()

    store = EmbeddedVectorStore(DIMENSION, tmp_path)
    hits = await store.search(ROWS, "a", written[7].vector, limit=1)
    assert [h.payload["text"] for h in hits] == ["row 7 apple"]
    # Written and replaced after the save, then the process ends without saving: the file lags.
    later = await points(["blue sky"])
    await store.upsert(ROWS, "a", later)
    await store.upsert(ROWS, "a", [Point(written[7].id, later[0].vector, {"text": "row 7 again"})])
    abandon(store)

    store = EmbeddedVectorStore(DIMENSION, tmp_path)
    hits = await store.search(ROWS, "a", later[0].vector, limit=3)
    assert sorted(h.payload["text"] for h in hits[:2]) == ["blue sky", "row 7 again"]
    assert "row 7 apple" not in [h.payload["text"] for h in await store.search(ROWS, "a", written[7].vector, 60)]
    assert await store.count(ROWS, "a") == 51
    await store.close()


async def test_a_search_orders_the_indexs_nearest_by_their_exact_cosine(tmp_path: Path) -> None:
    """The index keeps vectors in 8 bits; the hits and their scores are the record's exact cosines.
    The points differ from each other by less than 8 bits tell apart (one shared direction)."""
    rng = np.random.default_rng(7)
    shared = rng.standard_normal(DIMENSION)
    matrix = shared * 6 + rng.standard_normal((300, DIMENSION))
    store = EmbeddedVectorStore(DIMENSION, tmp_path)
    await store.upsert(ROWS, "a", [Point(str(i), v.tolist(), {}) for i, v in enumerate(matrix)])
    question = shared * 6 + rng.standard_normal(DIMENSION)
    hits = await store.search(ROWS, "a", question.tolist(), limit=10)
    stored = matrix.astype(np.float16).astype(np.float64)
    exact = stored @ question / (np.linalg.norm(stored, axis=1) * np.linalg.norm(question))
    assert [h.id for h in hits] == [str(i) for i in np.argsort(-exact)[:10]]
    assert [h.score for h in hits] == pytest.approx(sorted(exact, reverse=True)[:10], abs=1e-5)
    await store.close()


async def test_an_index_saved_in_half_precision_by_an_earlier_release_is_searched_as_it_is(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("datawell.storage.vector_index.INDEX_DTYPE", "f16")
    store = EmbeddedVectorStore(DIMENSION, tmp_path)
    written = await points([f"row {i} pear" for i in range(40)])
    await store.upsert(ROWS, "a", written)
    await store.close()
    monkeypatch.undo()

    store = EmbeddedVectorStore(DIMENSION, tmp_path)
    hits = await store.search(ROWS, "a", written[3].vector, limit=1)
    assert [h.payload["text"] for h in hits] == ["row 3 pear"]
    assert store._open[(ROWS, "a")].index.dtype == ScalarKind.F16
    await store.upsert(ROWS, "a", await points(["row 40 pear"]))  # written to as it is, not rebuilt
    await store.close()
    store = EmbeddedVectorStore(DIMENSION, tmp_path)
    assert await store.count(ROWS, "a") == 41
    hits = await store.search(ROWS, "a", written[5].vector, limit=1)
    assert [h.payload["text"] for h in hits] == ["row 5 pear"]
    await store.close()


def abandon(store: EmbeddedVectorStore) -> None:
    """What a killed process leaves: the record as committed, the index files as last saved."""
    store.db.close()
    os.close(store._lock_file)


async def test_a_second_process_is_told_the_folder_is_in_use(tmp_path: Path) -> None:
    store = EmbeddedVectorStore(DIMENSION, tmp_path)
    with pytest.raises(Conflict, match="is in use by another process"):
        EmbeddedVectorStore(DIMENSION, tmp_path)
    await store.close()


def vector_of(text: str) -> list[float]:
    """A random vector of its own for each text (the hashing embedder's words collide)."""
    return np.random.default_rng(zlib.crc32(text.encode())).standard_normal(DIMENSION).tolist()


WRITER = """
import asyncio, sys, uuid
from pathlib import Path
from datawell.storage.vector_index import EmbeddedVectorStore
from datawell.storage.vectors import ROWS, Point
from tests.storage.test_vectors import DIMENSION, vector_of

async def main():
    store = EmbeddedVectorStore(DIMENSION, Path(sys.argv[1]))
    batch = 0
    while True:
        texts = [f"batch{batch} row{i}" for i in range(200)]
        await store.upsert(ROWS, "a", [Point(str(uuid.uuid4()), vector_of(t), {"text": t}) for t in texts])
        if batch == 2:
            await store.flush()  # a saved index the later batches make lag
        batch += 1
        print(batch, flush=True)

asyncio.run(main())
"""


async def test_an_index_killed_while_written_opens_with_every_committed_point_searchable(tmp_path: Path) -> None:
    writer = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(WRITER), str(tmp_path)],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])},
    )
    assert writer.stdout is not None
    while int(writer.stdout.readline() or 0) < 6:  # batches past the saved index
        assert writer.poll() is None, "the writer ended early"
    writer.send_signal(signal.SIGKILL)
    writer.wait()

    store = EmbeddedVectorStore(DIMENSION, tmp_path)
    count = await store.count(ROWS, "a")
    assert count >= 6 * 200 and count % 200 == 0  # whole batches only
    for batch in range(count // 200):
        [hit] = await store.search(ROWS, "a", vector_of(f"batch{batch} row5"), limit=1)
        assert hit.payload["text"] == f"batch{batch} row5"
    await store.close()


async def test_a_data_folder_of_local_mode_vectors_is_converted_once_and_removed(tmp_path: Path) -> None:
    old = QdrantVectorStore(DIMENSION, path=tmp_path / "qdrant", space="minilm-static")
    rows, fields = await points(["red apple pie", "blue sky"], ingestion_id="i1"), await points(["customer"])
    await old.upsert(ROWS, "a", rows)
    await old.upsert(FIELDS, "a", fields)
    await old.close()

    assert await convert_local_mode(tmp_path / "qdrant", tmp_path / "vectors", DIMENSION) == 3
    assert not (tmp_path / "qdrant").exists()
    store = EmbeddedVectorStore(DIMENSION, tmp_path / "vectors", space="minilm-static")
    hits = await store.search(ROWS, "a", rows[0].vector, limit=5)
    assert (hits[0].id, hits[0].payload["text"]) == (rows[0].id, "red apple pie")
    assert await store.count(ROWS, "a") == 2 and await store.count(FIELDS, "a") == 1
    assert await store.delete(ROWS, "a", ingestion_id="i1") == 2  # the payload still names the attempt
    await store.close()
    assert await convert_local_mode(tmp_path / "qdrant", tmp_path / "vectors", DIMENSION) == 0
