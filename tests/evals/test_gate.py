"""The gate of the query rewrite rules (`python -m datawell.evals.gate`, issue 47): no gold
query of any suite is changed into a wrong one by the default rules, and the gate counts a
rule's fires, helps and hurts as they happened."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from datawell.evals import records
from datawell.evals.gate import (
    GOLD,
    broken_lines,
    gate_suites,
    gold_items,
    measure,
    run_items,
    table,
    tallies,
)
from datawell.evals.suites import load_suite
from datawell.tools.rewrite.registry import OFF_BY_DEFAULT
from tests.evals.conftest import write_suite


async def test_no_gold_query_of_any_suite_is_changed_into_a_wrong_one_by_the_default_rules() -> None:
    suites = {s.name: s for s in gate_suites()}
    assert {"nl2ql", "erp", "dev", "assistant"} <= suites.keys()  # every suite with gold queries
    items = gold_items(suites.values())
    measured = await measure(suites, items, frozenset(OFF_BY_DEFAULT), ablate=False)
    assert broken_lines(measured) == []
    # Each gold query is right as written: a suite whose gold fails without any rule is broken.
    assert [(m.item.suite, m.item.case.id) for m in measured if not m.none.passed] == []


SUITE = """
name: retail-gate
kind: nl2ql
fixtures: [retail]
cases:
  - id: cheapest-garden
    vars: {question: "Which garden product costs least?"}
    expected: {query: "SELECT name FROM products WHERE category = 'garden' ORDER BY price LIMIT 1"}
  - id: garden-by-price
    vars: {question: "List the garden products by price."}
    expected: {query: "SELECT name FROM products WHERE category = 'garden' ORDER BY price LIMIT 1"}
  - id: garden
    vars: {question: "Products in the garden category?"}
    expected: {query: "SELECT name FROM products WHERE category = 'garden'"}
"""


def saved_run(folder: Path, suite: Path) -> Path:
    run = folder / "runs" / "retail"
    run.mkdir(parents=True)
    info = records.RunInfo(suite="retail-gate", suite_path=str(suite), kind="nl2ql", started_at=datetime.now(UTC))
    records.write_run(run, info)
    # The LIMIT the question never asked for goes: the rule makes this written query right.
    query = "SELECT name FROM products WHERE category = 'garden' LIMIT 1"
    records.append_prediction(run, records.Prediction(case_id="garden", kind="nl2ql", query=query))
    return run.parent


async def test_a_rule_that_changes_a_right_query_is_counted_as_hurting_and_named(tmp_path: Path) -> None:
    suite = load_suite(write_suite(tmp_path, SUITE))
    suites = {suite.name: suite}
    # garden-by-price's gold keeps one row under a LIMIT its question names no number for:
    # drop_unasked_limit lists every garden product, and the gold's one row no longer matches.
    items = gold_items([suite]) + run_items(saved_run(tmp_path, suite.path or tmp_path), suites)
    measured = await measure(suites, items, frozenset())
    by = {(m.item.source, m.item.case.id): m for m in measured}
    assert by[GOLD, "garden-by-price"].on.fired == ("drop_unasked_limit",)
    assert by[GOLD, "garden-by-price"].hurt("drop_unasked_limit")
    # "least" asks for few: the LIMIT stays, but the ranking's measure is selected beside the
    # name, a column the gold lacks (this suite allows none extra).
    assert by[GOLD, "cheapest-garden"].on.fired == ("select_ranking_measure",)
    assert by[GOLD, "cheapest-garden"].hurt("select_ranking_measure")
    assert by["retail", "garden"].helped("drop_unasked_limit")
    assert by[GOLD, "garden"].on.fired == () and by[GOLD, "garden"].on.passed

    counts = tallies(measured)["drop_unasked_limit"]
    assert (counts[GOLD].fires, counts[GOLD].helps, counts[GOLD].hurts) == (1, 0, 1)
    assert (counts["runs"].fires, counts["runs"].helps, counts["runs"].hurts) == (1, 1, 0)
    assert str(counts[f"{GOLD}:retail-gate"]) == "1/0/1"
    row = next(line for line in table(measured) if line.startswith("| `drop_unasked_limit`"))
    assert "| 1/0/1 | 1/1/0 | 2/1/1 |" in row  # gold, runs, elsewhere (it was written from no case)

    assert broken_lines(measured) == [
        "retail-gate cheapest-garden: select_ranking_measure changed the gold query into a wrong one: "
        "\"SELECT name FROM products WHERE category = 'garden' ORDER BY price LIMIT 1\" -> "
        "\"SELECT name, price FROM products WHERE category = 'garden' ORDER BY price LIMIT 1\"",
        "retail-gate garden-by-price: drop_unasked_limit changed the gold query into a wrong one: "
        "\"SELECT name FROM products WHERE category = 'garden' ORDER BY price LIMIT 1\" -> "
        "\"SELECT name FROM products WHERE category = 'garden' ORDER BY price\"",
    ]
    # Off, the rules neither fire nor hurt: the gold passes as written.
    rules = frozenset({"drop_unasked_limit", "select_ranking_measure"})
    off = await measure(suites, gold_items([suite]), rules, ablate=False)
    assert broken_lines(off) == [] and all(m.on.passed for m in off)
