"""The public dev suite is right: built only from the three databases it may use, big
enough, and every gold query (and alternative) runs through the QL on the fixtures and
returns what sql-eval's own gold query returned on the same data in PostgreSQL."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from datawell.errors import QueryError
from datawell.evals import metrics
from datawell.evals.fixtures import load_fixtures
from datawell.evals.runner import eval_services
from datawell.evals.suites import load_suite, resolve_suite_path
from datawell.llm.embeddings import HashingEmbedder
from datawell.services import Overrides

DATABASES = {"academic", "advising", "atis"}


def _sql_eval_gold(folder: Path) -> dict[str, dict[str, Any]]:
    lines = (folder / "sql_eval_gold.jsonl").read_text(encoding="utf-8").splitlines()
    return {item["id"]: item for item in map(json.loads, lines)}


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
    suite = load_suite("dev")
    assert suite.path is not None
    recorded = _sql_eval_gold(suite.path.parent)
    wrong: list[tuple[str, str]] = []
    checked = 0
    async with eval_services(Overrides(embedder=HashingEmbedder())) as services:
        store = await load_fixtures(services, suite)
        for case in suite.cases:
            if case.expected.refuse:
                continue
            namespace = store.namespace(str(case.vars.namespace))
            gold, *alternatives = [str(case.expected.query), *case.expected.alternatives]
            try:
                rows = (await services.query_tools.run(store.user, namespace, gold)).rows
                for query in alternatives:
                    await services.query_tools.run(store.user, namespace, query)
            except QueryError as exc:
                wrong.append((case.id, f"{exc.message}: {[e.message for e in exc.sub_errors]}"))
                continue
            source = recorded[case.id]
            if "unchecked" in source:
                continue
            checked += 1
            # A case whose ORDER BY leaves ties on this data compares sets, as its assertion does.
            ordered = metrics.query_orders(source["query"]) and all(a.order != "ignore" for a in case.assert_)
            if not metrics.results_match(rows, source["rows"], ordered=ordered, any_column_order=True):
                wrong.append((case.id, f"{rows} != {source['rows']}"))
    assert wrong == [], "\n".join(f"{i}: {w}" for i, w in wrong)
    assert checked >= 60
