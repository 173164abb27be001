"""Refusal by coverage: a question whose words the catalog does not hold (issue 27)."""

from __future__ import annotations

from datawell.llm.embeddings import HashingEmbedder
from datawell.storage.access import NamespaceRef
from datawell.storage.hints import ColumnHint
from datawell.tools.catalog import Catalog, TableInfo
from datawell.tools.coverage import content_words, coverage, refusal

SHOP = NamespaceRef("n1", "alice", "shop")
CATALOG = Catalog(
    namespace=SHOP,
    tables=[
        TableInfo(
            name="customers",
            dataset_id="d1",
            namespace=SHOP,
            physical="rows_customers",
            description="Customers of the shop",
            columns={"name": "text", "city": "text"},
            column_descriptions={"city": "where they live"},
            hints={"city": ColumnHint(type="text", distinct=2, values=["Oslo", "Paris"])},
        )
    ],
)


def test_content_words_leave_out_question_and_aggregation_words() -> None:
    assert content_words("How many customers live in Oslo?") == ["customers", "live", "oslo"]


async def test_a_question_about_the_catalog_is_covered() -> None:
    found = await coverage("How many customers live in Oslo?", CATALOG, HashingEmbedder())
    assert found.covered and found.uncovered == []


async def test_a_question_about_what_no_field_holds_is_refused_naming_what_exists() -> None:
    found = await coverage("What are the opening hours and phone numbers?", CATALOG, HashingEmbedder())
    assert not found.covered and found.uncovered == ["opening", "hours", "phone"]
    assert refusal(found, CATALOG) == (
        "the datasets hold nothing about 'opening', 'hours', 'phone'; they hold: customers (name, city)"
    )
