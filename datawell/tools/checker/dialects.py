"""Dialect adaptation: PostgreSQL spellings SQLite lacks, and the SQLite ones the QL accepts."""

from __future__ import annotations

from sqlglot import exp

from datawell.tools.checker.allowed import (
    ARRAY_AGG_FUNCTION,
    CAPPED_FUNCTION,
    INITCAP_FUNCTION,
    LPAD_FUNCTION,
    REVERSE_FUNCTION,
    RPAD_FUNCTION,
    STRING_AGG_FUNCTION,
    STRPTIME_FUNCTION,
)

_EXTRACT_FORMATS = {
    "YEAR": "%Y", "MONTH": "%m", "DAY": "%d", "HOUR": "%H", "MINUTE": "%M", "SECOND": "%S",
    "DOW": "%w", "DOY": "%j", "EPOCH": "%s", "WEEK": "%W",
}  # fmt: skip
_TRUNC_FORMATS = {
    "YEAR": "%Y-01-01 00:00:00", "MONTH": "%Y-%m-01 00:00:00", "DAY": "%Y-%m-%d 00:00:00",
    "HOUR": "%Y-%m-%d %H:00:00", "MINUTE": "%Y-%m-%d %H:%M:00", "SECOND": "%Y-%m-%d %H:%M:%S",
}  # fmt: skip
# random() is a 64-bit integer on SQLite: its low 53 bits over 2**53 are a float in [0, 1) like
# PostgreSQL's, every value exact in a double.
_RANDOM_BITS = 2**53
_INTERVAL_UNITS = {
    "YEAR": "years", "MONTH": "months", "DAY": "days", "HOUR": "hours", "MINUTE": "minutes", "SECOND": "seconds",
}  # fmt: skip


def _strftime(fmt: str, value: exp.Expr, *modifiers: str) -> exp.Expr:
    return exp.Anonymous(
        this="STRFTIME", expressions=[exp.Literal.string(fmt), value, *(exp.Literal.string(m) for m in modifiers)]
    )


def _unit(node: exp.Expr) -> str:
    unit = node.args.get("unit") if not isinstance(node, exp.Extract) else node.this
    name = unit.name.upper() if unit is not None else ""
    return name[:-1] if name.endswith("S") and name[:-1] in _INTERVAL_UNITS else name


def _sqlite_interval(interval: exp.Interval, sign: str) -> str | None:
    amount, unit = interval.this, _unit(interval)
    if not isinstance(amount, exp.Literal):
        return None
    words = amount.this.split()
    if not unit and len(words) == 2:
        amount_text, unit = words[0], words[1].upper().rstrip("S")
    elif unit and len(words) == 1:
        amount_text = words[0]
    else:
        return None
    if unit == "WEEK":
        unit, amount_text = "DAY", str(7 * float(amount_text)).removesuffix(".0")
    if unit not in _INTERVAL_UNITS:
        return None
    return f"{sign}{amount_text} {_INTERVAL_UNITS[unit]}"


def sqlite_function_for(node: exp.Anonymous, target: str) -> exp.Expr:
    """strftime() and julianday() as sqlglot's own nodes, which it writes for every store."""
    if node.name.lower() == "strftime":
        fmt, value = node.expressions
        return exp.TimeToStr(this=exp.TsOrDsToTimestamp(this=value), format=fmt)
    [value] = node.expressions
    if target == "sqlite":
        return node
    # Julian day number: days since noon UTC, 24 November 4714 BC; the Unix epoch is 2440587.5.
    epoch = exp.Extract(this=exp.Var(this="EPOCH"), expression=exp.cast(value, "TIMESTAMPTZ", copy=False))
    days = exp.Div(this=epoch, expression=exp.Literal.number("86400.0"))
    return exp.Paren(this=exp.Add(this=days, expression=exp.Literal.number("2440587.5")))


