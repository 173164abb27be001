"""Text literals matched to the values a column stores, before the query runs (issue 27)."""

from __future__ import annotations

import pytest

from datawell.errors import Forbidden
from datawell.tools.literals import match_literals, names_left_out, where_stored
from datawell.tools.rewrite.lexicon import question_names
from tests.tools.conftest import World


async def matched(world: World, query: str) -> tuple[str, list[str], list[int]]:
    found = await match_literals(world.query, world.alice, world.sales, query)
    result = await world.query.run(world.alice, world.sales, found.query)
    return found.query, found.changes, sorted(r["order_id"] for r in result.rows)


async def test_a_literal_in_another_case_becomes_the_stored_value(world: World) -> None:
    query, changes, ids = await matched(world, "SELECT order_id FROM orders WHERE customer = 'ada'")
    assert "'Ada'" in query and ids == [1, 4]
    assert changes == ["orders.customer: 'ada' is stored as 'Ada'"]


async def test_a_prefix_of_one_stored_value_becomes_that_value(world: World) -> None:
    query, changes, ids = await matched(world, "SELECT order_id FROM orders AS o WHERE o.note = 'Garden'")
    assert "'garden hose'" in query and ids == [4]
    assert changes == ["orders.note: 'Garden' is stored as 'garden hose'"]


async def test_a_literal_several_values_contain_becomes_a_case_insensitive_pattern(world: World) -> None:
    query, changes, ids = await matched(world, "SELECT order_id FROM orders WHERE note = 'Apple' AND total > 0")
    assert "LOWER(note) LIKE '%apple%'" in query and ids == [1, 3, 5]
    assert changes == ["orders.note: 'Apple' matches 3 stored values, compared ignoring case"]


@pytest.mark.parametrize(
    "query",
    [
        "SELECT order_id FROM orders WHERE customer = 'Ada'",  # stored as written
        "SELECT order_id FROM orders WHERE customer = 'Zed'",  # nothing like it: left to the doubt
        "SELECT order_id FROM orders WHERE order_id = 3",  # not text
    ],
)
async def test_other_filters_are_left_as_written(world: World, query: str) -> None:
    found = await match_literals(world.query, world.alice, world.sales, query)
    assert (found.query, found.changes) == (query, [])


async def test_the_lookup_runs_as_the_caller(world: World) -> None:
    with pytest.raises(Forbidden):
        await match_literals(world.query, world.bob, world.sales, "SELECT order_id FROM orders WHERE note = 'x'")


async def test_a_text_its_column_does_not_hold_is_found_where_it_is_stored(world: World) -> None:
    """An empty result's repair names the column the model confused: 'garden hose' is a note."""
    said = await where_stored(
        world.query, world.alice, world.sales, "SELECT order_id FROM orders WHERE customer = 'garden hose'"
    )
    assert said == ["'garden hose' is no value of orders.customer; orders.note holds 'garden hose'"]


async def test_a_pattern_is_looked_up_by_its_core(world: World) -> None:
    said = await where_stored(
        world.query, world.alice, world.sales, "SELECT order_id FROM orders WHERE note LIKE 'Ada%'"
    )
    assert said == ["'Ada%' is no value of orders.note; orders.customer holds 'Ada'"]


@pytest.mark.parametrize(
    "query",
    [
        "SELECT order_id FROM orders WHERE customer = 'Ada'",  # its column holds it
        "SELECT order_id FROM orders WHERE customer = 'Zed'",  # no column holds it
        "SELECT order_id FROM orders WHERE customer = 'Paris'",  # only bob's crm holds it
    ],
)
async def test_nothing_is_said_of_a_text_its_column_holds_or_that_the_caller_has_nowhere(
    world: World, query: str
) -> None:
    assert await where_stored(world.query, world.alice, world.sales, query) == []


@pytest.mark.parametrize(
    ("question", "names"),
    [
        ("Which airlines offer flights with a stopover in Dallas?", ["Dallas"]),
        ('Who wrote in the domain "Machine Learning" and in New York?', ["Machine Learning", "New York"]),
        ("What's the price of 'Red Chair' at O'Brien Ltd?", ["Red Chair", "O'Brien Ltd"]),
        ("How many orders were placed in May 2024? Show it as YYYY-MM.", ["YYYY-MM"]),  # a month is no name
        ("Fares from LA to JFK?\n\nInstructions: Filter state codes (eg NY) exactly.", ["JFK"]),  # not instructions
    ],
)
def test_the_names_a_question_gives(question: str, names: list[str]) -> None:
    assert question_names(question) == names


async def test_a_name_the_query_does_not_filter_on_is_said_with_where_it_is_stored(world: World) -> None:
    """atis-28: "from New York (JFK) to Los Angeles" written with the JFK filter alone."""
    query = "SELECT SUM(total) AS spent FROM orders WHERE paid"
    said = await names_left_out(world.query, world.alice, world.sales, "How much did Ada spend?", query)
    assert said == [
        "the question names 'Ada', which the query does not filter on: orders.customer holds 'Ada' (order_id 1)"
    ]


@pytest.mark.parametrize(
    "query",
    [
        "SELECT SUM(total) FROM orders WHERE customer = 'Ada'",  # the name itself
        "SELECT SUM(total) FROM orders WHERE LOWER(customer) LIKE '%ada%'",  # a pattern of it
        "SELECT SUM(total) FROM orders WHERE order_id IN (1, 4)",  # a value of a row that holds it
        "SELECT SUM(total FROM",  # does not parse
    ],
)
async def test_a_name_the_query_filters_on_in_any_way_is_not_said(world: World, query: str) -> None:
    assert await names_left_out(world.query, world.alice, world.sales, "How much did Ada spend?", query) == []


async def test_a_name_no_column_the_caller_reads_holds_is_not_said(world: World) -> None:
    query = "SELECT SUM(total) FROM orders"
    for question in ("How much was spent in Paris?", "How much did Zed spend?"):  # Paris: bob's crm only
        assert await names_left_out(world.query, world.alice, world.sales, question, query) == []


async def test_a_text_one_other_column_stores_is_filtered_there_before_the_query_runs(world: World) -> None:
    """academic-21: the text is no customer, but one column (the notes) stores it, in another case."""
    query, changes, found = await matched(world, "SELECT order_id FROM orders WHERE customer = 'Garden Hose'")
    assert query == "SELECT order_id FROM orders WHERE note = 'garden hose'"
    assert changes == ["customer holds no 'Garden Hose'; orders.note holds 'garden hose': the filter reads it"]
    assert found == [4]
