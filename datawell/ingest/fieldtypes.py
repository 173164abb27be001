"""Column types: inferred from values at a dataset's first ingestion, then every later value
is coerced to them.

Types form a ladder from most to least specific: a column is the first of boolean, integer,
real, timestamp that admits every non-empty value, else text. Empty strings and None are
empty values: they never decide a type and are stored as NULL."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, date, datetime, time
from typing import Any

TRUE_WORDS = frozenset({"true", "yes"})
FALSE_WORDS = frozenset({"false", "no"})
_INTEGER = re.compile(r"[+-]?(0|[1-9][0-9]*)")
_REAL = re.compile(r"[+-]?((0|[1-9][0-9]*)(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?")
_DATE_START = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
INT64 = 2**63
INT64_DIGITS = 19  # strings of fewer digits always fit in 64 bits


class CoercionError(ValueError):
    pass


def is_empty(value: Any) -> bool:
    return value is None or (isinstance(value, str) and not value.strip())


def truth_of(word: str, true_words: frozenset[str], false_words: frozenset[str]) -> bool | None:
    """What a yes/no word says (case and surrounding space aside); None when it is neither."""
    word = word.strip().lower()
    if word in true_words:
        return True
    if word in false_words:
        return False
    return None


def _as_bool(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and (truth := truth_of(value, TRUE_WORDS, FALSE_WORDS)) is not None:
        return truth
    raise CoercionError("expects true/false (or yes/no)")


def _as_int(value: Any) -> int:
    if isinstance(value, bool):
        raise CoercionError("expects a whole number")
    if isinstance(value, int):
        result = value
    elif isinstance(value, float) and value.is_integer():
        result = int(value)
    elif isinstance(value, str) and _INTEGER.fullmatch(value.strip()):
        # Leading zeros ("00501") never match: such codes stay text so nothing is lost.
        result = int(value.strip())
    else:
        raise CoercionError("expects a whole number")
    if not -INT64 <= result < INT64:
        raise CoercionError("is a whole number too large to store")
    return result


def _as_real(value: Any) -> float:
    if isinstance(value, bool):
        raise CoercionError("expects a number")
    if isinstance(value, int | float):
        result = float(value)
    elif isinstance(value, str) and _REAL.fullmatch(value.strip()):
        result = float(value.strip())
    else:
        raise CoercionError("expects a number")
    if not math.isfinite(result):
        raise CoercionError("expects a finite number")
    return result


def _as_timestamp(value: Any) -> datetime:
    if isinstance(value, datetime):
        stamp = value
    elif isinstance(value, date):
        stamp = datetime.combine(value, time())
    elif isinstance(value, str) and _DATE_START.match(value.strip()):
        text = value.strip()
        try:
            stamp = datetime.fromisoformat(text[:-1] + "+00:00" if text.endswith(("Z", "z")) else text)
        except ValueError:
            raise CoercionError("expects an ISO 8601 date or timestamp") from None
    else:
        raise CoercionError("expects an ISO 8601 date or timestamp")
    # Timestamps without a zone are taken as UTC.
    return stamp.replace(tzinfo=UTC) if stamp.tzinfo is None else stamp.astimezone(UTC)


def _as_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, dict | list):
        return json.dumps(value, ensure_ascii=False, default=str)
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    return str(value)


CONVERTERS: dict[str, Callable[[Any], Any]] = {
    "boolean": _as_bool,
    "integer": _as_int,
    "real": _as_real,
    "timestamp": _as_timestamp,
    "text": _as_text,
}


def coerce(value: Any, field_type: str) -> Any:
    """The value as stored in a column of `field_type`; raises CoercionError when it does not fit."""
    if is_empty(value):
        return None
    return CONVERTERS[field_type](value)


def kind_of(value: Any) -> str:
    """The most specific type a non-empty value fits (an integer also fits real)."""
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer" if -INT64 <= value < INT64 else "real"
    if isinstance(value, float):
        return "real" if math.isfinite(value) else "text"
    if isinstance(value, datetime | date):
        return "timestamp"
    if not isinstance(value, str):
        return "text"
    text = value.strip()
    if _INTEGER.fullmatch(text):
        return "integer" if -INT64 <= int(text) < INT64 else "real"
    if _REAL.fullmatch(text):
        return "real" if math.isfinite(float(text)) else "text"
    if text.lower() in TRUE_WORDS or text.lower() in FALSE_WORDS:
        return "boolean"
    if _DATE_START.match(text):
        try:
            _as_timestamp(text)
        except CoercionError:
            return "text"
        return "timestamp"
    return "text"


def join(a: str, b: str) -> str:
    """The type admitting both: integers widen to real, any other mix is text."""
    if a == b:
        return a
    if {a, b} == {"integer", "real"}:
        return "real"
    return "text"


_BOOLEANS = {word: True for word in TRUE_WORDS} | {word: False for word in FALSE_WORDS}


def _fast_kind(present: Sequence[Any]) -> str | None:
    """The type of a batch of non-empty strings when one C-level pass settles it (the usual
    case for CSV); None when the values need a look one by one."""
    if set(map(type, present)) != {str}:
        return None
    if all(map(_INTEGER.fullmatch, present)) and max(map(len, present)) < INT64_DIGITS:
        return "integer"
    if all(map(_REAL.fullmatch, present)) and all(map(math.isfinite, map(float, present))):
        return "real"
    if all(v.strip().lower() in _BOOLEANS for v in present):
        return "boolean"
    if all(map(_DATE_START.match, present)):
        try:
            list(map(datetime.fromisoformat, present))
        except ValueError:
            return None
        return "timestamp"
    return None


class TypeInference:
    """Each column's type as batches stream past; memory is constant."""

    def __init__(self, columns: Iterable[str]) -> None:
        self.types: dict[str, str | None] = dict.fromkeys(columns)

    def observe(self, column: str, values: Sequence[Any]) -> None:
        current = self.types[column]
        if current == "text":
            return
        present = [v for v in values if v is not None and v != ""]
        if not present:
            return
        kind = _fast_kind(present)
        if kind is None:
            for value in present:
                if not is_empty(value):
                    kind = kind_of(value) if kind is None else join(kind, kind_of(value))
                    if kind == "text":
                        break
            if kind is None:
                return
        self.types[column] = kind if current is None else join(current, kind)

    def settle(self, column: str, kind: str) -> None:
        """Take in a batch whose values all fit `kind` (decided elsewhere, e.g. by Arrow)."""
        current = self.types[column]
        if current != "text":
            self.types[column] = kind if current is None else join(current, kind)

    def result(self) -> dict[str, str]:
        """Column -> type; a column with no values at all is text."""
        return {column: kind or "text" for column, kind in self.types.items()}


