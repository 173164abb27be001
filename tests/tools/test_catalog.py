"""The catalog: what a model is told it can query."""

from __future__ import annotations

import pytest

from datawell.errors import Forbidden
from datawell.services import Services
from datawell.storage import access
from datawell.storage.access import Permission
from datawell.storage.datasets import create_dataset
from tests.tools.conftest import World


async def test_the_catalog_lists_datasets_fields_types_samples_and_counts(world: World) -> None:
    catalog = await world.query.catalog(world.alice, world.sales)
    [orders] = catalog.tables
    assert orders.name == "orders" and orders.row_count == 5
    assert orders.columns == {
        "order_id": "integer", "customer": "text", "total": "real", "paid": "boolean", "note": "text", "placed": "timestamp",
    }  # fmt: skip
    assert orders.column_descriptions["total"] == "amount in EUR"
    assert orders.samples["customer"] == ["Ada", "Bob", "Cy"]  # distinct, at most three
    assert orders.samples["paid"] == [True, False]
    text = catalog.render()
    assert "Table orders (5 rows): orders of the shop" in text
    assert "  total real: amount in EUR (e.g. 12.5, 99.0, 7.25)" in text
    assert "  customer text: who ordered (e.g. 'Ada', 'Bob', 'Cy')" in text
    assert orders.physical not in text


async def test_shared_namespaces_appear_by_their_full_name(world: World, services: Services) -> None:
    assert [t.name for t in (await world.query.shared_catalog(world.alice, world.sales)).tables] == ["orders"]
    async with services.db.session() as session:
        await access.set_grant(session, "bob", "crm", "alice", Permission.READ)
    catalog = await world.query.shared_catalog(world.alice, world.sales)
    assert [t.name for t in catalog.tables] == ["orders", "bob.crm.customers"]
    assert "Table bob.crm.customers (3 rows)" in catalog.render()


async def test_an_empty_dataset_and_an_unreadable_namespace(world: World, services: Services) -> None:
    async with services.db.session() as session:
        await create_dataset(session, world.sales, "returns", "", {"reason": "why"}, world.alice)
    catalog = await world.query.catalog(world.alice, world.sales)
    returns = catalog.table("returns")
    assert returns is not None and returns.row_count == 0 and returns.columns == {"reason": "text"}
    with pytest.raises(Forbidden):
        await world.query.catalog(world.alice, world.crm)
