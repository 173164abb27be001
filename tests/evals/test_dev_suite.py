"""The public dev suite is right: built only from the three databases it may use, big
enough, and every gold query (and alternative) runs through the QL on the fixtures and
returns what sql-eval's own gold query returned on the same data in PostgreSQL."""

from __future__ import annotations

from datawell.evals.runner import eval_services
from datawell.evals.suites import load_suite, resolve_suite_path
from datawell.llm.embeddings import HashingEmbedder
from datawell.services import Overrides
from tests.evals.sql_eval_gold import compare_golds

DATABASES = {"academic", "advising", "atis"}


def test_the_dev_suite_is_found_by_name_and_holds_only_its_three_databases() -> None:
    path = resolve_suite_path("dev")
    suite = load_suite("dev")
    assert path.parent.name == "dev"
    assert set(suite.fixtures) == DATABASES
    assert {p.name for p in (path.parent / "fixtures").iterdir()} == DATABASES
    answerable = [c for c in suite.cases if not c.expected.refuse]
    refusals = [c for c in suite.cases if c.expected.refuse]
    assert len(answerable) >= 60 and len(refusals) >= 6
    assert {c.vars.namespace for c in suite.cases} == DATABASES
    assert all("refuse" in c.tags for c in refusals)


async def test_every_dev_gold_query_runs_and_returns_sql_evals_gold_rows() -> None:
    async with eval_services(Overrides(embedder=HashingEmbedder())) as services:
        wrong, checked = await compare_golds(services, load_suite("dev"))
    assert wrong == [], "\n".join(f"{i}: {w}" for i, w in wrong)
    assert checked >= 60
