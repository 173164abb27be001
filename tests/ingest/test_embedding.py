"""Row embeddings run after the rows are published: rows are queryable meanwhile, semantic()
says its vectors are incomplete, and a worker killed mid-embedding resumes after the last
finished batch."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from datawell.ingest.pipeline import Ingest
from datawell.ingest.worker import Lease, Worker
from datawell.llm.embeddings import HashingEmbedder
from datawell.services import Services
from datawell.storage.vectors import ROWS
from tests.conftest import Account
from tests.ingest.support import attempt, create_dataset, dataset_ref, rows_of, upload
from tests.ingest.test_worker import Killed, expire_leases, orders_csv
from tests.pgvector_server import WITH_PGVECTOR

# And on PostgreSQL with pgvector, which then holds the vectors beside the rows.
pytestmark = pytest.mark.parametrize("database_url", WITH_PGVECTOR, indirect=True)


class GatedEmbedder(HashingEmbedder):
    """Embeds only once the gate opens; remembers every text it embedded."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = asyncio.Event()
        self.waiting = asyncio.Event()
        self.texts: list[str] = []

    async def embed(self, texts: list[str]) -> list[list[float]]:
        self.waiting.set()
        await self.gate.wait()
        self.texts += texts
        return await super().embed(texts)


@pytest.fixture
def embedder(services: Services) -> GatedEmbedder:
    services.embedder = GatedEmbedder()
    services.settings.ingest_embed_rows = True
    services.settings.ingest_embed_batch_rows = 10
    return services.embedder


async def test_rows_are_queryable_before_their_embeddings_finish(
    client, services: Services, alice: Account, embedder: GatedEmbedder
) -> None:
    await create_dataset(client, alice)
    ingestion_id = await upload(services, "alice", "orders.csv", orders_csv())
    running = asyncio.create_task(Worker(services, "w").run_once())
    await asyncio.wait_for(embedder.waiting.wait(), 30)

    assert len(await rows_of(services, "alice")) == 40
    busy = await attempt(services, ingestion_id)
    assert busy.status == "RUNNING"
    assert busy.status_message.startswith("published 40 rows (queryable)")
    found = await services.query_tools.run(
        *await _caller(services), "SELECT customer FROM orders ORDER BY semantic('customer 7') DESC LIMIT 3"
    )
    assert found.semantic_incomplete == ("alice/sales/orders",)
    assert all(row["__metadata"]["semanticIncomplete"] for row in found.rows)

    embedder.gate.set()
    await asyncio.wait_for(running, 30)
    done = await attempt(services, ingestion_id)
    assert done.status == "SUCCEEDED"
    assert done.status_message.startswith("ingested 40 rows from orders.csv")
    assert "published" not in done.mapping and "rowEmbeddings" not in done.mapping
    ref = await dataset_ref(services, "alice")
    assert await services.vectors.count(ROWS, ref.record.id) == 40
    found = await services.query_tools.run(
        *await _caller(services), "SELECT customer FROM orders ORDER BY semantic('customer 7') DESC LIMIT 3"
    )
    assert found.semantic_incomplete == ()
    assert found.rows[0]["customer"] == "customer 7"
    assert "semanticIncomplete" not in found.rows[0]["__metadata"]


class DiesWhileEmbedding:
    """A worker's lease that dies once it has reported 20 rows embedded."""

    def __init__(self, lease: Lease) -> None:
        self.lease = lease

    async def progress(self, processed_bytes: int, processed_rows: int, message: str | None = None) -> None:
        await self.lease.progress(processed_bytes, processed_rows, message)
        if message and "20 of 40 rows embedded" in message:
            raise Killed

    async def record_mapping(self, mapping: dict[str, Any]) -> None:
        await self.lease.record_mapping(mapping)


async def test_a_worker_killed_mid_embedding_resumes_after_the_last_finished_batch(
    client, services: Services, alice: Account, embedder: GatedEmbedder, tmp_path: Path
) -> None:
    embedder.gate.set()
    await create_dataset(client, alice)
    ingestion_id = await upload(services, "alice", "orders.csv", orders_csv())
    first = Worker(services, "first")
    claimed = await first.claim()
    assert claimed is not None
    job, dataset = claimed
    with pytest.raises(Killed):
        await Ingest(services, job, dataset, DiesWhileEmbedding(Lease(services, job.id, "first")), tmp_path).run()
    assert len(embedder.texts) == 20  # two batches of 10
    assert len(await rows_of(services, "alice")) == 40  # published before the embedding started

    await expire_leases(services)
    assert await Worker(services, "second").run_once() == ingestion_id
    done = await attempt(services, ingestion_id)
    assert (done.status, done.processed_rows) == ("SUCCEEDED", 40)
    assert len(embedder.texts) == 40  # the second worker embedded only the 20 rows left
    assert sorted(embedder.texts) == sorted(set(embedder.texts))
    assert len(await rows_of(services, "alice")) == 40  # not ingested again
    assert await services.vectors.count(ROWS, dataset.id) == 40


async def _caller(services: Services) -> tuple[Any, Any]:
    """alice and her `sales` namespace, as the query tools take them."""
    from datawell.storage.access import find_namespace
    from datawell.storage.users import find_user

    async with services.db.session() as session:
        user = await find_user(session, "alice")
        namespace = await find_namespace(session, "alice", "sales")
    assert user is not None and namespace is not None
    return user, namespace


async def test_every_row_of_every_dataset_is_embedded_and_searchable_with_no_cap(
    client, services: Services, alice: Account, embedder: GatedEmbedder
) -> None:
    """The embedded store has no cap (the old local mode stopped at 5,000 row vectors over all
    datasets): a dataset's rows are all embedded, and so are a second dataset's after it."""
    embedder.gate.set()
    await create_dataset(client, alice)
    await create_dataset(client, alice, "orders2")
    first = await upload(services, "alice", "orders.csv", orders_csv())
    assert await Worker(services, "w").run_once() == first
    second = await upload(services, "alice", "orders2.csv", orders_csv(), "orders2")
    assert await Worker(services, "w").run_once() == second

    for name, ingestion_id in (("orders", first), ("orders2", second)):
        done = await attempt(services, ingestion_id)
        assert done.status == "SUCCEEDED"
        assert "semantic() covers" not in done.status_message
        assert await services.vectors.count(ROWS, (await dataset_ref(services, "alice", name)).record.id) == 40
        found = await services.query_tools.run(
            *await _caller(services), f"SELECT customer FROM {name} ORDER BY semantic('customer 7') DESC LIMIT 1"
        )
        assert found.semantic_incomplete == ()
        assert found.rows[0]["customer"] == "customer 7"
    assert len(embedder.texts) == 80
