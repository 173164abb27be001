"""`epoch_to_timestamps`, an on-refusal rule: it runs on each SELECT of a query the checker
refused, with the datasets the SELECT reads (moved out of tools/mend.py as it was, issue 47).

**Unix seconds in a date function.** `strftime('%m', departure_time)` of a column that
holds Unix seconds (tools/catalog.py): the column is read as `to_timestamp(departure_time)`.
"""

from __future__ import annotations

from sqlglot import exp

from datawell.tools.catalog import TableInfo, unix_seconds
from datawell.tools.checker.allowed import QL_DIALECT
from datawell.tools.checker.dates import date_columns
from datawell.tools.rewrite.sql import Source, holder_of, spelling


def epoch_to_timestamps(select: exp.Select, sources: dict[str, Source]) -> list[str]:
    changes: list[str] = []
    for _, column in list(date_columns(select)):  # listed first: the loop replaces what it walks
        if column.find_ancestor(exp.Select) is not select:
            continue
        holder = holder_of(column, sources)
        if holder is None or not _holds_seconds(holder.info, column.name):
            continue
        column.replace(exp.UnixToTime(this=column.copy()))
        changes.append(f"{column.sql(dialect=QL_DIALECT)} holds Unix seconds: read as to_timestamp()")
    return changes


def _holds_seconds(info: TableInfo, name: str) -> bool:
    exact = spelling(info, name)
    hint = info.hints.get(exact)
    return hint is not None and unix_seconds(exact, info.column_descriptions.get(exact, ""), hint)
