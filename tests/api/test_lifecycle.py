"""A dataset's life over REST: description and schema changed, renamed (with its namespace),
deleted; each leaves nothing behind and never touches another dataset."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy import func, select

from datawell.services import Services
from datawell.storage.access import Permission, find_namespace, set_grant
from datawell.storage.examples import add_example
from datawell.storage.pgvector import PgVectorStore
from datawell.storage.tables import Dataset, Ingestion, Link, Upload, VerifiedExample
from datawell.storage.users import find_user
from datawell.storage.vectors import FIELDS, ROWS, Point
from tests.conftest import Account
from tests.ingest.support import create_dataset, dataset_ref, drain, upload
from tests.pgvector_server import WITH_PGVECTOR

# And on PostgreSQL with pgvector: the vectors are then beside the rows, deleted with them.
pytestmark = pytest.mark.parametrize("database_url", WITH_PGVECTOR, indirect=True)

DATA = "/api/v1/data/alice/sales"
CSV = b"order_id,customer,total\n1,Ada,1.5\n2,Bob,2\n3,Cy,3\n"
CUSTOMERS = {"schemaDefinition": {"name": "Customer name"}}


async def _world(client, services: Services, alice: Account) -> None:
    """orders and customers in alice's `sales`, each with rows, vectors, links between them,
    an open upload, verified examples; and `other/orders`, a dataset of the same name elsewhere."""
    await create_dataset(client, alice)
    await create_dataset(client, alice, "customers", CUSTOMERS)
    response = await client.post("/api/v1/ingest/new/other/orders", json=CUSTOMERS, headers=alice.headers)
    assert response.status_code == 201
    await upload(services, "alice", "orders.csv", CSV)
    await upload(services, "alice", "customers.csv", b"name\nAda\nBob\n", dataset="customers")
    await drain(services)
    orders, customers = await dataset_ref(services, "alice"), await dataset_ref(services, "alice", "customers")
    [vector] = await services.embedder.embed(["customer"])
    for ref in (orders, customers):
        await services.vectors.upsert(FIELDS, ref.record.id, [Point(ref.record.id, vector, {"field": "x"})])
    async with services.db.session() as session:
        for origin, destination in ((orders, customers), (customers, orders)):
            field = {"orders": "customer", "customers": "name"}
            session.add(
                Link(
                    namespace_id=orders.namespace.id,
                    origin_dataset_id=origin.record.id,
                    destination_dataset_id=destination.record.id,
                    origin=f"sales/{origin.name}.{field[origin.name]}",
                    destination=f"sales/{destination.name}.{field[destination.name]}",
                    match_type="ExactMatch",
                )
            )
        user = await find_user(session, "alice")
        assert user is not None
        await add_example(session, orders.namespace, user, "How many orders?", "SELECT count(*) FROM orders")
        await add_example(
            session,
            orders.namespace,
            user,
            "Who ordered?",
            "SELECT c.name FROM customers c JOIN orders o ON o.customer = c.name",
        )
        await add_example(session, orders.namespace, user, "How many customers?", "SELECT count(*) FROM customers")
        other = await find_namespace(session, "alice", "other")
        assert other is not None
        await add_example(session, other, user, "Orders in sales?", "SELECT count(*) FROM alice.sales.orders")
    for name in ("orders", "customers"):
        prepared = await client.post(
            f"/api/v1/upload/multipart/alice/sales/{name}/prepare",
            json={"filename": "next.csv", "size": 10},
            headers=alice.headers,
        )
        assert prepared.status_code == 200, prepared.text
        part = await client.put(prepared.json()["presignedUrls"][0]["url"], content=b"x" * 10)
        assert part.status_code == 200, part.text


async def _counts(services: Services, name: str, namespace: str = "sales") -> dict[str, Any]:
    """What the stores hold of alice's dataset `namespace/name`."""
    async with services.db.session() as session:
        ns = await find_namespace(session, "alice", namespace)
        assert ns is not None
        record = (
            await session.execute(select(Dataset).where(Dataset.namespace_id == ns.id, Dataset.name == name))
        ).scalar_one_or_none()
        if record is None:
            return {"dataset": False}
        links = await session.scalar(
            select(func.count()).where(
                sa.or_(Link.origin_dataset_id == record.id, Link.destination_dataset_id == record.id)
            )
        )
        uploads = await session.scalar(select(func.count()).where(Upload.dataset_id == record.id))
        attempts = await session.scalar(select(func.count()).where(Ingestion.dataset_id == record.id))
    return {
        "dataset": True,
        "rows": await services.rows.count(record),
        "vectors": await services.vectors.count(ROWS, record.id) + await services.vectors.count(FIELDS, record.id),
        "links": links,
        "uploads": uploads,
        "attempts": attempts,
    }


async def _examples(services: Services) -> list[str]:
    async with services.db.session() as session:
        return sorted((await session.execute(select(VerifiedExample.query))).scalars())


