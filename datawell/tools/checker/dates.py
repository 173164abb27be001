"""Dates by what the column holds (issue 27).

Date functions (strftime, julianday, date, EXTRACT, date_trunc, ...) take timestamps. A column
that holds years as integers (`year` = 2019), month names as text (`month` = 'March') or
other numbers or words is compared as it is stored. A query that passes such a column to a
date function is refused with a message that says what the column holds and how to compare
it, so the repair writes `year = 2019` instead of another strftime(). ISO dates kept as text
are left to the date functions (SQLite reads them)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping

from sqlglot import exp

from datawell.errors import SubError
from datawell.storage.hints import ColumnHint
from datawell.tools.catalog import TableInfo, unix_seconds
from datawell.tools.checker.allowed import SQLITE_FUNCTIONS

DATE_FUNCTIONS: tuple[type[exp.Expr], ...] = (
    exp.Extract,
    exp.TimestampTrunc,
    exp.DateTrunc,
    exp.Date,
    exp.TimeToStr,
)
MONTHS = [
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
    "jan",
    "feb",
    "mar",
    "apr",
    "jun",
    "jul",
    "aug",
    "sep",
    "sept",
    "oct",
    "nov",
    "dec",
]
ISO_DATE = re.compile(r"^\d{4}-\d{2}(-\d{2})?([ T]\d{2}:\d{2}(:\d{2})?)?")
YEARS = (1000, 2999)


def holds(kind: str, hint: ColumnHint | None, name: str, description: str = "") -> str:
    """What a column holds, for the date rules: "timestamp", "iso text", "unix seconds",
    "years", "month names", "numbers", "text" or "other"."""
    if kind == "timestamp":
        return "timestamp"
    if hint is not None and unix_seconds(name, description, hint):
        return "unix seconds"
    values = [str(v).strip().lower() for v in (hint.values if hint else [])]
    if kind == "text":
        if values and all(v in MONTHS for v in values):
            return "month names"
        if values and all(ISO_DATE.match(v) for v in values):
            return "iso text"
        return "text" if values else "other"  # no values known: the database decides
    if kind in ("integer", "real"):
        low, high = (hint.low, hint.high) if hint else (None, None)
        in_range = isinstance(low, int | float) and isinstance(high, int | float)
        if in_range and YEARS[0] <= low <= high <= YEARS[1]:  # type: ignore[operator]
            return "years"
        return "years" if "year" in name.lower() and not in_range else "numbers"
    return "other"


def column_holds(info: TableInfo, name: str) -> str:
    """What column `name` of `info` holds (`holds`, from its type, hints and description)."""
    return holds(info.columns.get(name, ""), info.hints.get(name), name, info.column_descriptions.get(name, ""))


def _example(held: str, name: str, hint: ColumnHint | None) -> str:
    if held == "years":
        year = hint.high if hint and hint.high is not None else 2024
        return f"{name} = {year}, {name} BETWEEN {year} - 4 AND {year}"
    if held == "unix seconds":
        return f"strftime('%Y-%m', to_timestamp({name}))"
    if held == "month names":
        stored = hint.values[0] if hint and hint.values else "March"
        return f"{name} = '{stored}'"
    return f"{name} = <a value as the catalog shows it>"


def _arguments(node: exp.Expr) -> Iterable[exp.Expr]:
    if isinstance(node, exp.Anonymous):
        name = node.name.lower()
        values = node.expressions[1:] if name == "strftime" else node.expressions
        return values
    return [v for v in node.iter_expressions() if not isinstance(v, exp.Literal | exp.Var)]


def date_columns(tree: exp.Expr) -> Iterator[tuple[exp.Expr, exp.Column]]:
    """Each column passed as it is (or in parentheses) to a date function, with the function."""
    for node in tree.walk():
        if isinstance(node, DATE_FUNCTIONS) or (
            isinstance(node, exp.Anonymous) and node.name.lower() in SQLITE_FUNCTIONS
        ):
            for argument in _arguments(node):
                column = argument.unnest() if isinstance(argument, exp.Paren) else argument
                if isinstance(column, exp.Column):
                    yield node, column


def _advice(held: str) -> str:
    return "make it a timestamp with to_timestamp()" if held == "unix seconds" else "compare it as stored"


def date_misuse(tree: exp.Expr, resolved: Mapping[int, tuple[TableInfo, str]]) -> list[SubError]:
    """A refusal for each column passed to a date function that holds no dates."""
    problems: dict[str, SubError] = {}
    for node, column in date_columns(tree):
        if id(column) not in resolved:
            continue
        info, name = resolved[id(column)]
        held = column_holds(info, name)
        if held in ("timestamp", "iso text", "other"):
            continue
        function = node.name.lower() if isinstance(node, exp.Anonymous) else node.key.upper()
        problems.setdefault(
            f"{info.name}.{name}",
            SubError(
                "not_a_date",
                f"{info.name}.{name} holds {held} ({info.columns.get(name)}), not dates: {function}() "
                f"cannot take it; {_advice(held)}, for example {_example(held, name, info.hints.get(name))}",
            ),
        )
    return list(problems.values())


# A value that is a point in time whatever the store: sqlglot's date and time nodes. Columns
# are judged by what they hold (`holds`), string literals by their spelling.
INSTANT_NODES: tuple[type[exp.Expr], ...] = (
    exp.CurrentDate,
    exp.CurrentTimestamp,
    exp.StrToTime,
    exp.StrToDate,
    exp.UnixToTime,
    exp.TimestampTrunc,
    exp.DateTrunc,
    exp.Date,
    exp.TsOrDsToTimestamp,
)
INSTANT_CASTS = {exp.DType.DATE, exp.DType.TIMESTAMP, exp.DType.TIMESTAMPTZ, exp.DType.DATETIME}


def _instant(node: exp.Expr, resolved: Mapping[int, tuple[TableInfo, str]]) -> bool:
    if isinstance(node, exp.Paren):
        return _instant(node.this, resolved)
    if id(node) in resolved:
        return column_holds(*resolved[id(node)]) in ("timestamp", "iso text")
    if isinstance(node, exp.Cast):
        return node.to.this in INSTANT_CASTS
    if isinstance(node, exp.Anonymous):
        return node.name.lower() in ("date", "datetime")
    return isinstance(node, INSTANT_NODES)


def _literal_date(node: exp.Expr) -> bool:
    return isinstance(node, exp.Literal) and node.is_string and bool(ISO_DATE.match(node.this))


def day_differences(tree: exp.Expr, resolved: Mapping[int, tuple[TableInfo, str]]) -> list[exp.Anonymous]:
    """Each `a - b` of two points in time (two date columns, or one and `current_date` or an
    ISO date literal), rewritten in place to `julianday(a) - julianday(b)`: the QL's
    difference of two dates is a number of days on every store. Left alone, SQLite subtracts
    the texts' leading years (`'2024-03-10' - '2024-03-01'` is 0) and PostgreSQL returns an
    interval. Returns the julianday() calls put in, for the store's adaptation
    (`dialects.sqlite_function_for`)."""
    found = []
    for node in list(tree.find_all(exp.Sub)):
        left, right = node.this, node.expression
        if not (_instant(left, resolved) or _instant(right, resolved)):
            continue
        if not all(_instant(side, resolved) or _literal_date(side) for side in (left, right)):
            continue
        days = [exp.Anonymous(this="JULIANDAY", expressions=[side]) for side in (left, right)]
        node.set("this", days[0])
        node.set("expression", days[1])
        found += days
    return found


PERIOD = re.compile(r"^(\d{4})(-\d{2})?(-\d{2})?$")
PERIOD_FORMATS = {1: "%Y", 2: "%Y-%m", 3: "%Y-%m-%d"}


def period_equalities(tree: exp.Expr, resolved: Mapping[int, tuple[TableInfo, str]]) -> list[exp.Anonymous]:
    """Each `x = '2024-03'` (or `'2024'`, `'2024-03-05'`) of a column that holds points in
    time, rewritten in place to compare the period it names: `strftime('%Y-%m', x) = '2024-03'`,
    `strftime('%Y-%m-%d', x) = '2024-03-05'`. A timestamp never equals a month, so as written the filter
    matched nothing, silently (the issue's "orders in March 2024" counted 0). Returns the
    date functions put in, for the store's adaptation (`dialects.sqlite_function_for`)."""
    found = []
    for node in list(tree.find_all(exp.EQ)):
        for column, literal in ((node.this, node.expression), (node.expression, node.this)):
            if not (isinstance(literal, exp.Literal) and literal.is_string and _instant(column, resolved)):
                continue
            if not isinstance(column.unnest(), exp.Column) or not (period := PERIOD.match(literal.this)):
                continue
            fmt = PERIOD_FORMATS[sum(1 for group in period.groups() if group)]
            function = exp.Anonymous(this="STRFTIME", expressions=[exp.Literal.string(fmt), column.copy()])
            column.replace(function)
            found.append(function)
            break
    return found
