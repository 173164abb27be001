"""Rows back over REST: pages by cursor, columns, filters (checked as queries), and the files."""

from __future__ import annotations

import csv
import io
import json

import pyarrow.parquet as pq
import pytest

from datawell.services import Services
from datawell.storage.access import Permission, set_grant
from tests.conftest import Account
from tests.ingest.support import create_dataset, drain, upload

ROWS = "/api/v1/data/alice/sales/orders/rows"
CSV = "order_id,customer,total,paid,placed_at\n" + "".join(
    f"{n},{'Ada' if n % 3 == 0 else 'Bob'},{n}.5,{'true' if n % 2 else 'false'},2024-01-{1 + n % 28:02d}T10:00:00Z\n"
    for n in range(1, 26)
)


@pytest.fixture
async def orders(client, services: Services, alice: Account) -> None:
    await create_dataset(client, alice)
    await upload(services, "alice", "orders.csv", CSV.encode())
    await drain(services)


async def test_pages_walk_every_row_once_in_id_order(client, alice: Account, orders) -> None:
    seen, cursor, pages = [], None, 0
    while True:
        params = {"pageSize": 10, **({"cursor": cursor} if cursor else {})}
        response = await client.get(ROWS, params=params, headers=alice.headers)
        assert response.status_code == 200, response.text
        body = response.json()
        pages += 1
        assert body["metadata"]["count"] == len(body["data"])
        seen += body["data"]
        cursor = body["metadata"]["nextCursor"]
        if cursor is None:
            break
    assert pages == 3
    assert sorted(r["order_id"] for r in seen) == list(range(1, 26))
    assert [r["__id"] for r in seen] == sorted(r["__id"] for r in seen)
    assert set(seen[0]) == {"__id", "order_id", "customer", "total", "paid", "placed_at"}
    first = next(r for r in seen if r["order_id"] == 1)
    assert first["paid"] is True and first["total"] == 1.5
    assert first["placed_at"].startswith("2024-01-02T10:00:00")


async def test_a_page_boundary_holds_while_rows_are_appended(
    client, services: Services, alice: Account, orders
) -> None:
    first = (await client.get(ROWS, params={"pageSize": 20}, headers=alice.headers)).json()
    await upload(services, "alice", "more.csv", CSV.encode())
    await drain(services)
    rest = (
        await client.get(
            ROWS, params={"pageSize": 100, "cursor": first["metadata"]["nextCursor"]}, headers=alice.headers
        )
    ).json()
    ids = [r["__id"] for r in first["data"] + rest["data"]]
    assert len(ids) == len(set(ids)) == 50  # the 5 left of the first file, then the 25 appended
    assert [r["order_id"] for r in rest["data"][:5]] == [21, 22, 23, 24, 25]


async def test_columns_and_filter(client, alice: Account, orders) -> None:
    params = {"columns": "customer,total", "filter": "customer = 'Ada' AND total > 10"}
    body = (await client.get(ROWS, params=params, headers=alice.headers)).json()
    assert body["metadata"]["columns"] == ["customer", "total"]
    assert [r["total"] for r in body["data"]] == [12.5, 15.5, 18.5, 21.5, 24.5]
    assert all(set(r) == {"__id", "customer", "total"} for r in body["data"])


@pytest.mark.parametrize(
    ("params", "code"),
    [
        ({"columns": "customer,totl"}, "unknown_column"),
        ({"filter": "custmer = 'Ada'"}, "unknown_column"),
        ({"filter": "total >"}, "invalid_filter"),
        ({"filter": "1=1; DROP TABLE orders"}, "invalid_filter"),
        ({"filter": "total > 1) UNION (SELECT 1"}, "invalid_filter"),
        ({"cursor": "' OR 1=1 --"}, "invalid_cursor"),
        ({"filter": "semantic('cheap') > 0.5"}, "filter_not_a_row_condition"),
    ],
)
async def test_bad_requests_are_422_naming_the_problem(client, alice: Account, orders, params, code) -> None:
    response = await client.get(ROWS, params=params, headers=alice.headers)
    assert response.status_code == 422, response.text
    body = response.json()
    assert code in [e["code"] for e in body["sub_errors"]], body


