"""A query's shape fitted to its question before it runs (issue 27): unasked LIMITs, whole-number
division, grouped columns nobody can tell apart, a ranking's measure, groups asked "per X", a
month's first day for the month, an extreme of the column rows are ordered by."""

from __future__ import annotations

import pytest

from datawell.tools.rewrite.group_per_asked import group_per_asked
from datawell.tools.rewrite.groups import fit_shape
from tests.tools.conftest import World


async def rows(world: World, query: str, question: str) -> tuple[list[str], list[dict[str, object]]]:
    shaped = fit_shape(query, question)
    result = await world.query.run(world.alice, world.sales, shaped.query)
    return shaped.changes, result.rows


async def test_a_limit_the_question_did_not_ask_for_is_dropped(world: World) -> None:
    query = "SELECT customer, COUNT(*) AS orders FROM orders GROUP BY customer ORDER BY orders DESC LIMIT 1"
    changes, found = await rows(world, query, "How many orders did each customer place?")
    assert changes == ["dropped LIMIT 1: the question asks for every row"]
    assert (found[0]["customer"], found[0]["orders"]) == ("Ada", 2)
    assert sorted(r["customer"] for r in found) == ["Ada", "Bob", "Cy", "Dee"]  # not only the first


@pytest.mark.parametrize(
    "question",
    [
        "Which customer placed the most orders?",
        "Show the top 2 customers by orders",
        "Name three customers with orders",
        "Who is the single biggest customer?",
        "Which order had the strongest wind?",  # any superlative in -est
    ],
)
def test_a_limit_the_question_asks_for_stays(question: str) -> None:
    query = "SELECT customer FROM orders GROUP BY customer ORDER BY COUNT(*) DESC LIMIT 1"
    shaped = fit_shape(query, question)
    assert shaped.query.endswith(" LIMIT 1")
    assert not any("LIMIT" in change for change in shaped.changes)


def test_a_ranking_by_relevance_keeps_its_cut_off() -> None:
    query = "SELECT note FROM orders ORDER BY semantic('fruit') DESC LIMIT 3"
    assert fit_shape(query, "Can you recommend an order with fruit in it?").changes == []


def test_a_word_in_est_that_is_no_superlative_asks_for_every_row() -> None:
    query = "SELECT customer FROM orders ORDER BY total LIMIT 5"
    assert fit_shape(query, "Which customers have an interest in apples?").changes != []


async def test_a_division_of_whole_numbers_gives_a_fraction(world: World) -> None:
    query = "SELECT SUM(order_id) / COUNT(*) AS mean_id FROM orders"
    assert (await world.query.run(world.alice, world.sales, query)).rows[0]["mean_id"] == 3  # 15 / 5, whole anyway
    changes, found = await rows(world, "SELECT COUNT(*) / SUM(order_id) AS ratio FROM orders", "ratio of orders to ids")
    assert changes == ["divided as fractions (1 division)"]
    assert found[0]["ratio"] == pytest.approx(5 / 15)  # not 0


def test_a_division_already_exact_is_left_alone() -> None:
    for query in (
        "SELECT CAST(COUNT(*) AS REAL) / SUM(order_id) FROM orders",
        "SELECT total / 2.0 FROM orders",
        "SELECT order_id / 60 AS hours FROM orders",  # by a constant: a unit's conversion, as meant
    ):
        assert fit_shape(query, "the ratio").changes == []


async def test_the_grouped_columns_are_selected(world: World) -> None:
    changes, found = await rows(
        world, "SELECT SUM(total) AS spent FROM orders GROUP BY customer, paid", "How much did each customer spend?"
    )
    assert changes == ["selected the grouped columns customer, paid"]
    assert {(r["customer"], r["paid"]) for r in found} == {("Ada", True), ("Bob", False), ("Cy", True), ("Dee", False)}


def test_a_subquerys_groups_and_selected_keys_are_left_alone() -> None:
    inner = "SELECT customer FROM orders WHERE customer IN (SELECT customer FROM orders GROUP BY customer, paid)"
    selected = "SELECT o.customer AS who, COUNT(*) FROM orders AS o GROUP BY o.customer"
    named = "SELECT customer, SUM(total) FROM orders GROUP BY customer, paid"  # the groups have a name already
    for query in (inner, selected, named):
        assert fit_shape(query, "which customers").changes == []


def test_a_query_that_does_not_parse_is_left_to_the_checker() -> None:
    assert fit_shape("SELEC nothing FROM", "anything").query == "SELEC nothing FROM"