def _to_sqlite(node: exp.Expr) -> exp.Expr:
    if isinstance(node, exp.Anonymous):
        return sqlite_function_for(node, "sqlite")
    if isinstance(node, exp.Extract) and _unit(node) in _EXTRACT_FORMATS:
        return exp.cast(_strftime(_EXTRACT_FORMATS[_unit(node)], node.expression), "INTEGER", copy=False)
    if isinstance(node, exp.Extract) and _unit(node) == "QUARTER":
        month = exp.cast(_strftime("%m", node.expression), "INTEGER", copy=False)
        return exp.Paren(
            this=exp.Div(
                this=exp.Paren(this=exp.Add(this=month, expression=exp.Literal.number(2))),
                expression=exp.Literal.number(3),
            )
        )
    if isinstance(node, exp.TimestampTrunc | exp.DateTrunc):
        if _unit(node) == "WEEK":
            return _strftime("%Y-%m-%d 00:00:00", node.this, "weekday 0", "-6 days")
        if _unit(node) in _TRUNC_FORMATS:
            return _strftime(_TRUNC_FORMATS[_unit(node)], node.this)
    if isinstance(node, exp.StrToDate | exp.StrToTime):  # SQLite has no strptime: the connection's own
        kind = "date" if isinstance(node, exp.StrToDate) else "timestamp"
        fmt = node.args.get("format") or exp.Literal.string("%Y-%m-%d")
        return exp.Anonymous(this=STRPTIME_FUNCTION, expressions=[node.this, fmt, exp.Literal.string(kind)])
    if isinstance(node, exp.UnixToTime):  # to_timestamp(seconds since 1970)
        return exp.Anonymous(this="DATETIME", expressions=[node.this, exp.Literal.string("unixepoch")])
    if isinstance(node, exp.Left):
        return exp.Substring(this=node.this, start=exp.Literal.number(1), length=node.expression)
    if isinstance(node, exp.Right):
        return exp.Substring(this=node.this, start=exp.Neg(this=exp.Paren(this=node.expression)))
    if isinstance(node, exp.ConcatWs):  # a Concat too, but its first value is the separator
        return _sqlite_concat_ws(node)
    if isinstance(node, exp.Concat):  # PostgreSQL's concat() treats NULL as ''
        parts = [
            exp.Coalesce(this=exp.cast(e, "TEXT", copy=False), expressions=[exp.Literal.string("")])
            for e in node.expressions
        ]
        joined: exp.Expr = parts[0]
        for part in parts[1:]:
            joined = exp.DPipe(this=joined, expression=part)
        return exp.Paren(this=joined)
    if isinstance(node, exp.Rand):
        bits = exp.BitwiseAnd(this=exp.Rand(), expression=exp.Literal.number(_RANDOM_BITS - 1))
        return exp.Paren(this=exp.Div(this=exp.Paren(this=bits), expression=exp.Literal.number(f"{_RANDOM_BITS}.0")))
    if isinstance(node, exp.Initcap):
        return exp.Anonymous(this=INITCAP_FUNCTION, expressions=[node.this])
    if isinstance(node, exp.Reverse):
        return exp.Anonymous(this=REVERSE_FUNCTION, expressions=[node.this])
    if isinstance(node, exp.Pad):
        fill = node.args.get("fill_pattern") or exp.Literal.string(" ")
        name = LPAD_FUNCTION if node.args.get("is_left") else RPAD_FUNCTION
        return exp.Anonymous(this=name, expressions=[node.this, node.expression, fill])
    if isinstance(node, exp.EQ | exp.NEQ) and isinstance(node.expression, exp.Any | exp.All):
        return _sqlite_in(node)
    if isinstance(node, exp.Add | exp.Sub) and isinstance(node.expression, exp.Interval):
        modifier = _sqlite_interval(node.expression, "+" if isinstance(node, exp.Add) else "-")
        if modifier is not None:
            return exp.Anonymous(this="DATETIME", expressions=[node.this, exp.Literal.string(modifier)])
    return node


