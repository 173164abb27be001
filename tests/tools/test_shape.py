"""A query's shape fitted to its question before it runs (issue 27): unasked LIMITs, whole-number
division, grouped columns nobody can tell apart, rows a filtering join repeats, keys passed along
under an aggregate, listed values without their rows' names, a month's first day for the month."""

from __future__ import annotations

import pytest

from datawell.storage.access import NamespaceRef
from datawell.tools.catalog import Catalog, TableInfo
from datawell.tools.rewrite.compute_the_ratio_asked import compute_the_ratio_asked
from datawell.tools.rewrite.count_the_things_asked import count_the_things_asked
from datawell.tools.rewrite.filter_the_end_asked import filter_the_end_asked
from datawell.tools.rewrite.group_per_asked import group_per_asked
from datawell.tools.rewrite.groups import fit_shape
from datawell.tools.rewrite.label_rows import label_rows
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


async def test_rows_a_join_repeats_only_to_filter_them_are_shown_once(world: World) -> None:
    """academic: `publication JOIN cite` listed a publication once per citation."""
    query = "SELECT o.customer FROM orders AS o JOIN orders AS p ON o.customer = p.customer ORDER BY o.customer"
    as_written = (await world.query.run(world.alice, world.sales, query)).rows
    assert [r["customer"] for r in as_written].count("Ada") == 4  # her 2 orders, each joined to both

    changes, found = await rows(world, query, "Which customers have placed orders?")

    assert changes == ["each row shown once: the query joins other tables only to filter the rows of o"]
    assert [r["customer"] for r in found] == ["Ada", "Bob", "Cy", "Dee"]


@pytest.mark.parametrize(
    "query",
    [
        "SELECT o.customer, p.total FROM orders AS o JOIN orders AS p ON o.customer = p.customer",  # two tables shown
        "SELECT o.customer FROM orders AS o JOIN orders AS p ON o.customer = p.customer ORDER BY p.total",
        "SELECT o.customer, COUNT(*) FROM orders AS o JOIN orders AS p ON o.customer = p.customer GROUP BY o.customer",
        "SELECT DISTINCT o.customer FROM orders AS o JOIN orders AS p ON o.customer = p.customer",
        "SELECT customer FROM orders AS o JOIN orders AS p ON o.customer = p.customer",  # whose customer?
        "SELECT o.customer FROM orders AS o",  # no join
    ],
)
def test_rows_of_more_than_a_filtering_join_are_left_as_written(query: str) -> None:
    assert fit_shape(query, "Which customers have placed orders?").changes == []


# Each order with what its customer spent in all, `via` joined only to pass `customer` along.
PASSED_ALONG = (
    "SELECT o.order_id, SUM(t.total) AS spent FROM orders AS o JOIN orders AS via ON o.customer = via.customer "
    "JOIN orders AS t ON via.customer = t.customer GROUP BY o.order_id ORDER BY o.order_id"
)


async def test_a_join_that_only_passes_a_key_along_is_not_aggregated_over(world: World) -> None:
    """advising: `instructor JOIN comment_instructor JOIN offering_instructor` on instructor_id
    averaged each course once per comment."""
    as_written = (await world.query.run(world.alice, world.sales, PASSED_ALONG)).rows
    assert (as_written[0]["order_id"], as_written[0]["spent"]) == (
        1,
        85.0,
    )  # Ada's 12.5 + 30.0, twice: once per order of hers

    changes, found = await rows(world, PASSED_ALONG, "What did the customer of each order spend in all?")

    assert changes == [
        "dropped joins that only passed a key along, which repeat the rows aggregated: orders (read for customer only)"
    ]
    assert [(r["order_id"], r["spent"]) for r in found] == [(1, 42.5), (2, 99.0), (3, 7.25), (4, 42.5), (5, 3.0)]


@pytest.mark.parametrize(
    "query",
    [
        PASSED_ALONG.replace("SUM(t.total) AS spent", "t.total"),  # no aggregate: rows, which DISTINCT may fix
        PASSED_ALONG.replace("GROUP BY", "WHERE via.paid GROUP BY"),  # read for more than the key
        PASSED_ALONG.replace("o.customer = via.customer", "o.customer = via.customer AND via.paid"),
        PASSED_ALONG.replace("JOIN orders AS via", "LEFT JOIN orders AS via"),
        PASSED_ALONG.replace("via.customer = t.customer", "o.customer = t.customer"),  # passes nothing along
    ],
)
def test_joins_that_do_more_than_pass_a_key_along_stay(query: str) -> None:
    assert not any("passed a key along" in change for change in fit_shape(query, "spent?").changes)