async def test_a_rankings_hidden_measure_is_selected_for_an_answer_in_words(world: World) -> None:
    query = "SELECT customer FROM orders GROUP BY customer ORDER BY COUNT(*) DESC, SUM(total) DESC LIMIT 1"
    shaped = fit_shape(query, "Who placed the most orders?", show_measure=True)
    assert shaped.changes == ["selected the ranking's measure COUNT(*) AS count, SUM(total) AS sum_total"]
    found = (await world.query.run(world.alice, world.sales, shaped.query)).rows
    assert [(r["customer"], r["count"]) for r in found] == [("Ada", 2)]
    # A query asked for as a query gets the measure only when the question does not say what to show.
    assert fit_shape(query, "Who placed the most orders? Give the customer's name.").changes == []
    assert fit_shape(query, "List the customer who placed the most orders").changes == []
    assert fit_shape(query, "Who placed the most orders?").changes == shaped.changes


def test_a_measure_already_selected_or_not_aggregated_is_left_alone() -> None:
    for query in (
        "SELECT customer, COUNT(*) AS n FROM orders GROUP BY customer ORDER BY n DESC LIMIT 1",
        "SELECT customer, COUNT(*) FROM orders GROUP BY customer ORDER BY COUNT(*) DESC LIMIT 1",
        "SELECT customer FROM orders ORDER BY total DESC",  # rows in an order, not a ranking
        "SELECT customer FROM orders ORDER BY total * 2 DESC LIMIT 1",  # an expression
        "SELECT customer FROM orders GROUP BY customer ORDER BY placed LIMIT 1",  # no key of the groups
        "SELECT DISTINCT customer FROM orders GROUP BY customer ORDER BY COUNT(*) DESC",
    ):
        assert fit_shape(query, "Who placed the most orders?", show_measure=True).changes == []


async def test_a_column_a_ranking_orders_by_is_selected(world: World) -> None:
    query = "SELECT customer FROM orders ORDER BY total DESC LIMIT 2"
    shaped = fit_shape(query, "Which customers placed the largest orders?")
    assert shaped.changes == ["selected the ranking's measure total"]
    found = (await world.query.run(world.alice, world.sales, shaped.query)).rows
    assert [(r["customer"], r["total"]) for r in found] == [("Bob", 99.0), ("Ada", 30.0)]
    grouped = "SELECT customer, COUNT(*) AS n FROM orders GROUP BY customer, paid ORDER BY paid LIMIT 1"
    assert fit_shape(grouped, "How many orders has the first group?").changes == [
        "selected the ranking's measure paid"
    ]  # a key of the groups
    assert fit_shape(query, "Give the customers who placed the largest orders").changes == []


ORDERS_COLUMNS = {"orders": ["order_id", "customer", "total", "paid", "note", "placed"], "people": ["customer", "city"]}


async def test_an_aggregate_asked_per_a_column_is_grouped_by_it(world: World) -> None:
    shaped = group_per_asked("SELECT SUM(total) AS spent FROM orders", "What was spent per customer?", ORDERS_COLUMNS)
    assert shaped.changes == ["grouped by customer: the question asks per customer"]
    found = (await world.query.run(world.alice, world.sales, shaped.query)).rows
    assert sorted(r["customer"] for r in found) == ["Ada", "Bob", "Cy", "Dee"]  # one sum each, not one for all


@pytest.mark.parametrize(
    ("query", "question", "grouped"),
    [
        (  # "course ID" names course_id
            "SELECT AVG(score) AS mean FROM reviews",
            "What is the average score for each course ID?",
            "SELECT course_id, AVG(score) AS mean FROM reviews GROUP BY course_id",
        ),
        (  # "in each year" of a column named year: a row a year
            "SELECT AVG(citations) AS mean FROM papers",
            "What is the average number of citations in each year?",
            "SELECT year, AVG(citations) AS mean FROM papers GROUP BY year",
        ),
        (  # "for each fare" of a table keyed by fare_id: a row a fare
            "SELECT CAST(SUM(one_way) AS REAL) / SUM(round_trip) AS ratio FROM fares",
            "What is the ratio of one-way to round-trip cost for each fare?",
            "SELECT fare_id, CAST(SUM(one_way) AS REAL) / SUM(round_trip) AS ratio FROM fares GROUP BY fare_id",
        ),
        (  # "across different aircraft manufacturers": the second word is the column
            "SELECT AVG(speed) AS mean FROM aircraft",
            "How does the average speed vary across different aircraft manufacturers?",
            "SELECT manufacturer, AVG(speed) AS mean FROM aircraft GROUP BY manufacturer",
        ),
        (  # a column named like the word after the name does not take its place
            "SELECT COUNT(*) AS n FROM aircraft",
            "How many aircraft for each manufacturer built after 2000?",
            "SELECT manufacturer, COUNT(*) AS n FROM aircraft GROUP BY manufacturer",
        ),
        (  # two tables have course_id, and the join makes them one
            "SELECT SUM(c.score) AS total FROM reviews AS r JOIN courses AS c ON r.course_id = c.course_id",
            "What is the total score within each course id?",
            "SELECT r.course_id, SUM(c.score) AS total FROM reviews AS r "
            "JOIN courses AS c ON r.course_id = c.course_id GROUP BY r.course_id",
        ),
    ],
)
def test_the_column_asked_per_is_found_by_its_words(query: str, question: str, grouped: str) -> None:
    columns = {
        "reviews": ["course_id", "score"],
        "papers": ["pid", "year", "citations"],
        "courses": ["course_id", "score"],
        "fares": ["fare_id", "one_way", "round_trip"],
        "aircraft": ["aircraft_code", "manufacturer", "speed", "built"],
    }
    assert group_per_asked(query, question, columns).query == grouped