def _objects(services: Services) -> list[Path]:
    """The object store's files: objects, and the parts of open uploads."""
    data = services.settings.data_dir
    return sorted(p for root in ("objects", "objects-parts") for p in (data / root).rglob("*") if p.is_file())


async def _tables(services: Services) -> set[str]:
    async with services.rows.engine.connect() as connection:
        return set(await connection.run_sync(lambda c: sa.inspect(c).get_table_names()))


async def test_delete_leaves_nothing_and_frees_the_name(
    client, services: Services, alice: Account, request: pytest.FixtureRequest
) -> None:
    # With pgvector in the rows' PostgreSQL the vectors are there (DATAWELL_VECTOR_STORE=auto).
    assert isinstance(services.vectors, PgVectorStore) == (request.node.callspec.params["database_url"] == "pgvector")
    await _world(client, services, alice)
    orders = await dataset_ref(services, "alice")
    before = await _counts(services, "orders")
    assert before == {"dataset": True, "rows": 3, "vectors": 4, "links": 2, "uploads": 1, "attempts": 1}
    customers_before = await _counts(services, "customers")
    other_before = await _counts(services, "orders", "other")
    objects_before = _objects(services)
    async with services.db.session() as session:
        [ingested] = (
            await session.execute(select(Ingestion.object_key).where(Ingestion.dataset_id == orders.record.id))
        ).scalars()
        [upload_id] = (await session.execute(select(Upload.id).where(Upload.dataset_id == orders.record.id))).scalars()
    owned = [p for p in objects_before if str(p).endswith(ingested) or upload_id in str(p)]
    assert len(owned) == 2  # the file ingested, the open upload's part
    assert orders.record.table_name in await _tables(services)

    response = await client.delete(f"{DATA}/orders", headers=alice.headers)
    assert response.status_code == 200, response.text
    assert response.json() == {
        "rowsDeleted": 3,
        "vectorsDeleted": 4,
        "linksDeleted": 2,
        "uploadsDeleted": 1,
        "objectsDeleted": 2,
        "examplesDeleted": 3,
        "ingestionsEnded": 0,
    }
    assert await _counts(services, "orders") == {"dataset": False}
    assert orders.record.table_name not in await _tables(services)
    assert _objects(services) == [p for p in objects_before if p not in owned]  # the other dataset's are still there
    assert await _examples(services) == ["SELECT count(*) FROM customers"]
    async with services.db.session() as session:
        assert await session.scalar(select(func.count()).select_from(Link)) == 0
        assert await session.scalar(select(func.count()).select_from(Upload)) == 1
    # Every other dataset is as it was, minus its links to the deleted one.
    assert await _counts(services, "customers") == {**customers_before, "links": 0}
    assert await _counts(services, "orders", "other") == other_before

    assert (await client.get(f"{DATA}/orders/rows", headers=alice.headers)).status_code == 404
    assert (await client.delete(f"{DATA}/orders/balefire", headers=alice.headers)).status_code == 404
    again = await client.post("/api/v1/ingest/new/sales/orders", json=CUSTOMERS, headers=alice.headers)
    assert again.status_code == 201
    page = (await client.get(f"{DATA}/orders/rows", headers=alice.headers)).json()
    assert page["data"] == [] and page["metadata"]["columns"] == ["name"]


async def test_delete_ends_queued_attempts_and_balefire_is_the_same(client, services: Services, alice: Account) -> None:
    await create_dataset(client, alice)
    queued = await upload(services, "alice", "orders.csv", CSV)
    response = await client.delete(f"{DATA}/orders/balefire", headers=alice.headers)
    assert response.status_code == 200
    assert response.json()["ingestionsEnded"] == 1 and response.json()["objectsDeleted"] == 1
    async with services.db.session() as session:
        assert await session.get(Ingestion, queued) is None
    assert await drain(services) == []
    assert _objects(services) == []


async def test_only_writers_may_delete_rename_or_change(
    client, services: Services, alice: Account, bob: Account
) -> None:
    await create_dataset(client, alice)
    calls = [
        ("DELETE", f"{DATA}/orders", None),
        ("POST", f"{DATA}/orders/rename", {"name": "x"}),
        ("POST", f"{DATA}/rename", {"name": "x"}),
        ("PUT", f"{DATA}/orders/inferDefinition", {"dataDescription": "x"}),
    ]
    for method, path, body in calls:
        response = await client.request(method, path, json=body, headers=bob.headers)
        assert response.status_code == 403, path
        assert response.json()["error_code"] == "FORBIDDEN"
    async with services.db.session() as session:
        await set_grant(session, "alice", "sales", "bob", Permission.READ)
    for method, path, body in calls:
        assert (await client.request(method, path, json=body, headers=bob.headers)).status_code == 403
    async with services.db.session() as session:
        await set_grant(session, "alice", "sales", "bob", Permission.WRITE)
    response = await client.put(
        f"{DATA}/orders/inferDefinition", json={"dataDescription": "by bob"}, headers=bob.headers
    )
    assert response.status_code == 200 and response.json()["dataDescription"] == "by bob"
    assert (await client.delete(f"{DATA}/nope", headers=alice.headers)).status_code == 404


