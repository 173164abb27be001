"""The `refusal` assertion passes only for a deliberate refusal: the model declined. A run
that gave up writing a query, crashed or timed out failed, whatever the case expected."""

from __future__ import annotations

import pytest

from datawell.errors import DatawellError, ModelError, QueryError, QueryRefused
from datawell.evals import scoring
from datawell.evals.records import GoldResult, Prediction
from datawell.evals.runner import fill
from datawell.evals.suites import Case, Suite
from datawell.graphs.events import RunFailed, RunResult

SUITE = Suite.model_validate(
    {
        "name": "refusals",
        "kind": "nl2ql",
        "fixtures": ["retail"],
        "cases": [{"id": "delete", "vars": {"question": "Delete all orders."}, "expected": {"refuse": True}}],
    }
)


def predicted(error: DatawellError) -> Prediction:
    """The prediction the runner records for a run that ended on `error`."""
    prediction = Prediction(case_id="delete", kind="nl2ql", question="Delete all orders.")
    result = RunResult()
    result.add(RunFailed(error=error))
    fill(prediction, result)
    return prediction


async def no_gold(query: str) -> GoldResult:
    raise AssertionError("a refusal case has no gold query")


async def score(prediction: Prediction) -> scoring.CaseResult:
    case: Case = SUITE.cases[0]
    return await scoring.score_case(SUITE, case, prediction, no_gold)


async def test_a_deliberate_refusal_passes() -> None:
    result = await score(predicted(QueryRefused("the datasets cannot answer this: only SELECT queries can run")))
    assert result.passed and result.metrics["refusal_accuracy"] == 1.0


@pytest.mark.parametrize(
    "error",
    [
        QueryError("no valid query after 3 attempt(s); the last problem: the query names unknown columns"),
        QueryError("no valid query after 3 attempt(s); the last problem: Your previous reply did not follow"),
        ModelError("the model did not answer within 120 s"),
    ],
)
async def test_a_run_that_failed_to_write_a_query_is_not_a_refusal(error: DatawellError) -> None:
    result = await score(predicted(error))
    assert not result.passed and result.metrics["refusal_accuracy"] == 0.0
    assert result.outcomes[0].detail.startswith("did not refuse, failed: ")
    assert scoring.failure_kind(result) == "refusal: failed"


async def test_a_query_that_ran_is_not_a_refusal() -> None:
    prediction = Prediction(case_id="delete", kind="nl2ql", query="SELECT COUNT(*) FROM orders", rows=[{"n": 3}])
    result = await score(prediction)
    assert not result.passed and result.outcomes[0].detail == "answered with 'SELECT COUNT(*) FROM orders'"
    assert scoring.failure_kind(result) == "refusal: answered"


SQL_EVAL_RULES = Suite.model_validate(
    {
        "name": "sql-eval-rules",
        "kind": "nl2ql",
        "fixtures": ["retail"],
        "extra_columns": True,
        "order": "question",
        "cases": [
            {"id": "each", "vars": {"question": "How many orders per year?"}, "expected": {"query": "GOLD"}},
            {
                "id": "sorted",
                "vars": {"question": "How many orders per year? Sort them by year."},
                "expected": {"query": "GOLD"},
            },
        ],
    }
)
GOLD_ROWS = [{"year": 2023, "n": 4}, {"year": 2024, "n": 7}]  # the gold query orders by year


async def gold_by_year(query: str) -> GoldResult:
    assert query == "GOLD"
    return GoldResult(query=query, rows=GOLD_ROWS)


@pytest.mark.parametrize(
    ("case_id", "rows", "passes"),
    [
        # Another order, and a column the gold lacks: right unless the question asks for an order.
        ("each", [{"n": 7, "year": 2024, "id": 2}, {"n": 4, "year": 2023, "id": 1}], True),
        ("sorted", [{"n": 7, "year": 2024, "id": 2}, {"n": 4, "year": 2023, "id": 1}], False),
        ("sorted", [{"n": 4, "year": 2023, "id": 1}, {"n": 7, "year": 2024, "id": 2}], True),
        # A gold column missing is wrong whatever else is there.
        ("each", [{"year": 2023, "id": 1}, {"year": 2024, "id": 2}], False),
    ],
)
async def test_a_suite_scored_as_sql_eval_scores(case_id: str, rows: list[dict[str, int]], passes: bool) -> None:
    case = SQL_EVAL_RULES.case(case_id)
    prediction = Prediction(case_id=case_id, kind="nl2ql", query="SELECT ...", rows=rows)
    result = await scoring.score_case(SQL_EVAL_RULES, case, prediction, gold_by_year)
    assert result.passed is passes


ALTERNATIVES = Suite.model_validate(
    {
        "name": "alternatives",
        "kind": "nl2ql",
        "fixtures": ["retail"],
        "extra_columns": True,
        "cases": [
            {
                "id": "per-author",
                "vars": {"question": "Citations per author?"},
                "expected": {"query": "NAME AND ID", "alternatives": ["NAME"]},
            }
        ],
    }
)
BY_QUERY = {
    "NAME AND ID": [{"name": "Ada", "aid": 1, "n": 5}, {"name": "Bo", "aid": 2, "n": 3}],
    "NAME": [{"name": "Ada", "n": 5}, {"name": "Bo", "n": 3}],
}


async def gold_by_query(query: str) -> GoldResult:
    return GoldResult(query=query, rows=BY_QUERY[query])


@pytest.mark.parametrize(
    ("rows", "kind"),
    [
        # As wide as the alternative: wrong values, not a missing column.
        ([{"name": "Ada", "n": 4}, {"name": "Bo", "n": 3}], "wrong rows: other values"),
        ([{"name": "Ada", "n": 5}], "wrong rows: fewer rows"),
        # Narrower than every gold: a column is missing.
        ([{"n": 5}, {"n": 3}], "wrong rows: columns missing"),
    ],
)
async def test_a_wrong_result_is_named_against_the_gold_it_is_as_wide_as(
    rows: list[dict[str, object]], kind: str
) -> None:
    prediction = Prediction(case_id="per-author", kind="nl2ql", query="SELECT ...", rows=rows)
    result = await scoring.score_case(ALTERNATIVES, ALTERNATIVES.case("per-author"), prediction, gold_by_query)
    assert not result.passed and scoring.failure_kind(result) == kind


@pytest.mark.parametrize(
    ("error", "kind"),
    [
        (
            QueryError(
                "no valid query after 3 attempt(s); the last problem: the query names unknown columns; t1 has no column 'x'"
            ),
            "no rows: no valid query (the query names unknown columns)",
        ),
        (QueryRefused("the datasets cannot answer this"), "no rows: answerable refused"),
        (ModelError("the model did not answer within 120 s"), "no rows: no valid query (MODEL_ERROR)"),
    ],
)
async def test_a_run_without_rows_is_named_by_its_last_problem_without_the_names_it_quotes(
    error: DatawellError, kind: str
) -> None:
    prediction = Prediction(case_id="per-author", kind="nl2ql", question="Citations per author?")
    result = RunResult()
    result.add(RunFailed(error=error))
    fill(prediction, result)
    scored = await scoring.score_case(ALTERNATIVES, ALTERNATIVES.case("per-author"), prediction, gold_by_query)
    assert scoring.failure_kind(scored) == kind
