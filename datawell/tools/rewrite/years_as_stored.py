"""`years_as_stored`, an on-refusal rule: it runs on each SELECT of a query the checker
refused, with the datasets the SELECT reads (moved out of tools/mend.py as it was, issue 47).

**The year of a column of years.** `strftime('%Y', year)` or `EXTRACT(YEAR FROM year)` of
an integer column that holds years (tools/checker/dates.py): the column itself.
"""

from __future__ import annotations

from sqlglot import exp

from datawell.tools.checker.allowed import QL_DIALECT
from datawell.tools.checker.dates import column_holds, date_columns
from datawell.tools.rewrite.sql import Source, holder_of, spelling


def years_as_stored(select: exp.Select, sources: dict[str, Source]) -> list[str]:
    """`strftime('%Y', year)` or `EXTRACT(YEAR FROM year)` of a column that holds years as
    integers: the year is the column as stored."""
    changes: list[str] = []
    for function, column in list(date_columns(select)):  # listed first: the loop replaces what it walks
        if column.find_ancestor(exp.Select) is not select or not _takes_the_year(function):
            continue
        holder = holder_of(column, sources)
        if holder is None or column_holds(holder.info, spelling(holder.info, column.name)) != "years":
            continue
        said = function.sql(dialect=QL_DIALECT)
        function.replace(column.copy())
        changes.append(f"{column.sql(dialect=QL_DIALECT)} holds years: {said} read as the column")
    return changes


def _takes_the_year(function: exp.Expr) -> bool:
    if isinstance(function, exp.Extract):
        return function.name.upper() == "YEAR"
    if isinstance(function, exp.Anonymous) and function.name.lower() == "strftime":
        form = function.expressions[0] if function.expressions else None
        return isinstance(form, exp.Literal) and form.this == "%Y" and len(function.expressions) == 2
    return False
