"""The catalog: what a model is told it can query."""

from __future__ import annotations

import pytest

from datawell.errors import Forbidden
from datawell.services import Services
from datawell.storage import access
from datawell.storage.access import Permission
from datawell.storage.datasets import create_dataset, get_dataset
from datawell.storage.hints import ColumnHint
from datawell.storage.tables import Link
from datawell.tools.catalog import epoch_note
from tests.tools.conftest import World


async def test_the_catalog_lists_datasets_fields_types_hints_and_counts(world: World) -> None:
    catalog = await world.query.catalog(world.alice, world.sales)
    [orders] = catalog.tables
    assert orders.name == "orders" and orders.row_count == 5
    assert orders.columns == {
        "order_id": "integer", "customer": "text", "total": "real", "paid": "boolean", "note": "text", "placed": "timestamp",
    }  # fmt: skip
    assert orders.column_descriptions["total"] == "amount in EUR"
    assert orders.hints["customer"].values == ["Ada", "Bob", "Cy", "Dee"]  # every value, the most frequent first
    text = catalog.render()
    assert "Table orders (5 rows): orders of the shop" in text
    assert "  order_id integer: order number; 1 to 5\n" in text
    assert "  customer text: who ordered; one of 'Ada', 'Bob', 'Cy', 'Dee'\n" in text
    assert "  total real: amount in EUR; 3.0 to 99.0\n" in text
    assert "  paid boolean: paid yet?\n" in text
    assert (
        "  note text: what was ordered; unique, e.g. 'apple juice and apple pie', 'blue running shoes', 'garden hose'\n"
        in text
    )
    assert text.endswith(
        "  placed timestamp: when; 2024-01-05 10:00:00 to 2024-03-02 08:00:00 (YYYY-MM-DD HH:MM:SS, UTC)"
    )
    assert orders.physical not in text


async def test_the_render_is_the_same_bytes_for_unchanged_data(world: World) -> None:
    first = (await world.query.catalog(world.alice, world.sales)).render()
    assert (await world.query.catalog(world.alice, world.sales)).render() == first
    assert (await world.query.shared_catalog(world.alice, world.sales)).render() == first


async def test_shared_namespaces_appear_by_their_full_name(world: World, services: Services) -> None:
    assert [t.name for t in (await world.query.shared_catalog(world.alice, world.sales)).tables] == ["orders"]
    async with services.db.session() as session:
        await access.set_grant(session, "bob", "crm", "alice", Permission.READ)
    catalog = await world.query.shared_catalog(world.alice, world.sales)
    assert [t.name for t in catalog.tables] == ["orders", "bob.crm.customers"]
    assert "Table bob.crm.customers (3 rows)" in catalog.render()
    assert "  city text: where they live; one of 'Lima', 'Oslo', 'Paris'" in catalog.render()


async def test_no_hint_tells_the_values_of_a_dataset_the_caller_cannot_read(world: World) -> None:
    await world.query.catalog(world.bob, world.crm)  # bob's hints are stored
    text = (await world.query.shared_catalog(world.alice, world.sales)).render()
    assert "customers" not in text and "Paris" not in text


async def test_an_empty_dataset_and_an_unreadable_namespace(world: World, services: Services) -> None:
    async with services.db.session() as session:
        await create_dataset(session, world.sales, "returns", "", {"reason": "why"}, world.alice)
    catalog = await world.query.catalog(world.alice, world.sales)
    returns = catalog.table("returns")
    assert returns is not None and returns.row_count == 0 and returns.columns == {"reason": "text"}
    with pytest.raises(Forbidden):
        await world.query.catalog(world.alice, world.crm)


async def test_links_are_the_active_ones_of_a_namespace_the_caller_may_read(world: World, services: Services) -> None:
    async with services.db.session() as session:
        orders = (await get_dataset(session, world.sales, "orders")).record.id
        for origin, status in (("sales/orders.customer", "Active"), ("sales/orders.note", "Suggested")):
            session.add(
                Link(
                    namespace_id=world.sales.id,
                    origin_dataset_id=orders,
                    destination_dataset_id=orders,
                    origin=origin,
                    destination="sales/orders.order_id",
                    hits=3,
                    match_type="ExactMatch",
                    status=status,
                )
            )

    links = await world.query.links(world.alice, world.sales)

    assert links == [("sales/orders.customer", "sales/orders.order_id", "ExactMatch", 3)]
    with pytest.raises(Forbidden):
        await world.query.links(world.bob, world.sales)


def test_a_column_of_unix_seconds_is_told_with_its_dates_and_how_to_read_it() -> None:
    """Issue 27 (dates by what the column holds): whole seconds since 1970 in a time column."""
    seconds = ColumnHint(type="integer", low=1577836800, high=1577900000)
    assert epoch_note("departure_time", "", seconds) == (
        "Unix seconds (2020-01-01 00:00 to 2020-01-01 17:33 UTC): as a timestamp, to_timestamp(departure_time)"
    )
    assert epoch_note("left", "Epoch timestamp of departure", seconds).startswith("Unix seconds")
    # Not a time by its name, not seconds by its range, or not whole numbers: nothing said.
    assert epoch_note("population", "people", seconds) == ""
    assert epoch_note("year_time", "", ColumnHint(type="integer", low=1990, high=2024)) == ""
    assert epoch_note("time", "", ColumnHint(type="real", low=1577836800.5, high=1577900000.5)) == ""