def catalog_of(**tables: tuple[str, ...]) -> Catalog:
    namespace = NamespaceRef("n1", "alice", "school")
    return Catalog(
        namespace,
        [
            TableInfo(
                name=name,
                dataset_id=name,
                namespace=namespace,
                physical=name,
                description="",
                columns={c: "text" for c in columns},
                column_descriptions={},
            )
            for name, columns in tables.items()
        ],
    )


SCHOOL = catalog_of(
    course=("course_id", "name", "department", "easiness_score"),
    instructor=("instructor_id", "title", "rating"),
    city=("city_code", "city_name", "population"),
    grade=("student_id", "course_id", "grade"),
)


@pytest.mark.parametrize(
    ("query", "question", "labelled"),
    [
        (
            "SELECT T1.easiness_score FROM course AS T1 WHERE T1.department = 'Computer Science'",
            "What are the easiness scores for courses in Computer Science? Show both courses and scores.",
            "SELECT T1.name, T1.easiness_score FROM course AS T1 WHERE T1.department = 'Computer Science'",
        ),
        ("SELECT rating FROM instructor", "How is each instructor rated?", "SELECT title, rating FROM instructor"),
        ("SELECT population FROM city", "What are the cities' populations?", "SELECT city_name, population FROM city"),
    ],
)
def test_listed_values_get_the_names_of_their_rows(query: str, question: str, labelled: str) -> None:
    shaped = label_rows(query, question, SCHOOL)
    assert shaped.query == labelled
    assert len(shaped.changes) == 1 and shaped.changes[0].endswith("in front: the rows did not say whose they are")


@pytest.mark.parametrize(
    ("query", "question"),
    [
        ("SELECT easiness_score FROM course", "What easiness scores are there?"),  # no course named
        ("SELECT name, easiness_score FROM course", "scores of courses"),  # named already
        ("SELECT course_id, easiness_score FROM course", "scores of courses"),  # its key tells them apart
        ("SELECT AVG(easiness_score) FROM course", "average score of courses"),  # one aggregate
        ("SELECT DISTINCT department FROM course", "departments of courses"),
        ("SELECT grade FROM grade", "grades of each grade"),  # no name column
        ("SELECT easiness_score FROM course WHERE name = 'Algebra'", "How easy is the Algebra course?"),
        ("SELECT c.easiness_score FROM course AS c JOIN grade AS g ON c.course_id = g.course_id", "?"),
        ("SELECT c.easiness_score, i.rating FROM course AS c, instructor AS i", "courses and instructors"),
    ],
)
def test_rows_already_told_apart_or_not_named_are_left_alone(query: str, question: str) -> None:
    assert label_rows(query, question, SCHOOL).changes == []


FLIGHTS = catalog_of(
    flight=("flight_id", "from_airport", "to_airport", "time_elapsed"),
    fare=("fare_id", "origin", "destination", "one_direction_cost"),
    stop=("flight_id", "stop_airport"),
)


@pytest.mark.parametrize(
    ("query", "question", "read"),
    [
        (
            "SELECT flight_id FROM flight WHERE from_airport = 'ORD' ORDER BY time_elapsed LIMIT 10",
            "Which flight ids to Chicago (ORD) have the longest duration from departure to arrival?",
            "SELECT flight_id FROM flight WHERE to_airport = 'ORD' ORDER BY time_elapsed LIMIT 10",
        ),
        (
            "SELECT f.flight_id FROM flight AS f WHERE f.to_airport = 'JFK' AND f.from_airport = 'LAX'",
            "Which flights leave JFK for Los Angeles, arriving at LAX?",
            "SELECT f.flight_id FROM flight AS f WHERE f.from_airport = 'JFK' AND f.to_airport = 'LAX'",
        ),
        (
            "SELECT AVG(one_direction_cost) FROM fare WHERE destination = 'BOS'",
            "What does a fare from Boston (BOS) cost on average?",
            "SELECT AVG(one_direction_cost) FROM fare WHERE origin = 'BOS'",
        ),
    ],
)
def test_a_value_is_filtered_at_the_end_the_question_puts_it(query: str, question: str, read: str) -> None:
    shaped = filter_the_end_asked(query, question, FLIGHTS)
    assert shaped.query == read
    assert all("the question puts" in change for change in shaped.changes)


