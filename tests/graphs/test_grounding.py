"""The answer never states a number the run did not find without the service saying so."""

from __future__ import annotations

from typing import Any

import pytest

from datawell.graphs.assistant.grounding import unsupported_numbers
from datawell.graphs.assistant.state import StepResult


def result(rows: list[dict[str, Any]]) -> StepResult:
    return StepResult(
        index=1, instruction="Totals", kind="data", query="SELECT 1", reasoning="", rows=rows, truncated=False, error=""
    )


TOTALS = [
    {"name": "Donald Knuth", "total": 1234.5678, "orders": 12, "since": "2025-04-17"},
    {"name": "Ada Lovelace", "total": 980.0, "orders": 3, "since": "2025-01-22"},
]


@pytest.mark.parametrize(
    "answer",
    [
        "Donald Knuth spent the most: 1234.5678 EUR [1].",
        "Donald Knuth spent the most, about 1,234.57 EUR over 12 orders [1].",
        "Donald Knuth (customer since 2025-04-17) spent 1235 EUR.",
        "Two customers [1] spent 2214.5678 EUR in all.",  # the sum of a column
        "There are 2 customers in the result [1].",  # the row count
    ],
)
def test_numbers_from_the_rows_are_supported(answer: str) -> None:
    assert unsupported_numbers(answer, [result(TOTALS)]) == []


def test_an_invented_number_is_named() -> None:
    answer = "Donald Knuth spent 4,321.00 EUR over 12 orders [1]; Ada spent 99 EUR."
    assert unsupported_numbers(answer, [result(TOTALS)]) == ["4,321.00", "99"]


def test_numbers_of_the_question_are_supported() -> None:
    assert unsupported_numbers("None of the 5 customers [1].", [result([])], "Top 5 customers?") == []


def test_the_numbers_of_a_numbered_list_are_not_stated_numbers() -> None:
    answer = "The two biggest spenders:\n1. Donald Knuth, 1234.57 EUR\n2) Ada Lovelace, 980 EUR\n 3. nobody else"
    assert unsupported_numbers(answer, [result(TOTALS)]) == []
    assert unsupported_numbers("1. Donald Knuth, 99 orders", [result(TOTALS)]) == ["99"]
