"""PostgreSQL functions SQLite lacks, as Python functions of the query connections.

Each gives NULL for a NULL argument, as PostgreSQL's do. None builds more than one character
past the connection's string length limit: SQLite then refuses the result itself ("string or
blob too big", a size_limit), so `lpad(x, 1000000000)` never holds more than that in memory."""

from __future__ import annotations

import sqlite3
from datetime import datetime
from functools import partial
from typing import Any

from datawell.tools.checker.allowed import (
    INITCAP_FUNCTION,
    LPAD_FUNCTION,
    REVERSE_FUNCTION,
    RPAD_FUNCTION,
    STRPTIME_FUNCTION,
)

NAMES = frozenset({STRPTIME_FUNCTION, INITCAP_FUNCTION, LPAD_FUNCTION, RPAD_FUNCTION, REVERSE_FUNCTION})


def register(connection: sqlite3.Connection, max_length: int) -> None:
    """Define every function of `NAMES` on `connection`, whose SQLITE_LIMIT_LENGTH is `max_length`."""
    connection.create_function(STRPTIME_FUNCTION, 3, _strptime, deterministic=True)
    connection.create_function(INITCAP_FUNCTION, 1, _initcap, deterministic=True)
    connection.create_function(REVERSE_FUNCTION, 1, _reverse, deterministic=True)
    for name, left in ((LPAD_FUNCTION, True), (RPAD_FUNCTION, False)):
        pad = partial(_pad, left=left, most=max_length + 1)
        connection.create_function(name, 3, pad, deterministic=True)


def _text(value: Any) -> str:
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return value if isinstance(value, str) else str(value)


def _strptime(value: Any, fmt: Any, kind: str) -> str | None:
    """to_date/to_timestamp, with the format already in strptime form; NULL when it does not parse."""
    if value is None or fmt is None:
        return None
    try:
        parsed = datetime.strptime(str(value), str(fmt))
    except ValueError:
        return None
    return parsed.date().isoformat() if kind == "date" else parsed.isoformat(" ")


def _initcap(value: Any) -> str | None:
    """Each word's first letter upper case, the rest lower; words are runs of letters and digits."""
    if value is None:
        return None
    out = []
    in_word = False
    for char in _text(value):
        out.append(char.lower() if in_word else char.upper())
        in_word = char.isalnum()
    return "".join(out)


def _reverse(value: Any) -> str | None:
    return None if value is None else _text(value)[::-1]


def _pad(value: Any, length: Any, fill: Any, *, left: bool, most: int) -> str | None:
    """lpad/rpad: `value` filled to `length` characters with `fill` repeated, or cut to `length`
    (on the right, for both) when longer; unchanged but cut when `fill` is empty."""
    if value is None or length is None or fill is None:
        return None
    text, filler, size = _text(value), _text(fill), min(int(length), most)
    if size <= 0:
        return ""
    if len(text) >= size or not filler:
        return text[:size]
    padding = (filler * ((size - len(text)) // len(filler) + 1))[: size - len(text)]
    return padding + text if left else text + padding
