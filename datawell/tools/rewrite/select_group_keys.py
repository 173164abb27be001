"""`select_group_keys`, a before-run rule of the query alone (moved out of tools/shape.py as it
was, issue 47).

**Groups without their names.** `SELECT AVG(cost) FROM fare GROUP BY from_airport,
to_airport` returns averages nobody can tell apart. When the outermost query selects only
aggregates, its GROUP BY columns are selected, in front.
"""

from __future__ import annotations

from sqlglot import exp

from datawell.tools.checker.allowed import DIALECTS, QL_DIALECT


def select_group_keys(tree: exp.Query) -> str:
    if not isinstance(tree, exp.Select) or tree.args.get("group") is None:
        return ""
    selected = tree.expressions
    if any(not e.unalias().find(exp.AggFunc) for e in selected):
        return ""  # something beside the aggregates names the groups already
    names = {e.alias_or_name.lower() for e in selected}  # an aggregate may carry a key's name
    missing = [
        key for key in tree.args["group"].expressions if isinstance(key, exp.Column) and key.name.lower() not in names
    ]
    if not missing:
        return ""
    tree.set("expressions", [key.copy() for key in missing] + list(selected))
    return "selected the grouped columns " + ", ".join(key.sql(dialect=DIALECTS[QL_DIALECT]) for key in missing)
