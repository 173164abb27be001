"""The numbers of an answer agree with its rows (graphs/assistant/agreement.py)."""

from __future__ import annotations

from typing import Any

from datawell.graphs.assistant.agreement import check, settle
from datawell.graphs.assistant.state import StepResult


def result(rows: list[dict[str, Any]], query: str = "SELECT 1") -> StepResult:
    return StepResult(
        index=1, instruction="Count", kind="data", query=query, reasoning="", rows=rows, truncated=False, error=""
    )


def test_a_one_value_result_counts_only_its_value() -> None:
    verdict = check("There was 1 order in March 2024.", [result([{"n": 0}])], "Orders in March 2024?")
    assert (verdict.invented, verdict.misses_value) == (["1"], True)
    assert check("No orders in March 2024.", [result([{"n": 0}])], "Orders in March 2024?").agrees
    assert check("About 12.3 EUR on average.", [result([{"avg": 12.3456}])]).agrees


def test_the_wrong_number_is_replaced_by_the_value() -> None:
    verdict = check("Customers spent 99 EUR.", [result([{"total": 1234.5}])])
    text, notes = settle("Customers spent 99 EUR.", verdict)
    assert text == "Customers spent 1234.5 EUR."
    assert notes == ["the answer stated 99; the query returned 1234.5, which the answer now states."]


def test_an_answer_without_the_value_gets_it_said_first() -> None:
    verdict = check("Many orders.", [result([{"n": 7}])])
    text, _ = settle("Many orders.", verdict)
    assert text.startswith("The query returned 7 [1].\n\nMany orders.")


def test_many_rows_keep_the_note_as_last_resort() -> None:
    rows = [{"name": "Ann", "n": 3}, {"name": "Bo", "n": 4}]
    verdict = check("Ann has 5.", [result(rows)])
    assert settle("Ann has 5.", verdict) == ("Ann has 5.", ["check this answer: 5 is not in the query results."])


MOST_NO_SHOWS = (
    "SELECT d.name, COUNT(a.patient_id) AS no_shows FROM doctors AS d JOIN appointments AS a ON a.doctor = d.code "
    "WHERE a.status = 'no-show' GROUP BY d.name ORDER BY COUNT(a.patient_id) DESC LIMIT 1"
)


def test_a_named_row_with_one_measure_must_state_the_measure() -> None:
    rows = [{"name": "Dr. Yusuf Kaya", "no_shows": 3}]
    verdict = check("Dr. Yusuf Kaya had the most no-shows.", [result(rows, MOST_NO_SHOWS)])
    assert (verdict.value, verdict.measure, verdict.misses_value) == (3, "no_shows", True)
    assert "has no_shows = 3" in verdict.feedback()
    assert check("Dr. Yusuf Kaya, with 3 no-shows.", [result(rows, MOST_NO_SHOWS)]).agrees
    text, notes = settle("Dr. Yusuf Kaya had the most no-shows.", verdict)
    assert text == "Dr. Yusuf Kaya had the most no-shows (no shows: 3)."
    assert notes == ["the answer did not state the row's no_shows (3), which it now states."]


def test_a_number_the_query_did_not_aggregate_is_no_measure() -> None:
    rows = [{"name": "Ann", "customer_id": 17}]
    query = "SELECT name, customer_id FROM customers WHERE city = 'Oslo'"
    assert check("Ann lives in Oslo.", [result(rows, query)]).agrees
    two = [{"name": "Ann", "orders": 3, "spent": 40.5}]
    assert check("Ann.", [result(two, "SELECT name, COUNT(*) AS orders, SUM(x) AS spent FROM t GROUP BY name")]).agrees


MOST_UNITS = "SELECT product, SUM(quantity) AS units FROM orders GROUP BY product ORDER BY units DESC LIMIT 1"


def test_a_sum_stated_as_a_number_of_times_or_rows_is_a_miscount() -> None:
    """Issue 50: SUM(quantity) = 25 is 25 units, not 25 orders or 25 times."""
    rows = [result([{"product": "27-inch monitor", "units": 25}], MOST_UNITS)]
    verdict = check("The 27-inch monitor, which was ordered 25 times.", rows)
    assert (verdict.invented, verdict.misses_value, verdict.miscounts) == ([], False, True)
    assert "25 is SUM(quantity): the total quantity over the rows, not a number of rows or of times." in (
        verdict.feedback()
    )
    assert check("The 27-inch monitor appears in 25 orders.", rows).miscounts
    assert check("The 27-inch monitor: 25 units sold.", rows).agrees
    text, notes = settle("The 27-inch monitor, which was ordered 25 times.", verdict)
    assert text == "The 27-inch monitor, which was ordered 25 times."
    assert notes == ["25 is the total quantity (a sum), not a count of rows or times."]


def test_a_count_stated_as_a_number_of_rows_is_right() -> None:
    count = "SELECT product, COUNT(*) AS orders FROM orders GROUP BY product ORDER BY orders DESC LIMIT 1"
    rows = [result([{"product": "27-inch monitor", "orders": 25}], count)]
    assert check("The 27-inch monitor, ordered 25 times.", rows).agrees
    one = [result([{"units": 40}], "SELECT SUM(quantity) AS units FROM order_lines")]
    assert check("40 units were sold.", one).agrees
    assert check("There were 40 order lines.", one).miscounts