async def test_rename_moves_rows_links_and_examples(client, services: Services, alice: Account) -> None:
    await _world(client, services, alice)
    before = await _counts(services, "orders")
    customers_before = await _counts(services, "customers")
    response = await client.post(
        f"{DATA}/orders/rename", content="purchases", headers={**alice.headers, "Content-Type": "text/plain"}
    )
    assert response.status_code == 200, response.text
    assert response.json()["datasetName"] == "purchases"
    assert await _counts(services, "orders") == {"dataset": False}
    assert await _counts(services, "purchases") == before
    assert await _counts(services, "customers") == customers_before
    async with services.db.session() as session:
        links = sorted((await session.execute(select(Link.origin, Link.destination))).all())
    assert links == [
        ("sales/customers.name", "sales/purchases.customer"),
        ("sales/purchases.customer", "sales/customers.name"),
    ]
    examples = await _examples(services)
    assert 'SELECT COUNT(*) FROM "purchases"' in examples
    assert 'SELECT COUNT(*) FROM alice.sales."purchases"' in examples
    assert "SELECT count(*) FROM customers" in examples  # untouched
    page = (await client.get(f"{DATA}/purchases/rows", headers=alice.headers)).json()
    assert len(page["data"]) == 3
    assert (await client.get(f"{DATA}/orders/rows", headers=alice.headers)).status_code == 404

    taken = await client.post(f"{DATA}/purchases/rename", json={"name": "customers"}, headers=alice.headers)
    assert taken.status_code == 409 and taken.json()["error_code"] == "CONFLICT"
    bad = await client.post(f"{DATA}/purchases/rename", json={"name": "no spaces"}, headers=alice.headers)
    assert bad.status_code == 422
    wrong = await client.post(
        f"{DATA}/purchases/rename", content=b"x", headers={**alice.headers, "Content-Type": "image/png"}
    )
    assert wrong.status_code == 415


async def test_namespace_rename(client, services: Services, alice: Account) -> None:
    await _world(client, services, alice)
    response = await client.post(
        f"{DATA}/rename", content="shop", headers={**alice.headers, "Content-Type": "text/plain"}
    )
    assert response.status_code == 200, response.text
    assert response.json() == {"owner": "alice", "name": "shop"}
    assert (await client.get("/api/v1/data/alice/shop/orders/rows", headers=alice.headers)).json()["metadata"][
        "count"
    ] == 3
    assert (await client.get(f"{DATA}/orders/rows", headers=alice.headers)).status_code == 404
    async with services.db.session() as session:
        origins = sorted((await session.execute(select(Link.origin))).scalars())
    assert origins == ["shop/customers.name", "shop/orders.customer"]
    assert 'SELECT COUNT(*) FROM alice."shop"."orders"' in await _examples(services)
    taken = await client.post("/api/v1/data/alice/shop/rename", json={"name": "other"}, headers=alice.headers)
    assert taken.status_code == 409


async def test_schema_changes(client, services: Services, alice: Account) -> None:
    await create_dataset(client, alice, "customers", {"schemaDefinition": {"name": "Name", "city": "City"}})
    await upload(services, "alice", "c.csv", b"name,city\nAda,Oslo\nBob,\n", dataset="customers")
    await drain(services)
    path = f"{DATA}/customers/inferDefinition"
    grown = {"name": "Name", "city": "City", "email": "Email address"}
    response = await client.put(
        path, json={"schemaDefinition": grown, "dataDescription": "People"}, headers=alice.headers
    )
    assert response.status_code == 200, response.text
    assert response.json()["schemaDefinition"] == grown and response.json()["dataDescription"] == "People"
    rows = (await client.get(f"{DATA}/customers/rows", headers=alice.headers)).json()["data"]
    assert [(r["name"], r["email"]) for r in rows] == [("Ada", None), ("Bob", None)]

    shrunk = {"name": "Name", "email": "Email address"}
    refused = await client.put(path, json={"schemaDefinition": shrunk}, headers=alice.headers)
    assert refused.status_code == 409
    assert refused.json()["sub_errors"] == [
        {"code": "field_in_use", "message": "schemaDefinition: 'city' has values in 1 rows"}
    ]
    dropped = await client.put(path, params={"force": "true"}, json={"schemaDefinition": shrunk}, headers=alice.headers)
    assert dropped.status_code == 200
    rows = (await client.get(f"{DATA}/customers/rows", headers=alice.headers)).json()["data"]
    assert [set(r) for r in rows] == [{"__id", "name", "email"}] * 2
    # A field with no values goes without force.
    response = await client.put(path, json={"schemaDefinition": {"name": "Name"}}, headers=alice.headers)
    assert response.status_code == 200
    invalid = await client.put(path, json={"schemaDefinition": {"1bad": "x"}}, headers=alice.headers)
    assert invalid.status_code == 422
    recased = await client.put(path, json={"schemaDefinition": {"NAME": "x"}}, headers=alice.headers)
    assert recased.status_code == 422
