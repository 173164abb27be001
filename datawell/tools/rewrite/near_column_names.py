"""`near_column_names`, an on-refusal rule: it runs on each SELECT of a query the checker
refused, with the datasets the SELECT reads (moved out of tools/mend.py as it was, issue 47).

**A column name one letter or two off.** `student.declared_major` where `student` has
`declare_major` and no other column as close (difflib's ratio at least 0.85), and no table
of the SELECT has `declared_major`: the column is read by its name.
"""

from __future__ import annotations

import difflib

from sqlglot import exp

from datawell.tools.rewrite.sql import Source, unknown_columns


def near_column_names(select: exp.Select, sources: dict[str, Source]) -> list[str]:
    """A column no table of the SELECT has, read through a table (its qualifier's, or the only
    one) with exactly one column named nearly the same: read by that name."""
    changes: list[str] = []
    for column, owner in unknown_columns(select, sources):
        close = difflib.get_close_matches(column.name.lower(), [c.lower() for c in owner.info.columns], 2, 0.85)
        if len(close) != 1:
            continue
        right = next(c for c in owner.info.columns if c.lower() == close[0])
        changes.append(f"{owner.info.name} has no {column.name}: read {right}")
        column.set("this", exp.to_identifier(right))
    return changes