@pytest.mark.parametrize(
    ("query", "question"),
    [
        ("SELECT flight_id FROM flight WHERE from_airport = 'ORD'", "Which flights does ORD see?"),  # no direction
        ("SELECT flight_id FROM flight WHERE from_airport = 'ORD'", "Which flights go from ORD?"),  # right already
        ("SELECT flight_id FROM flight WHERE from_airport = 'ORD'", "flights from ORD and to ORD"),  # both ends
        (
            "SELECT flight_id FROM flight WHERE from_airport = 'JFK' OR to_airport = 'JFK'",
            "Which flights depart from/arrive at JFK?",
        ),  # the query asks both ends
        ("SELECT flight_id FROM flight WHERE from_airport = 'SFO'", "Which flights go to Chicago?"),  # unsaid
        ("SELECT flight_id FROM stop WHERE stop_airport = 'DFW'", "Which flights go to DFW?"),  # no other end
        ("SELECT flight_id FROM flight WHERE from_airport = 'ORD' OR", "to ORD"),  # does not parse
    ],
)
def test_a_filter_the_question_does_not_put_elsewhere_is_left_alone(query: str, question: str) -> None:
    assert filter_the_end_asked(query, question, FLIGHTS).changes == []


async def test_a_number_asked_as_an_integer_is_cast_to_one(world: World) -> None:
    query = "SELECT AVG(total) AS average FROM orders WHERE customer = 'Ada'"
    changes, found = await rows(world, query, "What is Ada's average order total? Give the answer as an integer.")
    assert changes == ["cast to whole numbers, as the question asks: average"]
    assert found[0]["average"] == 21  # (12.5 + 30.0) / 2 = 21.25, as a whole number


@pytest.mark.parametrize(
    ("query", "question"),
    [
        # already whole, or stored as they are: nothing to cast
        ("SELECT CAST(AVG(total) AS INTEGER) FROM orders", "What is the average total, as an integer?"),
        ("SELECT COUNT(*) FROM orders", "How many orders are there, as an integer?"),
        ("SELECT total FROM orders", "List the totals as integers."),
        # no integer asked for
        ("SELECT AVG(total) FROM orders", "What is the average total?"),
        ("SELECT AVG(total) FROM orders", "How many orders mention an integer?"),
    ],
)
def test_numbers_already_whole_or_not_asked_whole_are_left_alone(query: str, question: str) -> None:
    assert fit_shape(query, question).changes == []


async def test_a_filter_to_a_placeholder_the_question_never_asks_for_is_dropped(world: World) -> None:
    query = "SELECT customer, SUM(total) AS spent FROM orders WHERE note = 'NONE' GROUP BY customer"
    changes, found = await rows(world, query, "How much did each customer spend?")
    assert changes == [
        "dropped filters on a placeholder for nothing, of a column the question never names: note = 'NONE'"
    ]
    assert {r["customer"]: r["spent"] for r in found} == {"Ada": 42.5, "Bob": 99.0, "Cy": 7.25, "Dee": 3.0}


@pytest.mark.parametrize(
    "question",
    [
        "How much did each customer spend on orders with no note?",  # the question asks for nothing
        "How much did each customer spend on orders without a note?",
        "How much did each customer spend, by note?",  # the question names the column
    ],
)
def test_a_placeholder_filter_the_question_may_ask_for_stays(question: str) -> None:
    query = "SELECT customer, SUM(total) FROM orders WHERE note = 'NONE' AND paid GROUP BY customer"
    assert fit_shape(query, question).changes == []


def test_only_placeholders_are_dropped_of_the_filters() -> None:
    query = "SELECT customer FROM orders WHERE customer = 'Ada' AND note = 'n/a' AND paid"
    shaped = fit_shape(query, "Which of Ada's orders are paid?")
    assert shaped.query == "SELECT customer FROM orders WHERE customer = 'Ada' AND paid"


async def test_a_union_of_one_count_per_value_is_grouped_by_it(world: World) -> None:
    query = (
        "SELECT COUNT(*) AS orders FROM orders WHERE paid = TRUE "
        "UNION SELECT COUNT(*) AS orders FROM orders WHERE paid = FALSE"
    )
    changes, found = await rows(world, query, "How many orders are paid and how many are not?")
    assert changes == ["one row per paid, grouped: the union counted each value of it apart"]
    assert sorted((r["paid"], r["orders"]) for r in found) == [(False, 2), (True, 3)]


