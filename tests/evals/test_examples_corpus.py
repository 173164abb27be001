"""The corpus of retrieved examples is built from the suites, reproducibly, never from a denied one."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from datawell.cli import app
from datawell.config import Settings
from datawell.evals import runner
from datawell.evals.examples_corpus import build, gold_values, main, render, tables_used
from datawell.evals.fixtures import load_fixture
from datawell.evals.retrieval_check import shape
from datawell.evals.runner import eval_services
from datawell.evals.suites import load_suite
from datawell.llm.embeddings import HashingEmbedder
from datawell.runs import query_deps
from datawell.services import Overrides
from datawell.tools.retrieved_examples import CORPUS_PATH, CorpusError
from tests.evals import fakes
from tests.evals.conftest import write_suite

SUITE = """
name: retrieval-mini
kind: nl2ql
fixtures: [retail]
cases:
  - id: count
    vars: {question: "How many orders?"}
    expected: {query: "SELECT COUNT(*) FROM orders"}
"""
ANSWERS = {"How many orders?": "SELECT COUNT(*) FROM orders"}


def test_building_again_gives_the_committed_corpus() -> None:
    assert render(build()) == CORPUS_PATH.read_text(encoding="utf-8")
    assert main(["--check"]) == 0


def test_every_entry_names_its_suite_case_and_database() -> None:
    for entry in build():
        suite = load_suite(entry.suite)
        case = suite.case(entry.case)
        assert entry.database == (case.vars.namespace or suite.fixtures[0])
        assert entry.query == case.expected.query and entry.tables


def test_the_validation_suite_is_never_a_source() -> None:
    with pytest.raises(CorpusError, match="validation"):
        build(("nl2ql", "validation"))


def test_the_gold_query_gives_the_values_and_the_tables_it_reads() -> None:
    retail = load_fixture("retail", load_suite("nl2ql"))
    query = "SELECT c.name FROM customers c JOIN orders o ON o.customer_ref = c.customer_code WHERE o.status LIKE '%cancel%'"

    assert gold_values(query) == ["cancel"]
    assert tables_used(query, retail) == "customers(customer_code, name); orders(customer_ref, status)"
    assert tables_used("SELECT COUNT(*) FROM orders", retail) == "orders"


def test_a_query_s_shape_is_its_clauses_and_aggregates_without_names() -> None:
    assert shape("SELECT a, COUNT(*) FROM t JOIN u ON t.x = u.x GROUP BY a ORDER BY 2 DESC LIMIT 1") == {
        "join",
        "group",
        "order",
        "limit",
        "count",
    }
    assert shape("SELECT name FROM t WHERE id IN (SELECT id FROM u)") == {"where", "in", "subquery"}


async def test_the_environment_switches_retrieval_on_for_an_eval_run_which_leaves_each_database_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DATAWELL_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("DATAWELL_RETRIEVED_EXAMPLES", "3")
    async with eval_services(Overrides(embedder=HashingEmbedder())) as services:
        view = query_deps(services).view
    assert (view.retrieved_count, view.leave_own_out, view.retrieved is not None) == (3, True, True)


def test_an_eval_run_records_and_reports_its_retrieved_examples(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DATAWELL_RETRIEVED_EXAMPLES", "3")
    monkeypatch.setattr(runner, "default_targets", lambda: fakes.targets(nl2ql=fakes.scripted_nl2ql(ANSWERS)))
    result = CliRunner().invoke(app, ["eval", "run", str(write_suite(tmp_path, SUITE)), "--out", str(tmp_path / "a")])
    assert result.exit_code == 0, result.output
    assert json.loads((tmp_path / "a" / "run.json").read_text())["retrieved_examples"] == 3
    assert "retrieved examples: 3" in (tmp_path / "a" / "report.md").read_text()


def test_the_service_leaves_nothing_out_but_the_denylist(settings: Settings) -> None:
    assert Settings().retrieved_examples == 0  # off until measured with the model
    assert settings.retrieved_examples_leave_own_out is False
