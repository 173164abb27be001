"""Ingestion tracking over HTTP: listing with its cursor, one attempt, retry, clear."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
from sqlalchemy import update

from datawell.services import Services
from datawell.storage.access import Permission, set_grant
from datawell.storage.tables import Ingestion, Link, utcnow
from datawell.storage.vectors import FIELDS, ROWS, Point
from tests.conftest import Account
from tests.ingest.support import attempt, create_dataset, dataset_ref, drain, rows_of, upload
from tests.pgvector_server import WITH_PGVECTOR

ATTEMPTS = "/api/v1/data/alice/sales/orders/ingest/attempts"
CLEAR = "/api/v1/data/alice/sales/orders/clear"
CSV = b"order_id,customer,total\n1,Ada,1.5\n2,Bob,2\n3,Cy,3\n"


def retry_path(ingestion_id: str) -> str:
    return f"/api/v1/ingestionTracking/{ingestion_id}/retry"


async def test_listing_shows_attempts_as_the_spec_shapes_them(client, services: Services, alice: Account) -> None:
    await create_dataset(client, alice)
    ingestion_id = await upload(services, "alice", "orders.csv", CSV)
    queued = (await client.get(ATTEMPTS, headers=alice.headers)).json()
    [item] = queued["data"]
    assert item["id"] == ingestion_id
    assert item["status"] == "QUEUED"
    assert item["expectedTotalBytes"] == len(CSV)
    assert (item["processedBytes"], item["processedRows"]) == (0, 0)
    await drain(services)
    response = await client.get(ATTEMPTS, headers=alice.headers)
    assert response.status_code == 200
    [item] = response.json()["data"]
    assert set(item) == {
        "id",
        "status",
        "expectedTotalBytes",
        "statusMessage",
        "processedBytes",
        "processedRows",
        "attributes",
    }
    assert item["status"] == "SUCCEEDED"
    assert item["statusMessage"].startswith("ingested 3 rows from orders.csv")
    assert (item["processedBytes"], item["processedRows"]) == (len(CSV), 3)
    attributes = item["attributes"]
    assert set(attributes) == {"name", "seenAt", "originalIngestionId", "lastRetryAt"}
    assert attributes["name"] == "orders.csv"
    assert attributes["originalIngestionId"] is None and attributes["lastRetryAt"] is None
    assert attributes["seenAt"].endswith(("Z", "+00:00"))
    assert response.json()["metadata"] == {"pageSize": 20, "beforeCreatedAt": None}


async def test_one_attempt_shows_its_mapping(client, services: Services, alice: Account) -> None:
    await create_dataset(client, alice)
    ingestion_id = await upload(services, "alice", "orders.csv", CSV)
    await drain(services)
    response = await client.get(f"/api/v1/ingestionTracking/{ingestion_id}", headers=alice.headers)
    assert response.status_code == 200
    mapping = response.json()["mapping"]
    assert mapping["method"] == "similarity"
    assert mapping["fields"]["total"] == "total"
    assert mapping["columns"] == ["order_id", "customer", "total"]


async def test_the_cursor_walks_every_page_newest_first(client, services: Services, alice: Account) -> None:
    await create_dataset(client, alice)
    ids = [await upload(services, "alice", f"f{i}.csv", CSV) for i in range(23)]
    # Three attempts share a creation time across the first page boundary: none may be lost or repeated.
    base = utcnow() - timedelta(hours=1)
    async with services.db.session() as session:
        for n, ingestion_id in enumerate(ids):
            stamp = base + timedelta(seconds=12 if n in (11, 12, 13) else n)
            await session.execute(update(Ingestion).where(Ingestion.id == ingestion_id).values(created_at=stamp))
    seen, pages, cursor = [], [], None
    while True:
        params = {"pageSize": 10} | ({"beforeCreatedAt": cursor} if cursor else {})
        body = (await client.get(ATTEMPTS, params=params, headers=alice.headers)).json()
        assert body["metadata"]["pageSize"] == 10
        pages.append(len(body["data"]))
        seen += [item["id"] for item in body["data"]]
        cursor = body["metadata"]["beforeCreatedAt"]
        if cursor is None:
            break
    assert sorted(seen) == sorted(ids) and len(seen) == len(ids)
    assert seen[:9] == list(reversed(ids))[:9]
    assert pages == [9, 10, 4]  # the first page stops before the three attempts sharing a time


async def test_before_created_at_is_inclusive(client, services: Services, alice: Account) -> None:
    await create_dataset(client, alice)
    first = await upload(services, "alice", "a.csv", CSV)
    await upload(services, "alice", "b.csv", CSV)
    stamp = (await attempt(services, first)).created_at
    body = (await client.get(ATTEMPTS, params={"beforeCreatedAt": stamp.isoformat()}, headers=alice.headers)).json()
    assert [i["id"] for i in body["data"]] == [first]


async def test_page_size_bounds_and_bad_cursor_are_422(client, services: Services, alice: Account) -> None:
    await create_dataset(client, alice)
    for params in ({"pageSize": 0}, {"pageSize": 101}, {"pageSize": "x"}, {"beforeCreatedAt": "yesterday"}):
        response = await client.get(ATTEMPTS, params=params, headers=alice.headers)
        assert response.status_code == 422, params
        assert response.json()["sub_errors"][0]["message"].startswith("query.")
    assert (await client.get(ATTEMPTS, params={"pageSize": 100}, headers=alice.headers)).status_code == 200
    assert (await client.get(ATTEMPTS, params={"pageSize": 1}, headers=alice.headers)).status_code == 200


async def test_listing_needs_read_access(client, services: Services, alice: Account, bob: Account) -> None:
    await create_dataset(client, alice)
    assert (await client.get(ATTEMPTS, headers=bob.headers)).status_code == 403
    assert (await client.get(ATTEMPTS)).status_code == 401
    missing = "/api/v1/data/alice/sales/nope/ingest/attempts"
    assert (await client.get(missing, headers=alice.headers)).status_code == 404


async def test_retry_of_a_failed_attempt_ingests_the_same_object(client, services: Services, alice: Account) -> None:
    await create_dataset(client, alice)
    failed_id = await upload(services, "alice", "late.csv", CSV, put=False)
    await drain(services)
    failed = await attempt(services, failed_id)
    assert failed.status == "FAILED"
    await services.objects.put(failed.object_key, CSV)  # the file is there now

    response = await client.post(retry_path(failed_id), headers=alice.headers)
    assert response.status_code == 201
    new_id = response.json()["id"]
    assert new_id != failed_id
    assert await drain(services) == [new_id]
    assert len(await rows_of(services, "alice")) == 3

    items = {i["id"]: i for i in (await client.get(ATTEMPTS, headers=alice.headers)).json()["data"]}
    assert items[new_id]["status"] == "SUCCEEDED"
    assert items[new_id]["attributes"]["originalIngestionId"] == failed_id
    assert items[new_id]["attributes"]["name"] == "late.csv"
    assert items[new_id]["attributes"]["seenAt"] == items[failed_id]["attributes"]["seenAt"]
    assert items[failed_id]["attributes"]["lastRetryAt"] is not None

    again = await client.post(retry_path(failed_id), headers=alice.headers)
    assert again.status_code == 409  # the same file was ingested by the retry: no duplicate rows
    assert "already ingested" in again.json()["message"]


async def test_retry_of_a_succeeded_attempt_is_409(client, services: Services, alice: Account) -> None:
    await create_dataset(client, alice)
    ingestion_id = await upload(services, "alice", "orders.csv", CSV)
    await drain(services)
    response = await client.post(retry_path(ingestion_id), headers=alice.headers)
    assert response.status_code == 409
    assert response.json()["error_code"] == "CONFLICT"
    assert "SUCCEEDED" in response.json()["message"]


async def test_retry_access_and_unknown_ids(client, services: Services, alice: Account, bob: Account) -> None:
    await create_dataset(client, alice)
    failed_id = await upload(services, "alice", "late.csv", CSV, put=False)
    await drain(services)
    assert (await client.post(retry_path(failed_id), headers=bob.headers)).status_code == 404
    async with services.db.session() as session:
        await set_grant(session, "alice", "sales", "bob", Permission.READ)
    assert (await client.post(retry_path(failed_id), headers=bob.headers)).status_code == 403
    assert (await client.post(retry_path(str(uuid.uuid4())), headers=alice.headers)).status_code == 404
    assert (await client.post(retry_path("not-a-uuid"), headers=alice.headers)).status_code == 422


@pytest.mark.parametrize("database_url", WITH_PGVECTOR, indirect=True)
async def test_clear_removes_rows_vectors_and_links(client, services: Services, alice: Account) -> None:
    await create_dataset(client, alice)
    await create_dataset(client, alice, "customers", {"schemaDefinition": {"name": "Customer name"}})
    await upload(services, "alice", "orders.csv", CSV)
    await upload(services, "alice", "customers.csv", b"name\nAda\n", dataset="customers")
    await drain(services)
    orders, customers = await dataset_ref(services, "alice"), await dataset_ref(services, "alice", "customers")
    [vector] = await services.embedder.embed(["customer"])
    await services.vectors.upsert(FIELDS, orders.record.id, [Point(str(uuid.uuid4()), vector, {"field": "customer"})])
    async with services.db.session() as session:
        session.add_all(
            [
                Link(
                    namespace_id=orders.namespace.id,
                    origin_dataset_id=orders.record.id,
                    destination_dataset_id=customers.record.id,
                    origin="sales/orders.customer",
                    destination="sales/customers.name",
                    match_type="ExactMatch",
                ),
                Link(
                    namespace_id=orders.namespace.id,
                    origin_dataset_id=customers.record.id,
                    destination_dataset_id=orders.record.id,
                    origin="sales/customers.name",
                    destination="sales/orders.customer",
                    match_type="ExactMatch",
                ),
            ]
        )
    queued = await upload(services, "alice", "more.csv", CSV)

    response = await client.post(CLEAR, headers=alice.headers)
    assert response.status_code == 200
    assert response.json() == {"rowsDeleted": 3, "vectorsDeleted": 4, "linksDeleted": 2, "ingestionsCancelled": 1}
    assert await rows_of(services, "alice") == []
    assert await services.vectors.count(ROWS, orders.record.id) == 0
    assert await services.vectors.count(FIELDS, orders.record.id) == 0
    assert len(await rows_of(services, "alice", "customers")) == 1  # other datasets keep theirs
    assert await services.vectors.count(ROWS, customers.record.id) == 1
    cancelled = await attempt(services, queued)
    assert cancelled.status == "CANCELLED" and "cleared" in cancelled.status_message
    assert await drain(services) == []

    again = (await client.post(CLEAR, headers=alice.headers)).json()
    assert again == {"rowsDeleted": 0, "vectorsDeleted": 0, "linksDeleted": 0, "ingestionsCancelled": 0}
    retried = await client.post(retry_path(queued), headers=alice.headers)  # a cancelled attempt can be retried
    assert retried.status_code == 201
    await drain(services)
    assert len(await rows_of(services, "alice")) == 3


async def test_clear_needs_write_access(client, services: Services, alice: Account, bob: Account) -> None:
    await create_dataset(client, alice)
    async with services.db.session() as session:
        await set_grant(session, "alice", "sales", "bob", Permission.READ)
    assert (await client.get(ATTEMPTS, headers=bob.headers)).status_code == 200
    response = await client.post(CLEAR, headers=bob.headers)
    assert response.status_code == 403
    assert response.json()["error_code"] == "FORBIDDEN"


async def test_a_running_attempt_stops_when_its_dataset_is_cleared(client, services: Services, alice: Account) -> None:
    from pathlib import Path

    from datawell.ingest.pipeline import AttemptStopped, Ingest
    from datawell.ingest.worker import Lease, Worker

    await create_dataset(client, alice)
    services.settings.ingest_batch_rows = 1
    ingestion_id = await upload(services, "alice", "orders.csv", CSV)
    worker = Worker(services, "w")
    claimed = await worker.claim()
    assert claimed is not None
    job, dataset = claimed

    class ClearsMidway(Lease):
        async def progress(self, processed_bytes: int, processed_rows: int, message: str | None = None) -> None:
            if processed_rows == 1:
                assert (await client.post(CLEAR, headers=alice.headers)).json()["ingestionsCancelled"] == 1
            await super().progress(processed_bytes, processed_rows, message)

    tracker = ClearsMidway(services, job.id, "w")
    try:
        await Ingest(services, job, dataset, tracker, Path(services.settings.data_dir)).run()
        raise AssertionError("the attempt went on after its dataset was cleared")
    except AttemptStopped:
        await worker.stopped(job, dataset)
    assert (await attempt(services, ingestion_id)).status == "CANCELLED"
    assert await rows_of(services, "alice") == []
    assert await services.vectors.count(ROWS, dataset.id) == 0
