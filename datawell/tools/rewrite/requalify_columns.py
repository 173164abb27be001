"""`requalify_columns`, an on-refusal rule: it runs on each SELECT of a query the checker
refused, with the datasets the SELECT reads (moved out of tools/mend.py as it was, issue 47).

**A column read through the wrong alias.** `t2.fare_basis_code` where `t2` lacks it, or
`p.unit_price_eur` where the query defines no `p`, and exactly one table of the same
SELECT has it, outside a join condition (there, moving the name would compare a table
with itself).
"""

from __future__ import annotations

from sqlglot import exp

from datawell.tools.rewrite.sql import Source, own_columns


def requalify_columns(select: exp.Select, sources: dict[str, Source], defined: set[str]) -> list[str]:
    """A column read through an alias whose table lacks it, or through an alias the query never
    defines (`p.unit_price_eur` with no `p`), when one table of the SELECT has it."""
    changes: list[str] = []
    for column in own_columns(select):
        qualifier = column.table.lower()
        mine = sources.get(qualifier)
        if not qualifier or column.find_ancestor(exp.Join) is not None:
            continue
        if (mine is None and qualifier in defined) or (mine is not None and mine.has(column.name)):
            continue
        others = [alias for alias, s in sources.items() if s.has(column.name)]
        if len(others) == 1:
            changes.append(f"{column.table}.{column.name} read as {others[0]}.{column.name}")
            column.set("table", exp.to_identifier(others[0]))
    return changes