@pytest.mark.parametrize(
    "hostile",
    [
        "customer IN (SELECT name FROM bob.private.secrets)",
        "EXISTS (SELECT 1 FROM orders)",
        "total > (SELECT max(total) FROM orders)",
        "customer = (SELECT username FROM users LIMIT 1)",
        "count(*) > 1",
    ],
)
async def test_a_filter_may_not_reach_other_tables(
    client, services: Services, alice: Account, bob: Account, orders, hostile
) -> None:
    response = await client.post(
        "/api/v1/ingest/new/private/secrets", json={"schemaDefinition": {"name": "n"}}, headers=bob.headers
    )
    assert response.status_code == 201
    response = await client.get(ROWS, params={"filter": hostile}, headers=alice.headers)
    assert response.status_code == 422, response.text
    assert response.json()["sub_errors"][0]["code"] == "filter_not_a_row_condition"
    for format in ("csv", "parquet"):
        response = await client.get(ROWS, params={"filter": hostile, "format": format}, headers=alice.headers)
        assert response.status_code == 422


async def test_a_filter_the_store_refuses_is_a_422_naming_no_row_table(
    client, services: Services, alice: Account, orders
) -> None:
    """PostgreSQL refuses to compare text with a number (SQLite compares them): a 422 with the
    store's words, for a page and for a file, never a 500 or a cut file."""
    for format in ("json", "csv"):
        response = await client.get(ROWS, params={"filter": "customer > 5", "format": format}, headers=alice.headers)
        if services.rows.dialect == "sqlite":
            assert response.status_code == 200
            continue
        assert response.status_code == 422, response.text
        message = response.json()["message"]
        assert message.startswith("the database refused the query") and "ds_" not in message


async def test_access_is_the_query_rule(client, services: Services, alice: Account, bob: Account, orders) -> None:
    response = await client.get(ROWS, headers=bob.headers)
    assert response.status_code == 403 and response.json()["error_code"] == "FORBIDDEN"
    assert (await client.get(ROWS.replace("orders", "nope"), headers=alice.headers)).status_code == 404
    assert (await client.get(ROWS, params={"format": "csv"}, headers=bob.headers)).status_code == 403
    async with services.db.session() as session:
        await set_grant(session, "alice", "sales", "bob", Permission.READ)
    response = await client.get(ROWS, params={"pageSize": 1}, headers=bob.headers)
    assert response.status_code == 200 and len(response.json()["data"]) == 1


async def test_exports_read_back(client, alice: Account, orders) -> None:
    params = {"filter": "paid", "columns": "order_id,customer,total,paid,placed_at"}
    response = await client.get(ROWS, params={**params, "format": "parquet"}, headers=alice.headers)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "application/vnd.apache.parquet"
    assert 'filename="orders.parquet"' in response.headers["content-disposition"]
    table = pq.read_table(io.BytesIO(response.content))
    assert table.schema.names == ["order_id", "customer", "total", "paid", "placed_at"]
    assert str(table.schema.field("placed_at").type) == "timestamp[us, tz=UTC]"
    assert sorted(table.column("order_id").to_pylist()) == list(range(1, 26, 2))
    assert set(table.column("paid").to_pylist()) == {True}

    response = await client.get(ROWS, params=params, headers={**alice.headers, "Accept": "text/csv"})
    assert response.headers["content-type"].startswith("text/csv")
    records = list(csv.DictReader(io.StringIO(response.text)))
    assert len(records) == 13 and records[0].keys() == {"order_id", "customer", "total", "paid", "placed_at"}
    assert {r["paid"] for r in records} == {"true"}

    response = await client.get(ROWS, params={**params, "format": "jsonl"}, headers=alice.headers)
    assert response.headers["content-type"].startswith("application/x-ndjson")
    lines = [json.loads(line) for line in response.text.splitlines()]
    assert len(lines) == 13
    one = next(r for r in lines if r["order_id"] == 1)
    assert one == {"order_id": 1, "customer": "Bob", "total": 1.5, "paid": True, "placed_at": one["placed_at"]}
    assert one["placed_at"].startswith("2024-01-02T10:00:00")


async def test_an_empty_dataset_exports_an_empty_file(client, alice: Account) -> None:
    await create_dataset(client, alice)
    response = await client.get(ROWS, params={"format": "parquet"}, headers=alice.headers)
    assert response.status_code == 200
    assert pq.read_table(io.BytesIO(response.content)).num_rows == 0
    body = (await client.get(ROWS, headers=alice.headers)).json()
    assert body == {
        "data": [],
        "metadata": {"columns": list(body["metadata"]["columns"]), "count": 0, "nextCursor": None},
    }