class Misfit(CoercionError):
    """A value of a column batch that does not fit the column's type."""

    def __init__(self, index: int, value: Any, reason: CoercionError) -> None:
        super().__init__(str(reason))
        self.index = index
        self.value = value


def _fast_integers(values: Sequence[str | None]) -> list[int | None]:
    present = [v for v in values if v]
    if present and not (all(map(_INTEGER.fullmatch, present)) and max(map(len, present)) < INT64_DIGITS):
        raise ValueError
    return [int(v) if v else None for v in values]


def _fast_reals(values: Sequence[str | None]) -> list[float | None]:
    present = [v for v in values if v]
    if not all(map(_REAL.fullmatch, present)):
        raise ValueError
    result = [float(v) if v else None for v in values]
    if not all(math.isfinite(x) for x in result if x is not None):
        raise ValueError
    return result


def _fast_booleans(values: Sequence[str | None]) -> list[bool | None]:
    return [_BOOLEANS[v.strip().lower()] if v else None for v in values]


def _fast_timestamps(values: Sequence[str | None]) -> list[datetime | None]:
    present = [v for v in values if v]
    if not all(map(_DATE_START.match, present)):
        raise ValueError
    parsed = [datetime.fromisoformat(v) if v else None for v in values]
    return [None if t is None else t.replace(tzinfo=UTC) if t.tzinfo is None else t.astimezone(UTC) for t in parsed]


def _fast_texts(values: Sequence[str | None]) -> list[str | None]:
    return [v if v and not v.isspace() else None for v in values]


_FAST: dict[str, Callable[[Sequence[str | None]], list[Any]]] = {
    "integer": _fast_integers,
    "real": _fast_reals,
    "boolean": _fast_booleans,
    "timestamp": _fast_timestamps,
    "text": _fast_texts,
}


def coerce_column(values: Sequence[Any], field_type: str) -> list[Any]:
    """A batch of one column's values coerced to `field_type`; raises Misfit naming the first
    value that does not fit. Strings go through a fast path; anything it cannot settle is
    converted value by value, with the same result."""
    fast = _FAST.get(field_type)
    if fast is not None and set(map(type, values)) <= {str, type(None)}:
        try:
            return fast(values)
        except (ValueError, KeyError, AttributeError):
            pass
    convert = CONVERTERS[field_type]
    result: list[Any] = []
    for index, value in enumerate(values):
        if is_empty(value):
            result.append(None)
            continue
        try:
            result.append(convert(value))
        except CoercionError as exc:
            raise Misfit(index, value, exc) from None
    return result
