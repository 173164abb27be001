"""Replays every question of the bundled suites and the dev suite through the coverage
decision (`tools/coverage.py`), offline: no model, no database, the fixtures' CSVs as the
catalog (fields, descriptions, and values as hints would show them).

    python -m datawell.evals.coverage_check [--threshold 0.3] [--share 0.3] [--embedder hashing|<static model folder>]

Prints, per suite, how many answerable questions it would refuse and how many refusal cases
it catches (refusals that ask to change data are counted apart: the query writer's
data-change rule declines those), for refusal by coverage and, under `subject`, for the
refusal of a question whose subject the catalog holds no word of (on by default). The
validation suite's totals are printed, never its questions (docs/evals.md: decide on it)."""

from __future__ import annotations

import argparse
import asyncio
from collections import Counter
from pathlib import Path
from typing import Any

from datawell.evals.fixtures import load_fixture
from datawell.evals.suites import Suite, bundled_suites, load_suite
from datawell.storage.access import NamespaceRef
from datawell.storage.hints import EXAMPLES, TEXT_VALUES, ColumnHint
from datawell.tools.catalog import Catalog, TableInfo
from datawell.tools.coverage import SHARE, THRESHOLD, coverage, held, subject
from datawell.tools.ql import TextEmbedder

CHANGES = ("delete", "drop", "update", "insert", "remove", "truncate")
DEV = Path(__file__).parent / "suites" / "dev" / "dev.yaml"
DECIDE_ONLY = frozenset({"validation"})  # suites whose refused questions are not printed


def fixture_catalog(suite: Suite, name: str) -> Catalog:
    fixture = load_fixture(name, suite)
    namespace = NamespaceRef(name, "evals", name)
    tables = []
    for dataset, spec in fixture.datasets.items():
        rows = fixture.rows(dataset)
        hints = {}
        for field, about in spec.fields.items():
            if about.type != "text":
                continue
            counts = Counter(str(r[field]) for r in rows if r[field] is not None)
            shown = [v for v, _ in counts.most_common(TEXT_VALUES if len(counts) <= TEXT_VALUES else EXAMPLES)]
            hints[field] = ColumnHint(type="text", distinct=len(counts), values=shown)
        tables.append(
            TableInfo(
                name=dataset,
                dataset_id=dataset,
                namespace=namespace,
                physical=dataset,
                description=spec.description,
                columns={f: s.type for f, s in spec.fields.items()},
                column_descriptions={f: s.description for f, s in spec.fields.items()},
                hints=hints,
                row_count=len(rows),
            )
        )
    return Catalog(namespace=namespace, tables=tables)


async def check_suite(path: Path, embedder: TextEmbedder, threshold: float, share: float) -> dict[str, Any]:
    suite = load_suite(path)
    catalogs = {name: fixture_catalog(suite, name) for name in suite.fixtures}
    tally = Counter[str]()
    refused_answerable: list[str] = []
    for case in suite.cases:
        question = case.vars.question
        if not question:
            continue
        namespace = case.vars.namespace or suite.fixtures[0]
        found = await coverage(question, catalogs[namespace], embedder, threshold, share)
        asks_for = subject(question)
        unheld = bool(asks_for) and not held(asks_for, catalogs[namespace])
        refusal = case.expected.refuse or "refuse" in suite.tags(case)
        if refusal and any(w in question.lower() for w in CHANGES):
            tally["change refusals"] += 1
            tally["change refusals caught"] += not found.covered
        elif refusal:
            tally["refusals"] += 1
            tally["refusals caught"] += not found.covered
            tally["subject: refusals caught"] += unheld
        else:
            tally["answerable"] += 1
            tally["subject: answerable refused"] += unheld
            if unheld:
                refused_answerable.append(f"{case.id}: {question} (subject {asks_for} not held)")
            if not found.covered:
                tally["answerable refused"] += 1
                refused_answerable.append(f"{case.id}: {question} (uncovered {found.uncovered})")
    return {"suite": suite.name, **tally, "refused": refused_answerable}


def embedder_of(spec: str) -> TextEmbedder:
    from datawell.llm.embeddings import HashingEmbedder, StaticMiniLMEmbedder

    return HashingEmbedder() if spec == "hashing" else StaticMiniLMEmbedder(Path(spec))


async def main(threshold: float, share: float, embedder: TextEmbedder) -> None:
    for path in dict.fromkeys([*bundled_suites(), DEV]):
        if "curator" in path.name or "extract" in str(path):
            continue
        report = await check_suite(path, embedder, threshold, share)
        refused = report.pop("refused")
        print(report)
        if report["suite"] in DECIDE_ONLY:  # its totals decide; its cases are never read to fix them
            continue
        for line in refused:
            print("   refused:", line)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--threshold", type=float, default=THRESHOLD)
    parser.add_argument("--share", type=float, default=SHARE)
    parser.add_argument("--embedder", default="hashing", help="hashing, or the folder of the distilled static model")
    arguments = parser.parse_args()
    asyncio.run(main(arguments.threshold, arguments.share, embedder_of(arguments.embedder)))
