"""`period_for_first_day`, a before-run rule (moved out of tools/shape.py as it was, issue 47):

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
from datawell.tools.checker.dates import MONTHS as DATE_WORDS

MONTHS = DATE_WORDS[:12]  # january ... december
_MONTH = "|".join(MONTHS)
_DAY = r"\d{1,2}(?:st|nd|rd|th)?"
# A month and its year, with the day before ("1 April 2024") or after ("April 1, 2024") if one is named.
_DATE = re.compile(rf"(?:\b({_DAY})\s+(?:of\s+)?)?\b({_MONTH})\s+(?:({_DAY}),?\s+)?(?:of\s+)?(\d{{4}})\b")
_YEAR = re.compile(r"(?<![-/\d])\b([12]\d{3})\b(?![-/]\d)")
_FIRST_DAY = re.compile(r"^(\d{4})-(\d{2})-01$")


def asked_periods(question: str) -> set[str]:
    """The months ("April 2024": '2024-04') and years ('2024') the question names with no day
    of them ("1 April 2024", "April 1, 2024" and "2024-04-01" name a day)."""
    text = question.lower()
    dates = _DATE.findall(text)
    periods = {f"{year}-{MONTHS.index(month) + 1:02d}" for before, month, after, year in dates if not before + after}
    with_month = {year for *_, year in dates}
    return periods | {year for year in _YEAR.findall(text) if year not in with_month}


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
