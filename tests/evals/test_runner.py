"""The runner with fake graph runs: predictions are saved, then scored from the saved
file alone; gold queries run on the same store as the predictions."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage

from datawell.evals import records, scoring
from datawell.evals.records import PredictedLink
from datawell.evals.runner import eval_services, predict
from datawell.evals.suites import load_suite
from datawell.graphs.events import AnswerDelta, GraphEvent, RunFinished, StepFinished
from datawell.llm.embeddings import HashingEmbedder
from datawell.runs import AskRequest
from datawell.services import Overrides, Services
from tests.evals import fakes
from tests.evals.conftest import write_suite

SUITE = """
name: retail-mini
kind: nl2ql
fixtures: [retail]
threshold: 0.5
cases:
  - id: cancelled
    vars: {question: "How many orders were cancelled?"}
    expected: {query: "SELECT COUNT(*) FROM orders WHERE status = 'cancelled'"}
  - id: wrong
    vars: {question: "How many orders were returned?"}
    expected: {query: "SELECT COUNT(*) FROM orders WHERE status = 'returned'"}
  - id: ordered
    vars: {question: "Three priciest products, most expensive first?"}
    expected: {query: "SELECT name FROM products ORDER BY price DESC LIMIT 3"}
  - id: unordered
    vars: {question: "Products in the garden category?"}
    expected: {query: "SELECT name FROM products WHERE category = 'garden'"}
  - id: refuse
    vars: {question: "Delete all orders."}
    expected: {refuse: true}
  - id: semantic
    vars: {question: "Gear for cooking outdoors while camping?"}
    expected: {query: "SELECT name FROM products ORDER BY semantic('cooking outdoors while camping') DESC LIMIT 3"}
    assert:
      - {type: rows-contain, value: [Camping Stove]}
      - {type: query-contains, value: "semantic("}
      - {type: max-repairs, value: 0}
