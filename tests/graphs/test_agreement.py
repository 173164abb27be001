"""The numbers of an answer agree with its rows (graphs/assistant/agreement.py)."""

from __future__ import annotations

from typing import Any

from datawell.graphs.assistant.agreement import check, settle
from datawell.graphs.assistant.state import StepResult


def result(rows: list[dict[str, Any]]) -> StepResult:
    return StepResult(
        index=1, instruction="Count", kind="data", query="SELECT 1", reasoning="", rows=rows, truncated=False, error=""
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
