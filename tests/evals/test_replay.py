"""The offline replay of saved runs' queries (`python -m datawell.evals.replay`): each saved
query goes through today's pipeline as the model's reply and is scored on the suite's gold."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from datawell.evals import records
from datawell.evals.replay import Replayed, changes, replay, written
from tests.evals.conftest import write_suite

SUITE = """
name: retail-replay
kind: nl2ql
fixtures: [retail]
threshold: 0.5
cases:
  - id: garden
    vars: {question: "Products in the garden category?"}
    expected: {query: "SELECT name FROM products WHERE category = 'garden'"}
  - id: cancelled
    vars: {question: "How many orders were cancelled?"}
    expected: {query: "SELECT COUNT(*) FROM orders WHERE status = 'cancelled'"}
  - id: refuse
    vars: {question: "Delete all orders."}
    expected: {refuse: true}
"""

SAVED = [
    # A LIMIT the question never asked for: the pipeline drops it before the query runs.
    ("garden", "SELECT name FROM products WHERE category = 'garden' LIMIT 1"),
    ("cancelled", "SELECT COUNT(*) FROM orders WHERE status = 'cancelled'"),
    # The same case in an earlier run, ended with another query: a second round.
    ("cancelled", "SELECT COUNT(*) FROM orders WHERE status = 'shipped'"),
    ("refuse", None),  # refusals end with no query: nothing to replay
]


def saved_run(folder: Path, suite: Path) -> Path:
    run = folder / "run"
    run.mkdir()
    records.write_run(
        run, records.RunInfo(suite="retail-replay", suite_path=str(suite), kind="nl2ql", started_at=datetime.now(UTC))
    )
    for case_id, query in SAVED:
        records.append_prediction(run, records.Prediction(case_id=case_id, kind="nl2ql", query=query))
    return run


async def test_each_saved_query_runs_through_the_pipeline_and_is_scored_on_the_gold(tmp_path: Path) -> None:
    run = saved_run(tmp_path, write_suite(tmp_path, SUITE))
    found = {(r.case_id, r.written): r for r in await replay([run], history=0)}
    assert set(found) == {(c, q) for c, q in SAVED if q}
    garden = found["garden", SAVED[0][1]]
    assert garden.passed  # every garden product, as the gold lists them
    assert garden.ran == "SELECT name FROM products WHERE category = 'garden'"
    assert garden.fired == ("drop_unasked_limit",)  # the rule the run recorded
    assert found["cancelled", SAVED[1][1]].fired == ()
    assert found["cancelled", SAVED[1][1]].passed
    assert not found["cancelled", SAVED[2][1]].passed


def test_changes_lists_the_queries_whose_outcome_differs() -> None:
    now = [
        Replayed("dev", "a", "SELECT 1", "SELECT 1", True),
        Replayed("dev", "b", "SELECT 2", "SELECT 2", False),
        Replayed("dev", "c", "SELECT 3", "SELECT 3", True),  # not replayed before: not a change
    ]
    earlier = [
        {"suite": "dev", "case_id": "a", "written": "SELECT 1", "passed": False},
        {"suite": "dev", "case_id": "b", "written": "SELECT 2", "passed": True},
    ]
    assert changes(now, earlier) == ["dev a: FAIL -> pass: SELECT 1", "dev b: pass -> FAIL: SELECT 2"]


def test_a_saved_query_is_replayed_as_its_writer_wrote_it_when_the_run_recorded_that() -> None:
    ran = "SELECT name FROM products"
    model = "SELECT name FROM products LIMIT 3"
    recorded = records.Prediction(
        case_id="a", kind="nl2ql", query=ran, events=[{"type": "query", "query": ran, "model_query": model}]
    )
    assert written(recorded) == model
    assert written(records.Prediction(case_id="a", kind="nl2ql", query=ran)) == ran  # a run from before issue 47