"""

ANSWERS = {
    # Written differently from the gold query, same result: right.
    "How many orders were cancelled?": "SELECT SUM(CASE WHEN status = 'cancelled' THEN 1 ELSE 0 END) AS n FROM orders",
    # Runs, but answers another question: wrong.
    "How many orders were returned?": "SELECT COUNT(*) FROM orders WHERE status = 'shipped'",
    # Right rows in the wrong order where the gold query orders: wrong.
    "Three priciest products, most expensive first?": "SELECT name FROM (SELECT name, price FROM products ORDER BY price DESC LIMIT 3) ORDER BY price",
    # Another order where the gold query does not order: right.
    "Products in the garden category?": "SELECT name FROM products WHERE category = 'garden' ORDER BY name DESC",
    "Gear for cooking outdoors while camping?": "SELECT name FROM products ORDER BY semantic('camping stove for cooking outdoors') DESC LIMIT 5",
}


async def run_suite(tmp_path: Path, answers: dict[str, str | None], attempts: int = 1):
    suite = load_suite(write_suite(tmp_path, SUITE))
    out = tmp_path / "run"
    predictions = await predict(
        suite,
        out,
        targets=fakes.targets(nl2ql=fakes.scripted_nl2ql(answers, attempts)),
        overrides=Overrides(embedder=HashingEmbedder()),
    )
    return suite, out, predictions


async def test_scores_right_wrong_and_order_as_bird_does(tmp_path: Path) -> None:
    suite, _, predictions = await run_suite(tmp_path, dict(ANSWERS))
    results = {r.case_id: r for r in await scoring.score_all(suite, predictions)}
    assert results["cancelled"].passed, results["cancelled"].outcomes
    assert not results["wrong"].passed
    assert results["wrong"].outcomes[0].detail == "1 rows, gold has 1"
    assert not results["ordered"].passed and "(ordered)" in results["ordered"].outcomes[0].detail
    assert results["unordered"].passed
    assert results["refuse"].passed and results["refuse"].metrics["refusal_accuracy"] == 1.0
    assert results["semantic"].passed, results["semantic"].outcomes
    assert results["cancelled"].metrics == {"valid_query": 1.0, "repairs": 0.0, "execution_accuracy": 1.0}
    # Each case names its recorded run, one run each.
    run_ids = [r.run_id for r in results.values()]
    assert all(run_ids) and len(set(run_ids)) == len(run_ids)


async def test_a_query_for_a_refusal_case_fails_and_repairs_are_counted(tmp_path: Path) -> None:
    answers = {**ANSWERS, "Delete all orders.": "SELECT COUNT(*) FROM orders"}
    suite, _, predictions = await run_suite(tmp_path, answers, attempts=3)
    results = {r.case_id: r for r in await scoring.score_all(suite, predictions)}
    assert not results["refuse"].passed
    assert results["cancelled"].metrics["repairs"] == 2.0
    assert not results["semantic"].passed  # max-repairs 0
    assert [o.passed for o in results["semantic"].outcomes] == [True, True, False]


async def test_predictions_are_saved_and_rescored_without_the_model(tmp_path: Path) -> None:
    suite, out, predictions = await run_suite(tmp_path, dict(ANSWERS))
    saved = records.read_predictions(out)
    assert [p.case_id for p in saved] == [c.id for c in suite.cases]
    first = saved[0]
    assert first.query == ANSWERS["How many orders were cancelled?"] and first.rows == [{"n": 8}]
    assert first.gold[0].rows is not None and first.latency_ms > 0
    assert [e["type"] for e in first.events] == ["query", "rows"]
    info = records.read_run(out)
    assert info.cases == 6 and info.finished_at is not None
    # Scoring from the file alone gives the same results as scoring in memory.
    from_file = await scoring.score_all(suite, saved)
    in_memory = await scoring.score_all(suite, predictions)
    assert [r.model_dump() for r in from_file] == [r.model_dump() for r in in_memory]


async def test_a_changed_gold_query_is_run_on_a_fresh_store(tmp_path: Path) -> None:
    suite, _, predictions = await run_suite(tmp_path, dict(ANSWERS))
    changed = suite.model_copy(deep=True)
    changed.cases[1].expected.query = "SELECT COUNT(*) FROM orders WHERE status = 'shipped'"
    missing = scoring.missing_gold_queries(changed, predictions)
    assert missing == [("wrong", "SELECT COUNT(*) FROM orders WHERE status = 'shipped'")]
    without_store = {r.case_id: r for r in await scoring.score_all(changed, predictions)}
    assert "gold query failed" in without_store["wrong"].outcomes[0].detail
    from datawell.evals.runner import gold_store

    async with gold_store(changed, fakes.targets(), Overrides(embedder=HashingEmbedder())) as fallback:
        rescored = {r.case_id: r for r in await scoring.score_all(changed, predictions, fallback=fallback)}
    assert rescored["wrong"].passed


async def test_a_broken_case_is_recorded_and_the_rest_still_run(tmp_path: Path) -> None:
    async def explode(services: Services, request: AskRequest) -> AsyncIterator[GraphEvent]:
        if request.question.startswith("How many orders were cancelled"):
            raise RuntimeError("boom")
        async for event in fakes.scripted_nl2ql(ANSWERS)(services, request):
            yield event

    suite = load_suite(write_suite(tmp_path, SUITE))
    predictions = await predict(
        suite, tmp_path / "run", targets=fakes.targets(nl2ql=explode), overrides=Overrides(embedder=HashingEmbedder())
    )
    assert predictions[0].error is not None and predictions[0].error.code == "EXCEPTION"
    assert "boom" in predictions[0].error.message
    results = await scoring.score_all(suite, predictions)
    assert not results[0].passed and results[0].error == "EXCEPTION: RuntimeError: boom"
    assert results[3].passed  # 'unordered' still ran
    assert not scoring.refused(predictions[0])  # a crash is not a refusal


ASSISTANT = """
name: assistant-mini
kind: assistant
fixtures: [library]
cases:
  - id: fees
    vars: {question: "How much in late fees?"}
    expected: {answer: "81.50 euros in total, most from Grace Liu."}
    assert:
      - {type: numeric, value: 81.5, tolerance: 0.01}
      - {type: icontains, value: grace liu}
      - {type: not-contains, value: "I don't know"}
      - {type: regex, value: "euros?"}
      - {type: llm-judge, value: "States the total of 81.50 euros."}
      - {type: tokens, value: 100}
