"""`execution-match` compares what a user reads: rows arrive as JSON objects keyed by column,
so the columns' order is not part of the answer unless an assertion says `column_order: strict`."""

from __future__ import annotations

from typing import Any

import pytest

from datawell.evals import scoring
from datawell.evals.records import GoldResult, Prediction
from datawell.evals.suites import Suite

GOLD_QUERY = "SELECT country, COUNT(*) FROM customers GROUP BY country"
GOLD_ROWS = [{"country": "France", "count": 32}, {"country": "Norway", "count": 8}]
SWAPPED = [{"n": 8, "country": "Norway"}, {"n": 32, "country": "France"}]


def suite(**assertion: Any) -> Suite:
    return Suite.model_validate(
        {
            "name": "columns",
            "kind": "nl2ql",
            "fixtures": ["retail"],
            "cases": [
                {
                    "id": "per-country",
                    "vars": {"question": "How many customers per country?"},
                    "assert": [{"type": "execution-match", "value": GOLD_QUERY, **assertion}],
                }
            ],
        }
    )


async def gold(query: str) -> GoldResult:
    assert query == GOLD_QUERY
    return GoldResult(query=query, rows=GOLD_ROWS)


@pytest.mark.parametrize(("assertion", "passed"), [({}, True), ({"column_order": "strict"}, False)])
async def test_columns_in_another_order_match_unless_strict(assertion: dict[str, Any], passed: bool) -> None:
    cases = suite(**assertion)
    prediction = Prediction(case_id="per-country", kind="nl2ql", query="SELECT COUNT(*) AS n, country …", rows=SWAPPED)
    result = await scoring.score_case(cases, cases.cases[0], prediction, gold)
    assert result.passed is passed


ALTERNATIVE = "SELECT COUNT(*) FROM customers GROUP BY country"


async def gold_or_alternative(query: str) -> GoldResult:
    rows = {GOLD_QUERY: GOLD_ROWS, ALTERNATIVE: [{"count": 32}, {"count": 8}]}
    return GoldResult(query=query, rows=rows[query])


@pytest.mark.parametrize(
    ("rows", "passed", "detail"),
    [
        (GOLD_ROWS, True, ""),
        ([{"n": 8}, {"n": 32}], True, "matches alternative 1"),
        ([{"n": 7}, {"n": 32}], False, "2 rows, gold has 2"),
    ],
)
async def test_an_alternative_gold_query_is_as_right_as_the_gold(
    rows: list[dict[str, Any]], passed: bool, detail: str
) -> None:
    """sql-eval's `{country, count}`: the counts alone answer the question too."""
    cases = Suite.model_validate(
        {
            "name": "alternatives",
            "kind": "nl2ql",
            "fixtures": ["retail"],
            "cases": [
                {
                    "id": "per-country",
                    "vars": {"question": "How many customers per country?"},
                    "expected": {"query": GOLD_QUERY, "alternatives": [ALTERNATIVE]},
                }
            ],
        }
    )
    assert scoring.gold_queries(cases, cases.cases[0]) == [GOLD_QUERY, ALTERNATIVE]
    prediction = Prediction(case_id="per-country", kind="nl2ql", query="SELECT …", rows=rows)
    result = await scoring.score_case(cases, cases.cases[0], prediction, gold_or_alternative)
    assert (result.passed, result.outcomes[0].detail) == (passed, detail)
