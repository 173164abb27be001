"""Schema linking (`tools/linking.py`): the tables a question needs with the join path
between them, a chain's unnamed middle included; keys kept in `columns` mode; `off` leaves
the catalog whole; in service, a pruned catalog widened with the join path written out and a
small one never linked; and the offline measurement's reading of a gold query."""

from __future__ import annotations

import dataclasses

from datawell.evals.linking import missed_kind, needed
from datawell.graphs.view import NamespaceView
from datawell.llm.embeddings import HashingEmbedder
from datawell.storage.access import Caller, NamespaceRef
from datawell.tools.catalog import Catalog, TableInfo
from datawell.tools.linking import Linked, LinkMode, SchemaLinker, inferred_joins, widened
from datawell.tools.pruning import PruneLimits, SchemaPruner
from datawell.tools.ql import LinkEnds

SHOP = NamespaceRef(id="ns-shop", owner="evals", name="shop")


class ZeroEmbedder:
    """Every text scores the same: only names, values and links decide."""

    dimension = 3

    async def embed(self, texts: list[str]) -> list[list[float]]:
        return [[1.0, 0.0, 0.0] for _ in texts]


def table(name: str, *columns: str) -> TableInfo:
    return TableInfo(name, f"id-{name}", SHOP, f"rows_{name}", "", dict.fromkeys(columns, "text"), {})


CATALOG = Catalog(
    SHOP,
    [
        table("customers", "customer_id", "name", "country"),
        table("orders", "order_id", "customer_id", "ordered_on"),
        table("order_lines", "order_id", "product_id", "quantity", "unit_price", "discount", "note", "shipped_on"),
        table("products", "product_id", "title", "category"),
        table("suppliers", "supplier_id", "name", "city"),
        table("warehouses", "warehouse_id", "city", "capacity"),
    ],
)
LINKS = [
    ("orders.customer_id", "customers.customer_id"),
    ("order_lines.order_id", "orders.order_id"),
    ("order_lines.product_id", "products.product_id"),
]


def names(catalog: Catalog) -> list[str]:
    return [t.name for t in catalog.tables]


async def test_a_chain_whose_middle_the_question_never_names_still_joins() -> None:
    linked = await SchemaLinker(ZeroEmbedder()).link(
        CATALOG, LINKS, "Which country's customers bought the most products?"
    )
    # customers → orders → order_lines → products: the middle two are never named.
    assert {"customers", "orders", "order_lines", "products"} <= set(names(linked.catalog))
    assert "warehouses" not in names(linked.catalog)
    line = linked.join_line()
    for pair in LINKS:
        assert pair[0] in line and pair[1] in line


async def test_columns_mode_keeps_the_join_keys_of_a_wide_table() -> None:
    # Hashed vectors: unlike texts score near zero, so likeness alone keeps no column.
    linker = SchemaLinker(HashingEmbedder(), LinkMode.COLUMNS)
    linked = await linker.link(CATALOG, LINKS, "Which country's customers bought the most products?")
    lines = next(t for t in linked.catalog.tables if t.name == "order_lines")
    assert {"order_id", "product_id"} <= set(lines.columns)
    assert {"note", "shipped_on"}.isdisjoint(lines.columns)


async def test_off_leaves_the_catalog_whole_and_writes_no_join_path() -> None:
    linked = await SchemaLinker(ZeroEmbedder(), LinkMode.OFF).link(CATALOG, LINKS, "Which customers are in Lisbon?")
    assert linked.catalog == CATALOG and linked.join_line() == ""


def test_the_measurement_reads_a_gold_query_through_its_aliases() -> None:
    gold = "SELECT c.country, SUM(l.quantity) FROM customers c JOIN orders o ON o.customer_id = c.customer_id JOIN order_lines l ON l.order_id = o.order_id GROUP BY c.country"
    read = needed(gold, CATALOG)
    assert read is not None
    assert read.tables == {"customers", "orders", "order_lines"}
    assert {"customers.country", "order_lines.quantity", "orders.customer_id"} <= read.columns