@pytest.mark.parametrize(
    ("query", "question"),
    [
        ("SELECT SUM(total) FROM orders", "What was spent in total?"),  # not asked per anything
        ("SELECT SUM(total) FROM orders", "What was spent per day?"),  # a time unit: one average or a row a day
        ("SELECT SUM(total) FROM orders", "What was spent per city?"),  # no column of the query's tables
        ("SELECT customer, SUM(total) FROM orders GROUP BY customer", "What was spent per customer?"),  # grouped
        ("SELECT customer, SUM(total) FROM orders", "What was spent for each customer?"),  # a column beside it
        # both tables have `customer`, and the join does not say they are the same one
        ("SELECT COUNT(*) FROM orders AS o JOIN people AS p ON p.city = o.note", "Orders per customer?"),
        ("SELECT COUNT(*) AS n FROM orders", "How many orders were placed per year?"),  # no `year` column
        ("SELECT SUM(total) FROM orders", "What was spent across all customers?"),  # a sum over them
    ],
)
def test_an_aggregate_not_asked_per_one_column_is_left_alone(query: str, question: str) -> None:
    assert group_per_asked(query, question, ORDERS_COLUMNS).changes == []


async def test_the_first_day_of_the_month_asked_becomes_the_month(world: World) -> None:
    query = "SELECT COUNT(*) AS n FROM orders WHERE placed = '2024-02-01'"
    changes, found = await rows(world, query, "How many orders were placed in February 2024?")
    assert changes == ["compared the period asked, not its first day: placed from 2024-02-01 to before 2024-03-01"]
    assert [r["n"] for r in found] == [2]  # as written: 0, no order was placed on the first
    changes, found = await rows(world, query.replace("02-01", "01-01"), "How many orders were placed in 2024?")
    assert changes == ["compared the period asked, not its first day: placed from 2024-01-01 to before 2025-01-01"]
    assert [r["n"] for r in found] == [5]


@pytest.mark.parametrize(
    "question",
    [
        "How many orders were placed on February 1, 2024?",
        "How many orders were placed on 1 February 2024?",
        "How many orders were placed on 2024-02-01?",
        "How many orders were placed in March 2024?",  # another month
        "How many orders were placed on the first of the month?",  # no period named
    ],
)
def test_a_day_the_question_names_is_left_alone(question: str) -> None:
    query = "SELECT COUNT(*) AS n FROM orders WHERE placed = '2024-02-01'"
    assert fit_shape(query, question).query == query


def test_an_extreme_of_the_column_rows_are_ordered_by_is_the_column() -> None:
    """atis: with no GROUP BY, SQLite returns one airport; the ORDER BY asks for rows."""
    query = (
        "SELECT airport_name, MIN(minimum_connect_time) AS mct FROM airport ORDER BY minimum_connect_time ASC LIMIT 10"
    )

    shaped = fit_shape(query, "Which 10 airports have the shortest minimum connect time, sorted in ascending order?")

    assert shaped.query == (
        "SELECT airport_name, minimum_connect_time AS mct FROM airport ORDER BY minimum_connect_time ASC LIMIT 10"
    )
    assert shaped.changes == ["read MIN(minimum_connect_time) as the rows' column: the query orders rows by it"]


@pytest.mark.parametrize(
    "query",
    [
        "SELECT MIN(price) FROM fare ORDER BY price",  # an aggregate alone is one row, as asked
        "SELECT name, MAX(price) FROM fare GROUP BY name ORDER BY price",  # groups
        "SELECT name, MAX(price) FROM fare ORDER BY name",  # ordered by another column
        "SELECT name, MAX(price), COUNT(*) FROM fare ORDER BY price",  # another aggregate
    ],
)
def test_other_extremes_are_left_as_written(query: str) -> None:
    assert fit_shape(query, "Which 3 fares are highest?").changes == []
