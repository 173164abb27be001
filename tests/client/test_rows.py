"""Rows back and a dataset's life through the client (sync and async) and the CLI, against a
real server process."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from datawell.client import ApiError, AsyncClient, Client
from tests.client.conftest import Live
from tests.client.test_commands import datawell

ORDERS = "order_id,customer,total\n" + "".join(f"{n},{'ann' if n % 2 else 'bob'},{n * 10}\n" for n in range(1, 8))
SCHEMA = {"order_id": "Order", "customer": "Who", "total": "EUR"}


@pytest.fixture(scope="module")
def orders(live: Live, tmp_path_factory: pytest.TempPathFactory) -> str:
    file = tmp_path_factory.mktemp("rows") / "orders.csv"
    file.write_text(ORDERS)
    with Client(live.url, live.token) as client:
        client.create_dataset("rows", "orders", SCHEMA)
        assert client.upload(file, "demo", "rows", "orders").status == "SUCCEEDED"
    return "demo/rows/orders"


def test_sync_pages_and_exports(live: Live, orders: str, tmp_path: Path) -> None:
    with Client(live.url, live.token) as client:
        page = client.rows("demo", "rows", "orders", columns=["order_id", "total"], page_size=3)
        every = list(client.iter_rows("demo", "rows", "orders", filter="customer = 'ann'", page_size=2))
        written = client.export("demo", "rows", "orders", tmp_path / "o.parquet", filter="total >= 40")
        with pytest.raises(ApiError) as bad:
            client.rows("demo", "rows", "orders", filter="total > (SELECT 1)")
        with pytest.raises(ApiError) as refused:
            client.export("demo", "rows", "orders", tmp_path / "x.csv", format="csv", columns=["nope"])
    assert [r["order_id"] for r in page.data] == [1, 2, 3] and page.metadata.next_cursor is not None
    assert set(page.data[0]) == {"__id", "order_id", "total"}
    assert [r["order_id"] for r in every] == [1, 3, 5, 7]
    table = pq.read_table(tmp_path / "o.parquet")
    assert written == (tmp_path / "o.parquet").stat().st_size
    assert sorted(table.column("order_id").to_pylist()) == [4, 5, 6, 7]
    assert (bad.value.status, refused.value.status) == (422, 422)
    assert not (tmp_path / "x.csv").exists()


async def test_async_pages_exports_and_the_life_of_a_dataset(live: Live, orders: str, tmp_path: Path) -> None:
    async with AsyncClient(live.url, live.token) as client:
        rows = [r async for r in client.iter_rows("demo", "rows", "orders", page_size=4)]
        await client.export("demo", "rows", "orders", tmp_path / "o.csv", format="csv", columns=["customer"])
        await client.create_dataset("life", "temp", {"a": "A"})
        updated = await client.update_dataset(
            "demo", "life", "temp", description="Temporary", schema={"a": "A", "b": "B"}
        )
        renamed = await client.rename_dataset("demo", "life", "temp", "kept")
        namespace = await client.rename_namespace("demo", "life", "lives")
        deleted = await client.delete_dataset("demo", "lives", "kept")
        with pytest.raises(ApiError) as gone:
            await client.get_dataset("demo", "lives", "kept")
    assert len(rows) == 7
    with (tmp_path / "o.csv").open() as file:
        assert [r["customer"] for r in csv.DictReader(file)] == ["ann", "bob"] * 3 + ["ann"]
    assert (updated.data_description, list(updated.schema_definition)) == ("Temporary", ["a", "b"])
    assert renamed.dataset_name == "kept" and (namespace.owner, namespace.name) == ("demo", "lives")
    assert deleted.rows_deleted == 0 and gone.value.status == 404


def test_the_commands(live: Live, orders: str, tmp_path: Path) -> None:
    shown = datawell(live, "rows", orders, "--columns", "order_id,customer", "--limit", "2")
    assert shown.exit_code == 0, shown.output
    assert shown.stdout.splitlines() == ["order_id  customer", "1         ann", "2         bob"]
    cursor = shown.stderr.strip().split("--cursor ")[1]
    more = datawell(live, "rows", orders, "--cursor", cursor, "--json", "--filter", "total > 50")
    assert [json.loads(line)["order_id"] for line in more.stdout.splitlines()] == [6, 7]
    hostile = datawell(live, "rows", orders, "--filter", "1 = (SELECT 1 FROM users)")
    assert hostile.exit_code == 1 and "filter" in hostile.stderr

    exported = datawell(live, "export", orders, str(tmp_path / "all.jsonl"))
    assert exported.exit_code == 0, exported.output
    assert exported.stdout.startswith(f"wrote {tmp_path / 'all.jsonl'} (")
    assert len((tmp_path / "all.jsonl").read_text().splitlines()) == 7
    assert datawell(live, "export", orders, str(tmp_path / "x.txt")).exit_code == 2

    file = tmp_path / "t.csv"
    file.write_text("a\n1\n")
    assert datawell(live, "upload", str(file), "demo/cli/t", "--create").exit_code == 0
    assert datawell(live, "update", "demo/cli/t", "--add", "b=Bee", "--description", "T").exit_code == 0
    refused = datawell(live, "update", "demo/cli/t", "--remove", "a")
    assert refused.exit_code == 1 and "force" in refused.stderr
    assert datawell(live, "update", "demo/cli/t", "--remove", "a", "--force").stdout == "updated demo/cli/t: fields b\n"
    assert datawell(live, "rename", "demo/cli/t", "u").stdout == "renamed demo/cli/t to demo/cli/u\n"
    assert datawell(live, "rename-namespace", "demo/cli", "cli2").stdout == "renamed demo/cli to demo/cli2\n"
    declined = datawell(live, "delete", "demo/cli2/u", stdin="n\n")
    assert declined.exit_code == 1
    deleted = datawell(live, "delete", "demo/cli2/u", "--yes")
    assert deleted.stdout.startswith("deleted demo/cli2/u: 1 rows, ")
