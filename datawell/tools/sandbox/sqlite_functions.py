"""PostgreSQL functions SQLite lacks, as Python functions of the query connections.

Each gives NULL for a NULL argument, as PostgreSQL's do. None builds more than one character
past the connection's string length limit: SQLite then refuses the result itself ("string or
blob too big", a size_limit), so `lpad(x, 1000000000)` never holds more than that in memory.

`instr`, `replace` and two-argument `trim`/`ltrim`/`rtrim` replace SQLite's own, which take
time proportional to the product of their arguments' lengths (`instr` of a megabyte string and a
half-megabyte one runs for minutes, in one virtual-machine step that nothing interrupts);
Python's string search is linear."""

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
    connection.create_function("instr", 2, _instr, deterministic=True)
    connection.create_function("replace", 3, partial(_replace, most=max_length + 1), deterministic=True)
    for name, ends in (("trim", "both"), ("ltrim", "left"), ("rtrim", "right")):
        connection.create_function(name, 2, partial(_trim, ends=ends), deterministic=True)


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


def _instr(value: Any, sought: Any) -> int | None:
    """1 + the character offset of `sought` in `value`, or 0 when it is not there."""
    if value is None or sought is None:
        return None
    return _text(value).find(_text(sought)) + 1


def _replace(value: Any, old: Any, new: Any, *, most: int) -> str | None:
    """Every `old` in `value` replaced by `new`; a result past `most` characters is `most`
    characters long, for SQLite to refuse, and never built in full."""
    if value is None or old is None or new is None:
        return None
    text, before, after = _text(value), _text(old), _text(new)
    if not before:
        return text
    if len(after) > len(before) and len(text) + text.count(before) * (len(after) - len(before)) > most:
        return " " * most
    return text.replace(before, after)


def _trim(value: Any, chars: Any, *, ends: str) -> str | None:
    """`value` without the characters of `chars` at its start, end or both."""
    if value is None or chars is None:
        return None
    text, drop = _text(value), set(_text(chars))
    start, end = 0, len(text)
    if ends != "right":
        while start < end and text[start] in drop:
            start += 1
    if ends != "left":
        while end > start and text[end - 1] in drop:
            end -= 1
    return text[start:end]
