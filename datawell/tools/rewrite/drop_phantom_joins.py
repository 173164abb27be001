"""`drop_phantom_joins`, an on-refusal rule: it runs on each SELECT of a query the checker
refused, with the datasets the SELECT reads (moved out of tools/mend.py as it was, issue 47).

**A table that is no dataset, joined for columns another table has.** `FROM publication AS
p JOIN reference AS r ON p.pid = r.pid ORDER BY r.reference_num`, where no dataset is
named `reference` and `publication` has `reference_num` (and `pid`): the join goes and
`r.reference_num` is read as `p.reference_num`.
"""

from __future__ import annotations

from sqlglot import exp

from datawell.tools.catalog import Catalog
from datawell.tools.rewrite.sql import Source, own_columns


def drop_phantom_joins(select: exp.Select, sources: dict[str, Source], catalog: Catalog, tree: exp.Expr) -> list[str]:
    """A join of a table no dataset is named, on a column it shares by name with a table of
    the SELECT that also has every other column read through it: the join is dropped and
    those columns are read from that table."""
    changes: list[str] = []
    known = {t.name.lower() for t in catalog.tables} | {c.alias_or_name.lower() for c in tree.find_all(exp.CTE)}
    for join in list(select.args.get("joins") or []):
        node, condition = join.this, join.args.get("on")
        if (
            not isinstance(node, exp.Table)
            or node.db
            or node.name.lower() in known
            or not isinstance(condition, exp.EQ)
        ):
            continue
        alias = node.alias_or_name.lower()
        sides = [c for c in (condition.left, condition.right) if isinstance(c, exp.Column)]
        if len(sides) != 2 or sides[0].name.lower() != sides[1].name.lower():
            continue
        other = next((c.table for c in sides if c.table.lower() != alias), "")
        holder = sources.get(other.lower())
        read = [c for c in own_columns(select) if c.table.lower() == alias and c.find_ancestor(exp.Join) is not join]
        if holder is None or not all(holder.has(c.name) for c in read):
            continue
        for column in read:
            column.set("table", exp.to_identifier(other))
        join.pop()
        changes.append(
            f"no dataset is named {node.name}: its {', '.join(dict.fromkeys(c.name for c in read)) or 'join'} "
            f"read from {holder.info.name}"
        )
    return changes
