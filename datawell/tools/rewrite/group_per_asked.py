"""`group_per_asked`, a before-run rule of the query, the question and the catalog, applied to
the query's text (moved out of tools/shape.py as it was, issue 47).

**An aggregate asked "per X" without its groups.** "What are the average payment terms of
our suppliers per country?" written `SELECT AVG(payment_terms_days) FROM suppliers` gives
one number for all countries. When the question asks per (or for each, in each, within
each, across different: `lexicon.asked_per`) a name that is one column of the query's
tables (of its one or two words, the joined pair, then either word: "course ID" is
`course_id`; else the key of the name: "for each fare" is `fare_id`), or of two tables the
query joins on it, and the outermost query selects only aggregates and has no GROUP BY, it
is grouped by that column, which is selected in front. A time unit after "per" is left
alone ("per day" asks for one average of daily values as often as for a row a day).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import sqlglot
from sqlglot import exp

from datawell.tools.checker.allowed import DIALECTS, QL_DIALECT
from datawell.tools.coverage import singular
from datawell.tools.rewrite.change import Shaped
from datawell.tools.rewrite.lexicon import asked_per


def group_per_asked(query: str, question: str, columns: Mapping[str, Iterable[str]]) -> Shaped:
    """`query` grouped by the column the question asks per (see the module); `columns`: each
    table's column names, by the name a query gives the table."""
    names = asked_per(question)
    try:
        tree = sqlglot.parse_one(query, read=DIALECTS[QL_DIALECT])
    except sqlglot.errors.SqlglotError:
        return Shaped(query, [])
    if not names or not isinstance(tree, exp.Select) or tree.args.get("group") is not None:
        return Shaped(query, [])
    if any(not e.unalias().find(exp.AggFunc) or e.find(exp.Window) for e in tree.expressions):
        return Shaped(query, [])
    tables = [t for t in tree.find_all(exp.Table) if t.find_ancestor(exp.Select) is tree]
    found, word = _columns_named(names, tables, columns)
    if not found or (len(found) > 1 and not _joined_on(tree, found)):
        return Shaped(query, [])  # none, or several tables have it: the question does not say which
    alias, column = found[0]
    key = exp.column(column, table=alias if len(list(tree.find_all(exp.Table))) > 1 else None)
    tree.set("expressions", [key.copy(), *tree.expressions])
    tree.set("group", exp.Group(expressions=[key]))
    shown = key.sql(dialect=DIALECTS[QL_DIALECT])
    return Shaped(
        tree.sql(dialect=DIALECTS[QL_DIALECT]), [f"grouped by {shown}: the question asks per {singular(word)}"]
    )


def _columns_named(
    names: list[str], tables: list[exp.Table], columns: Mapping[str, Iterable[str]]
) -> tuple[list[tuple[str, str]], str]:
    """The (alias, column)s of these tables named as the first of `names` that any is (or its
    singular), else as the key of the first that has one ("for each fare" of a table with
    `fare_id` asks a row a fare), with that name."""
    for keys in (False, True):
        for word in names:
            forms = {f"{singular(word)}_id", f"{singular(word)}_code"} if keys else {word, singular(word)}
            found = [(t.alias_or_name, c) for t in tables for c in columns.get(t.name, ()) if c.lower() in forms]
            if found:
                return found, word
    return [], ""


def _joined_on(tree: exp.Select, columns: list[tuple[str, str]]) -> bool:
    """Whether the join conditions equate every one of these (alias, column)s with another, so
    that each holds the same value on a row (`ON o.customer = p.customer`)."""
    equal: set[frozenset[tuple[str, str]]] = set()
    for join in tree.args.get("joins") or []:
        for eq in join.find_all(exp.EQ):
            if isinstance(eq.left, exp.Column) and isinstance(eq.right, exp.Column):
                sides = [(c.table.lower(), c.name.lower()) for c in (eq.left, eq.right)]
                equal.add(frozenset(sides))
    named = [(a.lower(), c.lower()) for a, c in columns]
    return all(any(frozenset((one, other)) in equal for other in named if other != one) for one in named)
