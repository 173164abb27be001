"""`period_for_first_day`, a before-run rule (moved out of tools/shape.py as it was, issue 47;
the months and years the question names are `lexicon.asked_periods`):

- **The first day for the month or year asked.** "Which invoices are due in April 2024?"
  written `due_date = '2024-04-01'` finds only what falls on the first. When the question
  names the month and year (or a year alone) and no day of it, an equality of something with
  that period's first day becomes the period: `due_date >= '2024-04-01' AND due_date <
  '2024-05-01'`, which ISO text and timestamps compare alike.
"""

from __future__ import annotations

import re

from sqlglot import exp

from datawell.tools.checker.allowed import DIALECTS, QL_DIALECT
from datawell.tools.rewrite.lexicon import asked_periods

_FIRST_DAY = re.compile(r"^(\d{4})-(\d{2})-01$")


def period_for_first_day(tree: exp.Query, question: str) -> str:
    periods = asked_periods(question)
    changed = []
    for node in list(tree.find_all(exp.EQ)) if periods else []:
        for this, literal in ((node.this, node.expression), (node.expression, node.this)):
            first = _FIRST_DAY.match(literal.this) if isinstance(literal, exp.Literal) and literal.is_string else None
            if first is None or not isinstance(this.unnest(), exp.Column) or literal.this in question:
                continue
            year, month = int(first[1]), int(first[2])
            if f"{year}-{month:02d}" in periods:
                end = f"{year + month // 12}-{month % 12 + 1:02d}-01"
            elif month == 1 and str(year) in periods:
                end = f"{year + 1}-01-01"
            else:
                continue
            start = literal.this
            node.replace(
                exp.paren(exp.and_(this.copy() >= exp.Literal.string(start), this.copy() < exp.Literal.string(end)))
            )
            changed.append(f"{this.sql(dialect=DIALECTS[QL_DIALECT])} from {start} to before {end}")
            break
    return f"compared the period asked, not its first day: {'; '.join(changed)}" if changed else ""
