"""What the dev and validation suites' tests share: every gold query and alternative of a
suite run through the QL on its loaded fixtures, and the gold's rows compared with what
sql-eval's own gold returned on the same data (`sql_eval_gold.jsonl` beside the suite)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from datawell.errors import QueryError
from datawell.evals import metrics
from datawell.evals.fixtures import load_fixtures
from datawell.evals.suites import Suite
from datawell.services import Services


def recorded(folder: Path) -> dict[str, dict[str, Any]]:
    lines = (folder / "sql_eval_gold.jsonl").read_text(encoding="utf-8").splitlines()
    return {item["id"]: item for item in map(json.loads, lines)}


async def compare_golds(services: Services, suite: Suite) -> tuple[list[tuple[str, str]], int]:
    """(case id, what is wrong) for each gold that fails or differs from sql-eval's rows, and
    how many were compared. A case sql-eval did not record (hand-made) or marked `unchecked`
    only has to run and return rows."""
    assert suite.path is not None
    gold_rows = recorded(suite.path.parent)
    store = await load_fixtures(services, suite)
    wrong: list[tuple[str, str]] = []
    checked = 0
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
        source = gold_rows.get(case.id)
        if source is None or "unchecked" in source:
            if not rows:
                wrong.append((case.id, "the gold query returns no rows"))
            continue
        checked += 1
        # A case whose ORDER BY leaves ties on this data compares sets, as its assertion does.
        ordered = metrics.query_orders(source["query"]) and all(a.order != "ignore" for a in case.assert_)
        if not metrics.results_match(rows, source["rows"], ordered=ordered, any_column_order=True):
            wrong.append((case.id, f"{rows} != {source['rows']}"))
    return wrong, checked
