"""Active links in storage, the link graph and its cache stamp shared through the database."""

from __future__ import annotations

from sqlalchemy import delete

from datawell.ontology.graph import join_paths, namespace_graph
from datawell.ontology.links import MatchType, NewLink, links_version, remove_dataset_links, save_links
from datawell.services import Services
from datawell.storage.db import Database
from datawell.storage.links import ACTIVE, SUGGESTED, active_links
from datawell.storage.tables import Dataset
from tests.conftest import Account
from tests.ontology.shop import Shop, load


def link(shop: Shop, origin: str, destination: str, hits: int = 10) -> NewLink:
    (od, of), (dd, df) = origin.split("."), destination.split(".")
    return NewLink(
        origin=f"shop/{od}.{of}",
        destination=f"shop/{dd}.{df}",
        origin_dataset_id=shop.datasets[od].record.id,
        destination_dataset_id=shop.datasets[dd].record.id,
        match_type=MatchType.EXACT,
        hits=hits,
        score=1.0,
        reason="test",
    )


async def store(services: Services, shop: Shop, *pairs: tuple[str, str], status: str = ACTIVE) -> None:
    """Save links between `dataset.field` pairs of the shop, as the curator would."""
    async with services.db.session() as session:
        links = [link(shop, origin, destination) for origin, destination in pairs]
        await save_links(session, shop.namespace.id, links, status=status, curated_by=None, model="m")


async def test_active_links_feed_the_graph_and_suggestions_do_not(services: Services, alice: Account) -> None:
    shop = await load(services, "alice")
    ns = shop.namespace.id
    await store(services, shop, ("orders.customer", "customers.customer_id"), ("customers.city", "cities.city"))
    await store(services, shop, ("orders.product", "products.sku"), status=SUGGESTED)
    async with services.db.session() as session:
        assert len(await active_links(session, ns)) == 2
        [path] = await join_paths(session, ns, "orders", "cities")
        assert await join_paths(session, ns, "orders", "products") == []
    assert path.datasets == ["orders", "customers", "cities"]
    assert path.render().startswith("orders -> customers -> cities: orders.customer = customers.customer_id")
    # Walking the other way flips each step's sides.
    async with services.db.session() as session:
        [back] = await join_paths(session, ns, "cities", "orders")
    assert back.steps[0].left_fields == ("city",) and back.steps[-1].right_fields == ("customer",)


async def test_another_process_sees_changes_through_the_stamp(services: Services, alice: Account) -> None:
    shop = await load(services, "alice")
    ns = shop.namespace.id
    other = Database(services.db.url)  # a second process: its own engine, the same database
    try:
        async with other.session() as session:
            before = await namespace_graph(session, ns)
            stamp = await links_version(session, ns)
        assert before.number_of_edges() == 0
        await store(services, shop, ("orders.product", "products.sku"))
        async with other.session() as session:
            assert await links_version(session, ns) != stamp
            after = await namespace_graph(session, ns)
            assert after.number_of_edges() == 1
            assert await namespace_graph(session, ns) is after  # unchanged stamp: the cached graph
        # A dataset deleted in the database cascades to its links without this module: the
        # active count in the stamp still moves.
        async with services.db.session() as session:
            await session.execute(delete(Dataset).where(Dataset.id == shop.datasets["products"].record.id))
        async with other.session() as session:
            assert (await namespace_graph(session, ns)).number_of_edges() == 0
    finally:
        await other.close()


async def test_removing_a_datasets_links(services: Services, alice: Account) -> None:
    shop = await load(services, "alice")
    ns = shop.namespace.id
    await store(services, shop, ("orders.customer", "customers.customer_id"), ("orders.product", "products.sku"))
    async with services.db.session() as session:
        assert await remove_dataset_links(session, shop.datasets["products"].record.id) == 1
    async with services.db.session() as session:
        assert [x.destination for x in await active_links(session, ns)] == ["shop/customers.customer_id"]
        assert (await namespace_graph(session, ns)).number_of_edges() == 1


async def test_same_names_in_two_users_namespaces_do_not_collide(
    services: Services, alice: Account, bob: Account
) -> None:
    mine, theirs = await load(services, "alice"), await load(services, "bob")
    for shop in (mine, theirs):
        await store(services, shop, ("orders.customer", "customers.customer_id"))
    async with services.db.session() as session:
        assert len(await active_links(session, mine.namespace.id)) == 1
        assert len(await active_links(session, theirs.namespace.id)) == 1