def test_a_left_out_table_is_put_in_a_failure_category_not_shown() -> None:
    """The measurement prints why gold tables were left out, by kind, so validation is read by
    its categories and never by its cases."""
    gold = needed(
        "SELECT c.country, SUM(l.quantity) FROM customers c JOIN orders o ON o.customer_id = c.customer_id "
        "JOIN order_lines l ON l.order_id = o.order_id GROUP BY c.country",
        CATALOG,
    )
    assert gold is not None
    question = "What quantity did the customers of each country take?"
    kinds = {t: missed_kind(t, gold, CATALOG, question) for t in sorted(gold.tables)}
    assert kinds == {"customers": "named whole", "order_lines": "column named", "orders": "joins only"}
    assert missed_kind("customers", gold, CATALOG, "What did the shoppers buy?") == "unnamed"
    assert missed_kind("order_lines", gold, CATALOG, "Which lines were discounted?") == "partly named"


class Reader:
    """A namespace of `CATALOG` with no links of its own (as the dev and validation fixtures)."""

    async def catalog(self, who: object, namespace: NamespaceRef) -> Catalog:
        return CATALOG

    async def links(self, who: object, namespace: NamespaceRef) -> list[LinkEnds]:
        return []


class NoLinker:
    async def link(self, catalog: Catalog, joins: list[tuple[str, str]], question: str) -> Linked:
        raise AssertionError("a namespace within the prune limits is never linked")


ASKER = Caller("u-1", "ana", (SHOP,))
ASKED = "Which country's customers bought the most products?"


async def test_linking_widens_a_pruned_catalog_and_writes_out_the_join_path_read_from_key_names() -> None:
    """With DATAWELL_SCHEMA_LINKING (and _JOINS) the query writer of a large namespace sees what pruning kept,
    the chain that joins it to the other tables the question needs, and how they join."""
    pruner = SchemaPruner(ZeroEmbedder(), PruneLimits(max_tables=3, max_columns=100, keep=1))
    alone = await NamespaceView(Reader(), pruner=pruner).describe(ASKER, SHOP, ASKED)
    view = NamespaceView(Reader(), pruner=pruner, linker=SchemaLinker(ZeroEmbedder()))
    tables_only = await view.describe(ASKER, SHOP, ASKED)
    linked = await dataclasses.replace(view, linked_joins=True).describe(ASKER, SHOP, ASKED)

    assert alone.columns == ["customers.customer_id", "customers.name", "customers.country"] and alone.links == "(none)"
    for name in ("customers", "orders", "order_lines", "products"):
        assert f"Table {name} " in linked.catalog
    assert "Table warehouses" not in linked.catalog and linked.pruned
    assert tables_only.catalog == linked.catalog and tables_only.links == "(none)"  # the join path is its own switch
    assert linked.links.splitlines() == [
        "- order_lines.order_id = orders.order_id (keys named alike)",
        "- order_lines.product_id = products.product_id (keys named alike)",
        "- orders.customer_id = customers.customer_id (keys named alike)",
    ]


async def test_a_namespace_within_the_prune_limits_is_shown_whole_and_never_linked() -> None:
    pruner = SchemaPruner(ZeroEmbedder(), PruneLimits(max_tables=6, max_columns=100, keep=1))
    shown = await NamespaceView(Reader(), pruner=pruner, linker=NoLinker()).describe(ASKER, SHOP, ASKED)
    assert shown.catalog == CATALOG.render() and not shown.pruned


def test_a_link_the_namespace_states_is_not_written_again_as_inferred() -> None:
    path = [("orders.customer_id", "customers.customer_id"), ("order_lines.order_id", "orders.order_id")]
    linked = Linked(CATALOG, path)
    assert inferred_joins(linked, [("customers.customer_id", "orders.customer_id")]) == [path[1]]
    pruned = Catalog(SHOP, [CATALOG.tables[3]])
    assert names(widened(CATALOG, pruned, Linked(Catalog(SHOP, CATALOG.tables[:2]), []))) == [
        "customers",
        "orders",
        "products",
    ]