@pytest.mark.parametrize(
    "query",
    [
        # the parts differ in what they count, in their table, or in more than one value
        "SELECT COUNT(*) FROM orders WHERE paid = TRUE UNION SELECT SUM(total) FROM orders WHERE paid = FALSE",
        "SELECT COUNT(*) FROM orders WHERE paid = TRUE UNION SELECT COUNT(*) FROM customers WHERE paid = FALSE",
        "SELECT COUNT(*) FROM orders WHERE paid = TRUE UNION SELECT COUNT(*) FROM orders WHERE paid = TRUE",
        "SELECT COUNT(*) FROM orders WHERE paid = TRUE AND total > 5 UNION SELECT COUNT(*) FROM orders WHERE paid = FALSE",
        # rows, not aggregates
        "SELECT customer FROM orders WHERE paid = TRUE UNION SELECT customer FROM orders WHERE paid = FALSE",
    ],
)
def test_other_unions_are_left_as_written(query: str) -> None:
    assert fit_shape(query, "How many orders are paid and how many are not?").changes == []


async def test_the_ratio_asked_for_is_computed_from_the_two_numbers_selected(world: World) -> None:
    query = "SELECT customer, SUM(total) AS spending, COUNT(order_id) AS orders FROM orders GROUP BY customer"
    question = "What is the ratio of spending to orders for each customer?"
    shaped = compute_the_ratio_asked(query, question)
    assert shaped.changes == ["selected the ratio asked for: spending to orders"]
    found = (await world.query.run(world.alice, world.sales, shaped.query)).rows
    assert {r["customer"]: r["ratio"] for r in found} == {"Ada": 21.25, "Bob": 99.0, "Cy": 7.25, "Dee": 3.0}


@pytest.mark.parametrize(
    ("query", "question"),
    [
        # divided already, no ratio asked, or no aggregate named for one side
        ("SELECT SUM(total) / COUNT(*) AS spending FROM orders", "What is the ratio of spending to orders?"),
        ("SELECT SUM(total) AS spending, COUNT(*) AS orders FROM orders", "What are spending and orders?"),
        ("SELECT SUM(total) AS spending, COUNT(*) AS n FROM orders", "What is the ratio of spending to orders?"),
    ],
)
def test_a_ratio_computed_already_or_not_asked_is_left_alone(query: str, question: str) -> None:
    assert compute_the_ratio_asked(query, question).changes == []


PAPERS = catalog_of(publication=("pid", "jid", "title", "year"), journal=("jid", "name"), loans=("loan_id", "pid"))


def test_another_tables_key_is_counted_once_per_thing_asked() -> None:
    shaped = count_the_things_asked(
        "SELECT year, COUNT(pid) AS publications, COUNT(jid) AS journals FROM publication GROUP BY year",
        "Return the annual numbers of publications and journals.",
        PAPERS,
    )
    assert shaped.query == (
        "SELECT year, COUNT(pid) AS publications, COUNT(DISTINCT jid) AS journals FROM publication GROUP BY year"
    )
    assert shaped.changes == ["COUNT(jid) counts each journal once"]


def test_a_count_counted_once_per_thing_is_ranked_as_it_is_shown() -> None:
    shaped = count_the_things_asked(
        "SELECT year, COUNT(jid) AS journals FROM publication GROUP BY year ORDER BY COUNT(jid) DESC",
        "How many journals published in each year?",
        PAPERS,
    )
    assert shaped.query == (
        "SELECT year, COUNT(DISTINCT jid) AS journals FROM publication GROUP BY year ORDER BY COUNT(DISTINCT jid) DESC"
    )


@pytest.mark.parametrize(
    ("query", "question"),
    [
        # the table's own key; the keyed table joined (its rows are the groups); not asked for
        ("SELECT COUNT(pid) FROM publication", "How many journals have publications?"),
        (
            "SELECT j.name, COUNT(p.jid) FROM publication AS p JOIN journal AS j ON p.jid = j.jid GROUP BY j.name",
            "How many publications does each journal have?",
        ),
        ("SELECT year, COUNT(jid) FROM publication GROUP BY year", "How many publications name a venue each year?"),
        ("SELECT COUNT(DISTINCT jid) FROM publication", "How many journals are there?"),
        # a ranking by the rows that refer to the thing, not a count of things
        (
            "SELECT year, COUNT(jid) FROM publication GROUP BY year ORDER BY COUNT(jid) DESC LIMIT 1",
            "Which year had the most journals publishing?",
        ),
    ],
)
def test_counts_of_rows_or_of_things_not_asked_are_left_alone(query: str, question: str) -> None:
    assert count_the_things_asked(query, question, PAPERS).changes == []
