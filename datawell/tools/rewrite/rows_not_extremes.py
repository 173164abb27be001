"""`rows_not_extremes`, a before-run rule of the query alone (moved out of tools/shape.py as it
was, issue 47).

**Rows ordered by a column, its extreme selected.** "Which airports have the shortest
minimum connect time, sorted in ascending order?" written `SELECT airport_name,
MIN(minimum_connect_time) FROM airport ORDER BY minimum_connect_time LIMIT 10`: with no
GROUP BY, SQLite returns one row (PostgreSQL refuses it), yet ordering by the bare column
asks for rows. When the outermost query has no GROUP BY, selects a MIN or MAX of a column
beside other columns, and orders by that column itself, the MIN or MAX is the column.
"""

from __future__ import annotations

from sqlglot import exp

from datawell.tools.checker.allowed import DIALECTS, QL_DIALECT


def rows_not_extremes(tree: exp.Query) -> str:
    order = tree.args.get("order")
    if not isinstance(tree, exp.Select) or tree.args.get("group") is not None or order is None:
        return ""
    ordered_by = {o.this.sql().lower() for o in order.expressions if isinstance(o.this, exp.Column)}
    selected = [e.unalias() for e in tree.expressions]
    if not any(isinstance(e, exp.Column) for e in selected):
        return ""  # aggregates alone: one row is what was asked
    extremes = [
        e
        for e in selected
        if isinstance(e, (exp.Min, exp.Max)) and isinstance(e.this, exp.Column) and e.this.sql().lower() in ordered_by
    ]
    if not extremes or any(e.find(exp.AggFunc) and e not in extremes for e in selected):
        return ""
    for extreme in extremes:
        extreme.replace(extreme.this.copy())
    return (
        "read "
        + ", ".join(e.sql(dialect=DIALECTS[QL_DIALECT]) for e in extremes)
        + " as the rows' column: the query orders rows by it"
    )
