"""Refusal by coverage: a question whose words the catalog does not hold (issue 27)."""

from __future__ import annotations

from datawell.llm.embeddings import HashingEmbedder
from datawell.storage.access import NamespaceRef
from datawell.storage.hints import ColumnHint
from datawell.tools.catalog import Catalog, TableInfo
from datawell.tools.coverage import content_words, coverage, held, refusal, subject

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


def test_the_subject_is_what_the_question_opens_by_asking_for() -> None:
    assert subject("What is the email address of each author?") == ["email", "address"]
    assert subject("What are the office phone numbers of the instructors?") == ["office", "phone"]
    assert subject("How many passengers flew on each flight?") == ["passengers", "flew"]
    assert subject("How much does a checked bag cost on each airline?") == ["checked", "bag"]
    assert subject("List the titles of all publications, newest first") == ["titles"]
    # "How many times ... X-ed" counts the verb's event, not the things it happened to.
    assert subject("How many times was each publication downloaded last year?") == ["downloaded"]
    assert subject("How often were the books borrowed?") == ["borrowed"]
    # Only the first line: sql-eval's questions carry instructions after it.
    assert subject("What is the total cost of fares?\n\nInstructions: use the phone table") == ["cost"]
    # Quantities computed from other values, and questions that open otherwise, have none.
    assert subject("What was the revenue of delivered orders?") == []
    assert subject("Will it rain tomorrow?") == []


def test_a_subject_is_held_by_a_word_a_shared_stem_or_an_abbreviation_in_the_catalog() -> None:
    assert held(["customer"], CATALOG)  # "customers", a table name
    assert held(["cities"], Catalog(SHOP, [table_with("city_code")]))  # a plural
    assert held(["oslo"], CATALOG)  # a stored value
    assert held(["population"], Catalog(SHOP, [table_with("pop")]))  # an abbreviation begins it
    assert not held(["email", "address"], CATALOG)
    assert not held(["fee"], Catalog(SHOP, [table_with("feedback")]))  # a longer word is no abbreviation


def test_a_name_written_as_one_word_holds_the_words_inside_it() -> None:
    # Schemas that prefix or run words together ("tblinvoice", "orderitems") still hold them.
    assert held(["invoices"], Catalog(SHOP, [table_with("tblinvoice")]))
    assert held(["items"], Catalog(SHOP, [table_with("orderitems")]))
    # Under five letters a word is too likely to sit inside an unrelated one.
    assert not held(["age"], Catalog(SHOP, [table_with("homepage")]))


def test_a_term_the_question_defines_is_not_asked_of_the_catalog() -> None:
    assert subject("What is the XYZ of each store?\n\nInstructions: XYZ = revenue per visit") == []
    assert subject("What is the XYZ of each store?\n\nXYZ (yield per zone) is defined as rows") == []
    assert subject("List the XYZ tickets\n\nInstructions: XYZ = the open ones") == ["tickets"]
    assert subject("What is the XYZ of each store?") == ["xyz"]


def table_with(column: str) -> TableInfo:
    return TableInfo(
        name="things",
        dataset_id="d2",
        namespace=SHOP,
        physical="rows_things",
        description="",
        columns={column: "text"},
        column_descriptions={},
    )
