"""Ingestion keeps the catalog's value hints current: every publish (columnar and row path),
a takeover after the publishing worker died, and a clear refresh them."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from datawell.ingest.pipeline import Ingest
from datawell.ingest.worker import Lease, Worker
from datawell.services import Services
from datawell.storage.tables import DatasetHints
from tests.conftest import Account
from tests.ingest.support import create_dataset, dataset_ref, drain, upload
from tests.ingest.test_worker import expire_leases

CLEAR = "/api/v1/data/alice/sales/orders/clear"


def orders_csv(*customers: str) -> bytes:
    lines = "".join(f"{i},{c},{i}.5,true,2024-03-0{i}\n" for i, c in enumerate(customers, 1))
    return ("order_id,customer,total,paid,placed_at\n" + lines).encode()


async def stored(services: Services) -> dict[str, Any] | None:
    """The orders' stored hints, read as the catalog would find them (no computing)."""
    dataset = await dataset_ref(services, "alice")
    async with services.db.read() as session:
        found = await session.execute(sa.select(DatasetHints.hints).where(DatasetHints.dataset_id == dataset.record.id))
        return found.scalar_one_or_none()


async def test_each_ingestion_and_a_clear_refresh_the_hints(client, services: Services, alice: Account) -> None:
    await create_dataset(client, alice)
    await upload(services, "alice", "orders.csv", orders_csv("Ada", "Bob", "Ada"))
    await drain(services)
    first = await stored(services)
    assert first is not None and first["rows"] == 3
    assert first["columns"]["customer"]["values"] == ["Ada", "Bob"]
    assert first["columns"]["placed_at"] == {"type": "timestamp", "low": "2024-03-01", "high": "2024-03-03",
                                             "format": "YYYY-MM-DD"}  # fmt: skip

    await upload(services, "alice", "more.jsonl", b'{"order_id": 9, "customer": "Cy", "total": 1000}\n')
    await drain(services)  # the row path
    second = await stored(services)
    assert second is not None and second["rows"] == 4
    assert second["columns"]["customer"]["values"] == ["Ada", "Bob", "Cy"]
    assert (second["columns"]["total"]["low"], second["columns"]["total"]["high"]) == (1.5, 1000.0)

    assert (await client.post(CLEAR, headers=alice.headers)).status_code == 200
    assert await stored(services) == {"rows": 0, "columns": {name: {"type": kind} for name, kind in [
        ("order_id", "integer"), ("customer", "text"), ("total", "real"), ("paid", "boolean"), ("placed_at", "timestamp"),
    ]}}  # fmt: skip


async def test_a_worker_taking_over_a_published_attempt_refreshes_the_hints(
    client, services: Services, alice: Account
) -> None:
    await create_dataset(client, alice)
    await upload(services, "alice", "orders.csv", orders_csv("Ada", "Bob"))
    claimed = await Worker(services, "first").claim()
    assert claimed is not None
    job, dataset = claimed
    await Ingest(services, job, dataset, Lease(services, job.id, "first"), services.settings.data_dir).run()
    async with services.db.session() as session:  # as if it died between publishing and the hints
        await session.execute(sa.delete(DatasetHints))
    await expire_leases(services)
    assert await Worker(services, "second").run_once() == job.id
    again = await stored(services)
    assert again is not None and again["rows"] == 2
