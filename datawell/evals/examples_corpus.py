"""The corpus of retrieved examples (issue 50), built from the suites' answerable cases:
`python -m datawell.evals.examples_corpus` writes datawell/tools/examples_corpus.jsonl, and
`--check` says whether the committed file is what the suites build now.

Sources: the dev suite (defog-data's academic, advising and atis with sql-eval's questions)
and the bundled nl2ql and erp suites. Never the validation suite nor a held-out database
(`DENYLIST`): both are refused before a case is read. Each entry keeps its suite, case id and
database; its question masked with its fixture's table and column names and the literals of
its gold query (sqlglot); and the tables its query reads, with the columns it uses."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
from pathlib import Path

import sqlglot
from sqlglot import exp

from datawell.evals.fixtures import Fixture, load_fixture
from datawell.evals.suites import Suite, load_suite
from datawell.tools.checker.allowed import QL_DIALECT
from datawell.tools.retrieved_examples import (
    CORPUS_PATH,
    DENIED_SUITES,
    DENYLIST,
    CorpusEntry,
    CorpusError,
    mask,
    refuse_denied,
)

SOURCE_SUITES = ("dev", "nl2ql", "erp")


def fixture_names(fixture: Fixture) -> list[str]:
    """The fixture's table and column names."""
    return [*fixture.datasets, *(f for spec in fixture.datasets.values() for f in spec.fields)]


def gold_values(query: str) -> list[str]:
    """The text literals of a query (LIKE's `%` and `_` wildcards dropped)."""
    try:
        tree = sqlglot.parse_one(query, read=QL_DIALECT)
    except sqlglot.errors.ParseError:
        return []
    found = (literal.this.strip("%_ ") for literal in tree.find_all(exp.Literal) if literal.is_string)
    return list(dict.fromkeys(value for value in found if value))


def tables_used(query: str, fixture: Fixture) -> str:
    """The fixture tables a query reads, each with the columns it names, in the fixture's
    order: `author(aid, name); writes(aid, pid)`."""
    try:
        tree = sqlglot.parse_one(query, read=QL_DIALECT)
    except sqlglot.errors.ParseError:
        return ""
    aliases = {t.alias_or_name: t.name for t in tree.find_all(exp.Table) if t.name in fixture.datasets}
    read = set(aliases.values())
    used: dict[str, set[str]] = {table: set() for table in read}
    for column in tree.find_all(exp.Column):
        owner = aliases.get(column.table) if column.table else None
        owners = [owner] if owner else [t for t in read if column.name in fixture.datasets[t].fields]
        for table in owners:
            if table and column.name in fixture.datasets[table].fields:
                used[table].add(column.name)
    shown = []
    for table, spec in fixture.datasets.items():
        if table in read:
            columns = [f for f in spec.fields if f in used[table]]
            shown.append(f"{table}({', '.join(columns)})" if columns else table)
    return "; ".join(shown)


def suite_entries(suite: Suite) -> Iterator[CorpusEntry]:
    fixtures: dict[str, Fixture] = {}
    for case in suite.cases:
        query = case.expected.query
        if case.expected.refuse or not query:
            continue
        database = case.vars.namespace or suite.fixtures[0]
        if database.lower() in DENYLIST:
            raise CorpusError(f"{suite.name}/{case.id}: database {database!r} may never be an example")
        fixture = fixtures.get(database) or fixtures.setdefault(database, load_fixture(database, suite))
        question = case.vars.question.split("\n\n", 1)[0].strip()
        yield CorpusEntry(
            suite=suite.name,
            case=case.id,
            database=database,
            question=question,
            masked=mask(question, fixture_names(fixture), gold_values(query)),
            query=query,
            tables=tables_used(query, fixture),
        )


def build(suites: tuple[str, ...] = SOURCE_SUITES) -> list[CorpusEntry]:
    """The corpus entries of these suites, in suite and case order."""
    entries: list[CorpusEntry] = []
    for name in suites:
        if name.lower() in DENIED_SUITES:
            raise CorpusError(f"the {name} suite may never be a source of examples")
        entries.extend(suite_entries(load_suite(name)))
    return refuse_denied(entries)


def render(entries: list[CorpusEntry]) -> str:
    return "".join(json.dumps(e.model_dump(), ensure_ascii=False) + "\n" for e in entries)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m datawell.evals.examples_corpus", description=__doc__)
    parser.add_argument("--out", type=Path, default=CORPUS_PATH, help="where to write the corpus")
    parser.add_argument("--check", action="store_true", help="only say whether --out is what the suites build")
    args = parser.parse_args(argv)
    text = render(build())
    if args.check:
        same = args.out.is_file() and args.out.read_text(encoding="utf-8") == text
        print(f"{args.out}: {'up to date' if same else 'differs from what the suites build'}")
        return 0 if same else 1
    args.out.write_text(text, encoding="utf-8")
    print(f"{args.out}: {text.count(chr(10))} examples")
    return 0


if __name__ == "__main__":
    sys.exit(main())