def _sqlite_concat_ws(node: exp.ConcatWs) -> exp.Expr:
    """Each value that is not NULL with the separator before it, joined, minus the first
    separator: PostgreSQL's concat_ws(), which skips NULLs (SQLite 3.44 has its own)."""
    separator, *values = node.expressions
    joined: exp.Expr = exp.Literal.string("")
    for value in values:
        piece = exp.DPipe(this=separator.copy(), expression=exp.cast(value, "TEXT", copy=False))
        joined = exp.DPipe(this=joined, expression=exp.Coalesce(this=piece, expressions=[exp.Literal.string("")]))
    # A NULL separator makes the start NULL, and so the result, as in PostgreSQL.
    start = exp.Add(this=exp.Length(this=separator), expression=exp.Literal.number(1))
    return exp.Substring(this=exp.Paren(this=joined), start=start)


def _sqlite_in(node: exp.EQ | exp.NEQ) -> exp.Expr:
    """`x = ANY (subquery)` is `x IN (subquery)` and `x <> ALL (subquery)` is `x NOT IN
    (subquery)`, NULLs included; SQLite has only the latter. Other comparisons stay as they
    are and SQLite refuses them."""
    quantified = node.expression
    query = quantified.this
    if isinstance(query, exp.Select):
        query = exp.Subquery(this=query)
    if not isinstance(query, exp.Subquery) or isinstance(node, exp.EQ) != isinstance(quantified, exp.Any):
        return node
    contained = exp.In(this=node.this, query=query)
    return contained if isinstance(node, exp.EQ) else exp.Not(this=exp.Paren(this=contained))


def _to_postgres(node: exp.Expr) -> exp.Expr:
    if isinstance(node, exp.Anonymous):
        return sqlite_function_for(node, "postgres")
    # round(double precision, int) and log(double precision, double precision) do not exist in
    # PostgreSQL; round(numeric, int) and log(numeric, numeric) do.
    if isinstance(node, exp.Round) and node.args.get("decimals") is not None:
        node.set("this", exp.cast(node.this, "NUMERIC", copy=False))
    if isinstance(node, exp.Log) and node.args.get("expression") is not None:
        node.set("this", exp.cast(node.this, "NUMERIC", copy=False))
        node.set("expression", exp.cast(node.expression, "NUMERIC", copy=False))
    return node


def adapt(nodes: list[exp.Expr], target: str) -> None:
    adapt = _to_sqlite if target == "sqlite" else _to_postgres
    for node in nodes:  # innermost first, so an outer rewrite carries the adapted inner one
        adapted = adapt(node)
        if adapted is not node:
            node.replace(adapted)


# Expressions whose value can be longer than any of their arguments: inside a recursive CTE
# each pass can double it (`s || s`), and an aggregate grows with every row.
_GROWING = (exp.DPipe, exp.Concat, exp.ConcatWs, exp.Replace)


def cap_growing_values(tree: exp.Query) -> None:
    """PostgreSQL: every value a query builds passes through a function that refuses one
    longer than the row size, where SQLite's length limit already does (issue 51: one
    `s || s` reached 1.5 GB in one backend, one `string_agg` 966 MB). string_agg and
    array_agg become aggregates that check their state as it grows."""
    for node in list(tree.find_all(*_GROWING)):
        node.replace(exp.Anonymous(this=CAPPED_FUNCTION, expressions=[node.copy()]))
    for aggregate in list(tree.find_all(exp.GroupConcat)):
        value, separator = aggregate.this, aggregate.args.get("separator") or exp.Literal.string(",")
        if isinstance(value, exp.Order):  # string_agg(x, sep ORDER BY y): the order follows the last argument
            arguments = [value.this, exp.Order(this=separator, expressions=value.expressions)]
        else:
            arguments = [value, separator]
        aggregate.replace(exp.Anonymous(this=STRING_AGG_FUNCTION, expressions=arguments))
    for array in list(tree.find_all(exp.ArrayAgg)):
        array.replace(exp.Anonymous(this=ARRAY_AGG_FUNCTION, expressions=[array.this]))
