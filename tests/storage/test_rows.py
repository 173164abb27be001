"""Rows become visible only when their ingestion publishes."""

from __future__ import annotations

import pytest

from datawell.storage.rows import RowStore
from datawell.storage.tables import Dataset


@pytest.fixture
async def rows(database_url: str):
    store = RowStore(database_url)
    yield store
    await store.close()


def dataset() -> Dataset:
    return Dataset(
        id="d1",
        name="orders",
        table_name="ds_test_orders",
        schema_definition={"order_id": "id", "total": "amount", "paid": "paid?"},
        field_types={"order_id": "integer", "total": "real", "paid": "boolean"},
    )


async def test_staged_rows_are_invisible_until_published(rows: RowStore) -> None:
    ds = dataset()
    await rows.stage(ds, "11111111-1111-1111-1111-111111111111")
    await rows.write(
        ds, "11111111-1111-1111-1111-111111111111", [{"order_id": 1, "total": 2.5, "paid": True}] * 3, "a.csv"
    )
    assert await rows.count(ds) == 0
    assert await rows.publish(ds, "11111111-1111-1111-1111-111111111111") == 3
    assert await rows.count(ds) == 3


async def test_restaging_drops_what_a_dead_worker_left(rows: RowStore) -> None:
    ds, ingestion = dataset(), "22222222-2222-2222-2222-222222222222"
    await rows.stage(ds, ingestion)
    await rows.write(ds, ingestion, [{"order_id": 1}] * 5, "a.csv")
    await rows.stage(ds, ingestion)
    await rows.write(ds, ingestion, [{"order_id": 1}] * 2, "a.csv")
    assert await rows.publish(ds, ingestion) == 2
    assert await rows.count(ds) == 2


async def test_discard_and_clear(rows: RowStore) -> None:
    ds = dataset()
    await rows.stage(ds, "33333333-3333-3333-3333-333333333333")
    await rows.write(ds, "33333333-3333-3333-3333-333333333333", [{"order_id": 1}], "a.csv")
    await rows.discard(ds, "33333333-3333-3333-3333-333333333333")
    assert await rows.count(ds) == 0
    await rows.stage(ds, "44444444-4444-4444-4444-444444444444")
    await rows.write(ds, "44444444-4444-4444-4444-444444444444", [{"order_id": 1}] * 4, "a.csv")
    await rows.publish(ds, "44444444-4444-4444-4444-444444444444")
    assert await rows.clear(ds) == 4
    assert await rows.count(ds) == 0
