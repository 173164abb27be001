"""`group_union_per_value`, a before-run rule of the query alone (moved out of tools/shape.py
as it was, issue 47); the first of them, as the others read the one SELECT it makes.

**One query per value, united.** "How many course offerings have a final exam and how many
do not?" written as two `SELECT COUNT(*) ... WHERE has_final_exam = TRUE/FALSE` joined by
UNION gives two numbers nobody can tell apart. A UNION of the same aggregates of one table,
each under a WHERE of one column equal to another value, is one query grouped by that
column, which is selected in front: `SELECT has_final_exam, COUNT(*) ... WHERE
has_final_exam IN (TRUE, FALSE) GROUP BY has_final_exam`.
"""

from __future__ import annotations

from sqlglot import exp

from datawell.tools.checker.allowed import DIALECTS, QL_DIALECT


def group_union_per_value(tree: exp.Query) -> tuple[exp.Query, str]:
    """A UNION of the same aggregates of one table, each under a WHERE of one column equal to
    another value, as one query grouped by that column (which says which row is which)."""
    if not isinstance(tree, exp.Union):
        return tree, ""
    parts: list[exp.Expr] = []
    stack: list[exp.Expr] = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, exp.Union) and not node.args.get("order") and not node.args.get("limit"):
            stack += [node.expression, node.this]
        else:
            parts.append(node)
    shapes, values = set(), []
    for part in parts:
        where = part.args.get("where") if isinstance(part, exp.Select) else None
        condition = where.this if where is not None else None
        if (
            not isinstance(part, exp.Select)
            or not isinstance(condition, exp.EQ)
            or not isinstance(condition.this, exp.Column)
            or not isinstance(condition.expression, (exp.Literal, exp.Boolean))
            or any(part.args.get(a) for a in ("joins", "group", "having", "order", "limit", "distinct"))
            or not all(e.find(exp.AggFunc) for e in part.expressions)
        ):
            return tree, ""
        table = part.args["from_"].this
        listed = tuple(e.sql() for e in part.expressions)
        shapes.add((table.sql(), condition.this.sql().lower(), listed))
        values.append(condition.expression)
    if len(shapes) != 1 or len({v.sql() for v in values}) != len(values):
        return tree, ""
    first = parts[0]
    assert isinstance(first, exp.Select)
    column = first.args["where"].this.this
    grouped = (
        exp.select(column.copy(), *(e.copy() for e in first.expressions))
        .from_(first.args["from_"].this.copy())
        .where(exp.In(this=column.copy(), expressions=[v.copy() for v in values]))
        .group_by(column.copy())
    )
    said = column.sql(dialect=DIALECTS[QL_DIALECT])
    return grouped, f"one row per {said}, grouped: the union counted each value of it apart"
