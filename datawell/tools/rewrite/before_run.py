"""The rules that run before a query runs, each body in its own module of this package (the
two `values` rules are applied by tools/literals.match_literals, which looks the values up)."""

from __future__ import annotations

from collections.abc import Callable

from sqlglot import exp

from datawell.tools.catalog import Catalog
from datawell.tools.rewrite.change import Context, Mended, Reads, Rule, Scope, Shaped, Tier
from datawell.tools.rewrite.divide_as_fractions import divide_as_fractions
from datawell.tools.rewrite.drop_unasked_limit import drop_unasked_limit
from datawell.tools.rewrite.group_per_asked import group_per_asked
from datawell.tools.rewrite.lexicon import asked_per, says_what_to_show
from datawell.tools.rewrite.period_for_first_day import period_for_first_day
from datawell.tools.rewrite.reroute_crossed_keys import reroute_crossed_keys
from datawell.tools.rewrite.reroute_mistyped_joins import reroute_mistyped_joins
from datawell.tools.rewrite.rows_not_extremes import rows_not_extremes
from datawell.tools.rewrite.select_group_keys import select_group_keys
from datawell.tools.rewrite.select_ranking_measure import select_ranking_measure


def _tree(body: Callable[[exp.Query], str]) -> Callable[[exp.Query, Context], tuple[exp.Query, str]]:
    return lambda tree, _: (tree, body(tree))


def _worded(body: Callable[[exp.Query, str], str]) -> Callable[[exp.Query, Context], tuple[exp.Query, str]]:
    return lambda tree, context: (tree, body(tree, context.question))


def _ranking_measure(tree: exp.Query, context: Context) -> tuple[exp.Query, str]:
    # A question that says what to show ("Give the doctor's name") is answered with that alone.
    if context.show_measure or not says_what_to_show(context.question):
        return tree, select_ranking_measure(tree)
    return tree, ""


def _with_catalog(
    body: Callable[[str, str, Catalog], Shaped | Mended],
) -> Callable[[str, Context], tuple[str, list[str]]]:
    def apply(query: str, context: Context) -> tuple[str, list[str]]:
        assert context.catalog is not None  # the driver runs a rule that reads it only with it
        done = body(query, context.question, context.catalog)
        return done.query, done.changes

    return apply


def _per_asked(query: str, question: str, catalog: Catalog) -> Shaped:
    if not asked_per(question):
        return Shaped(query, [])
    return group_per_asked(query, question, {t.name: t.columns for t in catalog.tables})


def _mistyped(scope: Scope, _: Context) -> list[str]:
    return reroute_mistyped_joins(scope.select, scope.sources)


def _crossed(scope: Scope, _: Context) -> list[str]:
    return reroute_crossed_keys(scope.select, scope.sources, scope.catalog, scope.defined, scope.tree)


R: Tier = "repair"
W: Tier = "wording"
Q: Reads = "question"
C: Reads = "catalog"
V: Reads = "values"

RULES = (
    Rule("drop_unasked_limit", "before_run", W, (Q,), "tree", _worded(drop_unasked_limit),
         "a LIMIT the question names no number or superlative for hides rows (the prompt's rules 7 and 8)"),
    Rule("divide_as_fractions", "before_run", R, (), "tree", _tree(divide_as_fractions),
         "a division of two integer columns is 0 in both stores: the dividend is cast to a fraction"),
    Rule("select_group_keys", "before_run", R, (), "tree", _tree(select_group_keys),
         "aggregates selected without their GROUP BY columns cannot be told apart: the keys are selected"),
    Rule("rows_not_extremes", "before_run", R, (), "tree", _tree(rows_not_extremes),
         "MIN/MAX of a column beside plain columns, ordered by that column, without GROUP BY: the column"),
    Rule("period_for_first_day", "before_run", W, (Q,), "tree", _worded(period_for_first_day),
         "an equality with the first day of the month or year the question names becomes that period"),
    Rule("select_ranking_measure", "before_run", W, (Q,), "tree", _ranking_measure,
         "a ranking's hidden measure is selected, unless the question says what to show"),
    Rule("reroute_mistyped_joins", "before_run", R, (C,), "select", _mistyped,
         "a join of a number with a text (PostgreSQL refuses it, SQLite pairs nothing) reads the text table's key"),
    Rule("reroute_crossed_keys", "before_run", R, (C,), "select", _crossed,
         "a join of two different tables' keys goes through the one dataset that links them",
         case="academic (keys of an initial + id)"),
    Rule("group_per_asked", "before_run", W, (Q, C), "text", _with_catalog(_per_asked),
         "an aggregate asked 'per X' without its groups is grouped by the column X names"),
    Rule("match_stored_values", "before_run", R, (C, V), "values", None,
         "a text literal no value of its column is, but one or several stored values match, is read as them"),
    Rule("filter_where_stored", "before_run", R, (C, V), "values", None,
         "a text its column never holds, stored by one column the query can reach: the filter reads that column"),
)  # fmt: skip