"""


async def test_assistant_answers_streamed_tokens_and_latency(tmp_path: Path) -> None:
    model = GenericFakeChatModel(
        messages=iter(
            [
                AIMessage(
                    content="ok",
                    usage_metadata={"input_tokens": 40, "output_tokens": 8, "total_tokens": 48},
                    response_metadata={"model_name": "fake"},
                )
            ]
        )
    )

    async def assistant(services: Services, request: AskRequest) -> AsyncIterator[GraphEvent]:
        await model.ainvoke(request.question)
        yield StepFinished(index=1, instruction="sum", query="SELECT SUM(late_fee) FROM loans", reasoning="", rows=[])
        for word in ["The", " library", " collected", " 81.50", " euros;", " Grace", " Liu", " paid", " most."]:
            yield AnswerDelta(text=word)
        yield RunFinished()

    suite = load_suite(write_suite(tmp_path, ASSISTANT))
    predictions = await predict(
        suite,
        tmp_path / "run",
        targets=fakes.targets(assistant=assistant),
        overrides=Overrides(embedder=HashingEmbedder()),
    )
    (prediction,) = predictions
    assert prediction.answer == "The library collected 81.50 euros; Grace Liu paid most."
    assert prediction.tokens is not None and prediction.tokens.total == 48
    assert all(e["type"] != "answer-delta" for e in prediction.events)
    (result,) = await scoring.score_all(suite, predictions)
    assert result.passed and result.tokens == 48
    judge = next(o for o in result.outcomes if o.type == "llm-judge")
    assert judge.passed is None and judge.detail == "skipped: no judge model"

    async def strict_judge(question: str, answer: str, rubric: str, reference: str) -> scoring.JudgeVerdict:
        assert rubric == "States the total of 81.50 euros." and reference.startswith("81.50")
        return scoring.JudgeVerdict(score=0.4, reason="too vague")

    (judged,) = await scoring.score_all(suite, predictions, judge=strict_judge)
    assert not judged.passed
    assert [o.detail for o in judged.outcomes if o.type == "llm-judge"] == ["too vague"]


CURATOR = """
name: curator-mini
kind: curator
fixtures: [retail]
links: false
cases:
  - id: retail
    vars: {namespace: retail}
    expected:
      links:
        - {origin: retail/orders.customer_ref, destination: retail/customers.customer_code, matchType: ExactMatch}
        - {origin: retail/orders.sku, destination: retail/products.sku, matchType: ExactMatch}
    assert:
      - {type: links-f1, threshold: 0.6}
"""


async def test_curator_precision_recall_f1(tmp_path: Path) -> None:
    found = {
        "retail": [
            PredictedLink(origin="retail/products.sku", destination="retail/orders.sku", matchType="ExactMatch"),
            PredictedLink(origin="retail/orders.order_id", destination="retail/products.price", matchType="FuzzyMatch"),
        ]
    }
    suite = load_suite(write_suite(tmp_path, CURATOR))
    predictions = await predict(
        suite, tmp_path / "run", targets=fakes.targets(links=found), overrides=Overrides(embedder=HashingEmbedder())
    )
    (result,) = await scoring.score_all(suite, predictions)
    assert result.metrics == {"f1": 0.5, "precision": 0.5, "recall": 0.5}
    assert not result.passed and result.outcomes[0].detail.startswith("P=0.50 R=0.50")


async def test_an_eval_store_shares_the_configured_models_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The embedded weights and the distilled embedder are joined once, not once per eval run."""
    monkeypatch.setenv("DATAWELL_DATA_DIR", str(tmp_path / "data"))
    async with eval_services(Overrides(embedder=HashingEmbedder())) as services:
        (services.settings.data_dir / "models" / "weights.gguf").write_text("joined once")
        fresh = services.settings.data_dir
    assert not fresh.exists()  # the eval's own store is gone
    assert (tmp_path / "data" / "models" / "weights.gguf").read_text() == "joined once"
