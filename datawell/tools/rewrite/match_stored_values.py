"""`match_stored_values`, a before-run rule that looks values up: tools/literals.match_literals
finds a filter's stored values (from the column's hints, or a bounded lookup as the caller) and
calls it (moved out of tools/literals.py as it was, issue 47).

**A text literal no value of its column is.** `venue = 'IEEE Transactions'` where the
column holds `IEEE Transactions on Pattern Analysis`, or `state = 'Ontario'` where it holds
`ontario`: the query runs and finds nothing. The literal is matched against the column's
values, case-insensitively first, then by containment:

- one stored value matches: the literal becomes that value (`state = 'ontario'`);
- several match: the comparison becomes a case-insensitive pattern
  (`LOWER(venue) LIKE '%ieee transactions%'`);
- none match: left to `filter_where_stored`.
"""

from __future__ import annotations

from sqlglot import exp

from datawell.tools.rewrite.sql import TextFilter


def match_stored_values(found: TextFilter, literal: str, values: list[str]) -> str:
    """Rewrite the comparison in place; what changed, or "" when nothing did."""
    if literal in values:
        return ""
    lowered = literal.lower()
    same = [v for v in values if v.lower() == lowered]
    containing = [v for v in values if lowered in v.lower()]
    name = f"{found.table.name}.{found.column.name}"
    chosen = same if same else containing
    if len(chosen) == 1:
        found.literal.replace(exp.Literal.string(chosen[0]))
        return f"{name}: {literal!r} is stored as {chosen[0]!r}"
    if not chosen:
        return ""
    pattern = f"%{lowered}%" if not same else lowered
    column = found.column.copy()
    lower = exp.Lower(this=column)
    replacement: exp.Expr = (
        exp.EQ(this=lower, expression=exp.Literal.string(pattern))
        if same
        else exp.Like(this=lower, expression=exp.Literal.string(pattern))
    )
    found.comparison.replace(replacement)
    return f"{name}: {literal!r} matches {len(chosen)} stored values, compared ignoring case"
