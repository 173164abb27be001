"""How many gold queries the query grammar (datawell/tools/grammar.py) accepts, each against its
own namespace's catalog, checked without a model through the grammar's lark mirror (issue 50).

    python scripts/grammar_check.py [suite ...]   # default: dev, validation and the bundled suites

Prints totals only, per suite: gold queries (and alternatives) accepted of those read. It never
prints a case: the validation suite's cases are not to be read one by one."""

from __future__ import annotations

import json
import sys

import lark

from datawell.evals.fixtures import load_fixture
from datawell.evals.suites import load_suite
from datawell.tools.grammar import lark_grammar, reply_grammar

SUITES = ("dev", "validation", "nl2ql", "erp", "assistant")


def parser(suite_fixtures: dict[str, list[str]], namespace: str, cache: dict[str, lark.Lark]) -> lark.Lark:
    if namespace not in cache:
        grammar = lark_grammar(reply_grammar(suite_fixtures[namespace]))
        cache[namespace] = lark.Lark(grammar, start="root", parser="earley", lexer="dynamic")
    return cache[namespace]


def accepts(found: lark.Lark, query: str) -> bool:
    try:
        found.parse(json.dumps({"query": query}))
    except lark.exceptions.LarkError:
        return False
    return True


def check(name: str) -> tuple[int, int]:
    suite = load_suite(name)
    columns = {}
    for fixture_name in suite.fixtures:
        fixture = load_fixture(fixture_name, suite)
        columns[fixture_name] = [f"{d}.{f}" for d, spec in fixture.datasets.items() for f in spec.fields]
    cache: dict[str, lark.Lark] = {}
    read = accepted = 0
    for case in suite.cases:
        namespace = case.vars.namespace or (suite.fixtures[0] if suite.fixtures else None)
        queries = [q for q in [case.expected.query, *(s.query for s in case.expected.steps)] if q]
        if namespace is None or namespace not in columns:
            continue
        for query in queries:
            read += 1
            accepted += accepts(parser(columns, namespace, cache), query)
    return accepted, read


def main(names: list[str]) -> None:
    total = [0, 0]
    for name in names or SUITES:
        accepted, read = check(name)
        total[0] += accepted
        total[1] += read
        print(f"{name}: {accepted} of {read} gold queries accepted")
    print(f"all: {total[0]} of {total[1]}")


if __name__ == "__main__":
    main(sys.argv[1:])
