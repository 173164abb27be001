"""How many gold queries the query grammar (datawell/tools/grammar.py) accepts, each against its
own namespace's catalog, checked without a model through the grammar's lark mirror (issue 50).

    python scripts/grammar_check.py [--why] [suite ...]   # default: dev, validation and the bundled suites

Prints totals only, per suite: gold queries (and alternatives) accepted of those read, and with
`--why` how many refused queries stop at each kind of word (a column after an alias, a bare name
no table has, a function, ...), naming only SQL's own words (functions, keywords), never a case
or a catalog name: the validation suite's cases are not to be read one by one."""

from __future__ import annotations

import json
import re
import sys
from collections import Counter

import lark

from datawell.evals.fixtures import load_fixture
from datawell.evals.suites import load_suite
from datawell.tools.grammar import KEYWORDS, lark_grammar, reply_grammar

SUITES = ("dev", "validation", "nl2ql", "erp", "assistant")


def parser(suite_fixtures: dict[str, list[str]], namespace: str, cache: dict[str, lark.Lark]) -> lark.Lark:
    if namespace not in cache:
        grammar = lark_grammar(reply_grammar(suite_fixtures[namespace]))
        cache[namespace] = lark.Lark(grammar, start="root", parser="earley", lexer="dynamic")
    return cache[namespace]


def refusal(found: lark.Lark, query: str, columns: list[str]) -> str | None:
    """None when the grammar accepts `query`, else the kind of word it stops at."""
    text = json.dumps({"query": query})
    try:
        found.parse(text)
    except lark.exceptions.UnexpectedInput as exc:
        return kind(text, exc.pos_in_stream or 0, columns)
    except lark.exceptions.LarkError:
        return "other"
    return None


WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def kind(text: str, at: int, columns: list[str]) -> str:
    start = at
    while start > 0 and (text[start - 1].isalnum() or text[start - 1] == "_"):
        start -= 1
    found = WORD.match(text, start)
    if found is None:
        return f"punctuation {text[at]!r}" if at < len(text) else "the end"
    word, after = found.group(), text[found.end() : found.end() + 1]
    tables = {c.rpartition(".")[0] for c in columns}
    names = {c.rpartition(".")[2] for c in columns}
    if start > 0 and text[start - 1] == ".":
        qualifier = WORD.findall(text[: start - 1])[-1:] or [""]
        owner = "a table" if qualifier[0] in tables else "an alias"
        return f"a column after {owner}, " + ("of another table" if word in names else "no table has")
    if after == "(":
        return f"function {word.lower()}"
    if word in names or word in tables:
        return "a catalog name where the grammar wants another word"
    if word.lower() in KEYWORDS:
        return f"keyword {word.lower()}"
    return "a bare name no table has"


def check(name: str, why: Counter[str] | None = None) -> tuple[int, int]:
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
            refused = refusal(parser(columns, namespace, cache), query, columns[namespace])
            accepted += refused is None
            if refused is not None and why is not None:
                why[refused] += 1
    return accepted, read


def main(args: list[str]) -> None:
    show_why = "--why" in args
    total = [0, 0]
    for name in [a for a in args if a != "--why"] or SUITES:
        why: Counter[str] = Counter()
        accepted, read = check(name, why)
        total[0] += accepted
        total[1] += read
        print(f"{name}: {accepted} of {read} gold queries accepted")
        for reason, count in why.most_common() if show_why else ():
            print(f"    {count:3d}  {reason}")
    print(f"all: {total[0]} of {total[1]}")


if __name__ == "__main__":
    main(sys.argv[1:])
