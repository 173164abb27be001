"""Runs an ordered tuple of rules on a query and records what each changed (issue 47).

Consecutive rules of one kind share one parse and one write of the query: the `tree` rules
one tree, the `select` rules one pass over the query's SELECTs (each with the datasets it
reads, `sql.sources_of`), as `fit_shape`, `mend` and `reroute_joins` did before they were
named, so a rule sees what the rules before it made of the query and the query is written as
it was. A `text` rule parses and writes the query itself; the `values` rules look literals up
in the data. A query that does not parse comes back as it was (the checker says why). A rule
that raises is logged and left out: its segment runs again without it, from the query as it
came, so one rule's slip never fails the question nor leaves a half-rewritten tree."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from itertools import groupby
from typing import cast

import sqlglot
from sqlglot import exp

from datawell.tools.catalog import Catalog
from datawell.tools.checker.allowed import DIALECTS, QL_DIALECT
from datawell.tools.rewrite.change import Change, Context, Rule, Scope, SelectApply, TextApply, TreeApply
from datawell.tools.rewrite.sql import aliases, qualifiers_read, sources_of

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Rewritten:
    """The query to run and the changes that made it, in the order the rules applied."""

    query: str
    changes: list[Change] = field(default_factory=list)
    reasons: list[str] = field(default_factory=list)  # each rule's reasons, one by one

    def then(self, done: Rewritten) -> Rewritten:
        return Rewritten(done.query, self.changes + done.changes, self.reasons + done.reasons)


def segments(rules: Iterable[Rule]) -> Iterator[list[Rule]]:
    """The rules in runs of one kind, in order."""
    for _, run in groupby(rules, key=lambda r: r.kind):
        yield list(run)


async def rewrite(rules: Iterable[Rule], query: str, context: Context) -> Rewritten:
    """`query` with the `rules` applied in order. The catalog is read (once, through the
    context) only when a rule about to run declares it reads it."""
    done = Rewritten(query)
    for run in segments(rules):
        if run[0].kind == "values":  # reads the catalog itself, only when the query compares a text
            if context.match_values is None:
                continue
            matched = await context.match_values(done.query, frozenset(r.name for r in run), context.catalog)
            done = done.then(Rewritten(matched.query, matched.records, matched.changes))
        else:
            catalog = await context.the_catalog() if any("catalog" in r.reads for r in run) else None
            done = done.then(_apply(run, done.query, context, catalog))
    return done


def apply_now(rules: Iterable[Rule], query: str, context: Context) -> Rewritten:
    """`rewrite` without lookups of stored values, for rules that need none (the catalog, if
    any rule reads it, given in the context)."""
    done = Rewritten(query)
    for run in segments(rules):
        if run[0].kind == "values":
            raise ValueError(f"{', '.join(r.name for r in run)} look values up: use rewrite()")
        done = done.then(_apply(run, done.query, context, context.catalog))
    return done


def _apply(run: list[Rule], query: str, context: Context, catalog: Catalog | None) -> Rewritten:
    if catalog is None:  # a rule that reads the catalog does not run without it
        run = [r for r in run if "catalog" not in r.reads]
    if not run:
        return Rewritten(query)
    if run[0].kind == "tree":
        return _on_tree(run, query, context)
    if run[0].kind == "select":
        assert catalog is not None  # every select rule reads the datasets a SELECT reads
        return _on_selects(run, query, context, catalog)
    return _on_text(run, query, context)


def _on_tree(run: list[Rule], query: str, context: Context) -> Rewritten:
    dialect = DIALECTS[QL_DIALECT]
    try:
        tree = sqlglot.parse_one(query, read=dialect)
    except sqlglot.errors.SqlglotError:
        return Rewritten(query)
    if not isinstance(tree, exp.Query):
        return Rewritten(query)
    changes: list[Change] = []
    before = tree.sql(dialect=dialect)
    for rule in run:
        try:
            tree, reason = cast(TreeApply, rule.apply)(tree, context)
        except Exception:
            return _on_tree(_without(rule, run, query), query, context)
        if reason:
            after = tree.sql(dialect=dialect)
            changes.append(Change(rule.name, before, after, reason))
            before = after
    return Rewritten(before if changes else query, changes, [c.reason for c in changes])


def _on_selects(run: list[Rule], query: str, context: Context, catalog: Catalog) -> Rewritten:
    try:
        tree = sqlglot.parse_one(query, read=QL_DIALECT)
    except sqlglot.errors.SqlglotError:
        return Rewritten(query)
    changes: list[Change] = []
    said: list[str] = []
    before = tree.sql(dialect=QL_DIALECT)
    defined = aliases(tree)
    for select in list(tree.find_all(exp.Select)):
        scope = Scope(select, sources_of(select, catalog), catalog, defined, tree, qualifiers_read(tree))
        for rule in run:
            try:
                reasons = cast(SelectApply, rule.apply)(scope, context)
            except Exception:
                return _on_selects(_without(rule, run, query), query, context, catalog)
            if reasons:
                after = tree.sql(dialect=QL_DIALECT)
                changes.append(Change(rule.name, before, after, "; ".join(reasons)))
                said += reasons
                before = after
    return Rewritten(before if changes else query, changes, list(dict.fromkeys(said)))


def _on_text(run: list[Rule], query: str, context: Context) -> Rewritten:
    changes: list[Change] = []
    said: list[str] = []
    for rule in run:
        try:
            after, reasons = cast(TextApply, rule.apply)(query, context)
        except Exception:
            _without(rule, run, query)
            continue
        if reasons:
            changes.append(Change(rule.name, query, after, "; ".join(reasons)))
            said += reasons
            query = after
    return Rewritten(query, changes, said)


def _without(rule: Rule, run: list[Rule], query: str) -> list[Rule]:
    """`run` without `rule`, which raised on `query` (logged with the query: a defect to fix)."""
    log.warning("query rule %s failed and was left out, on: %s", rule.name, query, exc_info=True)
    return [r for r in run if r is not rule]
