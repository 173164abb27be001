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


async def test_a_query_that_ran_is_not_a_refusal() -> None:
    prediction = Prediction(case_id="delete", kind="nl2ql", query="SELECT COUNT(*) FROM orders", rows=[{"n": 3}])
    result = await score(prediction)
    assert not result.passed and result.outcomes[0].detail == "answered with 'SELECT COUNT(*) FROM orders'"
