"""Values in their field's meaning: localised numbers, money, percentages, dates and
booleans read as numbers, dates and booleans before the types are inferred.

A file written for people (`9,99 €`, `11.03.2025`, `ja`) holds text that the plain type
ladder of `fieldtypes` (ISO dates, `1234.5`, true/false) keeps as text. Here each mapped
column gets one *reading*, decided from all of its values together with the field's
description, never value by value: whether `,` is the decimal mark, whether `03/04/2025`
is day first, which currency and unit the field holds. Each value is then read that one
way; a value the column's reading cannot read is left empty and reported with its line.

Only a column whose first values already need it is read this way (`plan` looks at the
first rows, and only then reads the whole column to decide): a file of plain values takes
the usual paths at their usual speed. The parsing itself is babel's (numbers), price-parser's
(money), dateparser's (month names, in any of its languages) and pint's (units)."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Literal

from datawell.ingest.fieldtypes import kind_of
from datawell.ingest.readings import (
    FALSE_WORDS,
    NUMBER,
    NUMERIC_DATE,
    PERCENT,
    QUANTITY,
    TRUE_WORDS,
    Unreadable,
    date_order,
    decimal_mark,
    field_currency,
    field_unit,
    has_month_name,
    money_core,
    read_boolean,
    read_date,
    read_money,
    read_number,
    read_numeric_date,
    read_percent,
    read_quantity,
)
from datawell.ingest.records import RecordBatch, Records

SAMPLE_ROWS = 200  # the first rows that decide whether a column needs a reading at all
MOST = 0.9  # share of a column's distinct values a reading must read, unless the description agrees
DESCRIBED = 0.75  # ... the share when the field's description says what it holds
MAX_DISTINCT = 100_000  # values kept per column to decide its reading (the rest are read the same way)
CHECKED = 2_000  # distinct values a reading is tried on to see that it reads enough of them
SHOWN_PROBLEMS = 5
Kind = Literal["number", "percent", "money", "quantity", "date", "boolean"]
# Words of a field's description that say what its values are.
_NUMBER_WORDS = re.compile(
    r"\b(a number|numeric|amount|price|cost|costs|total|sum|count|quantity|qty|how many|rate|percent|percentage|"
    r"share|euros?|dollars?|pounds?|francs?|yen|eur|usd|gbp|chf|weight|length|height|width|distance|size|"
    r"duration|score|salary|revenue|balance|value)\b",
    re.IGNORECASE,
)
_DATE_WORDS = re.compile(r"\b(date|day|when|born|birthday|deadline|timestamp|time)\b", re.IGNORECASE)
_BOOLEAN_WORDS = re.compile(r"\b(whether|yes/no|true/false|flag|boolean)\b|^(is|has)\b", re.IGNORECASE)
_FRACTION_WORDS = re.compile(r"\b(fraction|proportion|ratio|between 0 and 1|0 to 1|0-1)\b", re.IGNORECASE)
_WORDS_ONLY = frozenset({"1", "0", "-", "x"})  # not enough, alone, to call a column boolean


@dataclass(frozen=True)
class Reading:
    """How every value of one column is read."""

    kind: Kind
    label: str  # for the attempt's record: "numbers with a decimal comma", "dates, day first"
    read: Callable[[str], Any]


@dataclass
class Problem:
    location: int
    field: str
    value: str
    reason: str


@dataclass
class Plan:
    readings: dict[str, Reading] = field(default_factory=dict)

    def record(self) -> dict[str, str]:
        return {name: reading.label for name, reading in self.readings.items()}


def _share(values: Sequence[str], read: Callable[[str], Any]) -> float:
    good = 0
    for value in values:
        try:
            read(value)
        except Unreadable:
            continue
        good += 1
    return good / len(values)


def _needs_reading(values: Sequence[str]) -> bool:
    """Whether the plain type ladder would keep these values as text although some look
    like numbers, dates or booleans written for people."""
    kinds = {kind_of(v) for v in values}
    return "text" in kinds and any(
        re.search(r"[0-9]", v) or v.strip().lower() in TRUE_WORDS | FALSE_WORDS for v in values
    )


def decide(values: Sequence[str], description: str) -> Reading | None:
    """The one reading of a column with these distinct values, guided by its field's
    description; None when no reading reads enough of them (the column stays as it is).
    How numbers and dates are written (decimal mark, day or month first) is decided from
    every value; whether a reading reads enough of them, from the first `CHECKED`."""
    values = [v.strip() for v in values if v.strip()]
    if not values or not _needs_reading(values):
        return None
    lowered = {v.lower() for v in values}
    if lowered <= TRUE_WORDS | FALSE_WORDS and (lowered - _WORDS_ONLY or _BOOLEAN_WORDS.search(description)):
        return Reading("boolean", "yes/no words", read_boolean)
    described = {
        "number": bool(_NUMBER_WORDS.search(description)),
        "date": bool(_DATE_WORDS.search(description)) and not _NUMBER_WORDS.search(description),
    }
    checked = values[:CHECKED]
    # Only values the plain ladder keeps as text call for a reading: a column of plain numbers
    # and one `abc` is left to the usual rules (text, or a misfit against the dataset's type).
    written = [v for v in checked if kind_of(v) == "text"]
    for reading in _candidates(values, description):
        said = described["date" if reading.kind == "date" else "number"]
        if _share(checked, reading.read) >= (DESCRIBED if said else MOST) and _share(written, reading.read) > 0:
            return reading
    return None


def _candidates(values: Sequence[str], description: str) -> Iterator[Reading]:
    """The readings worth trying for these values, most specific first."""
    percents = [m.group(1) for v in values if (m := PERCENT.fullmatch(v))]
    if percents and (mark := decimal_mark(percents)):
        scale = 0.01 if _FRACTION_WORDS.search(description) else 1.0
        label = "percentages" + (" as fractions" if scale != 1 else "")
        yield Reading("percent", label, partial(read_percent, mark=mark, scale=scale))
    monies = [core for v in values if (core := money_core(v))]
    if monies and (mark := decimal_mark(monies)):
        currency = field_currency(description)
        label = (
            f"amounts of money{f' in {currency}' if currency else ''}, decimal {'comma' if mark == ',' else 'point'}"
        )
        yield Reading("money", label, partial(read_money, mark=mark, currency=currency))
    numbers = [v for v in values if NUMBER.fullmatch(v)]
    quantities = [QUANTITY.fullmatch(v) for v in values]
    # Only numbers can be quantities: a column of names never loads pint's registry.
    unit = field_unit(description) if numbers or any(quantities) else None
    if unit is not None:
        cores = [m.group(1) if m else v for m, v in zip(quantities, values, strict=True)]
        mark = decimal_mark([c for c in cores if NUMBER.fullmatch(c.strip())]) or "."
        yield Reading("quantity", f"quantities in {unit}", partial(read_quantity, mark=mark, unit=unit))
    if numbers and (mark := decimal_mark(numbers)):
        label = f"numbers with a decimal {'comma' if mark == ',' else 'point'}"
        yield Reading("number", label, partial(read_number, mark=mark))
    dated = [v for v in values if NUMERIC_DATE.fullmatch(v)]
    order = date_order(dated or values)
    if order is not None:
        first = "day first" if order == "DMY" else "month first"
        if dated:
            yield Reading("date", f"dates, {first}", partial(read_numeric_date, order=order))
        if any(has_month_name(v) for v in values[:CHECKED]):
            yield Reading("date", f"dates with month names, {first}", partial(read_date, order=order))


def plan(records: Records, schema: Mapping[str, str], size: int) -> Plan:
    """The readings of the columns that need one. The first rows decide which columns may
    (a reading reads enough of them); only those are then read whole, their distinct values
    deciding how."""
    candidates: list[str] = []
    for batch in records.batches(SAMPLE_ROWS):
        for name, values in batch.columns.items():
            texts = list(dict.fromkeys(v for v in values if isinstance(v, str) and v.strip()))
            if texts and decide(texts, schema.get(name, "")) is not None:
                candidates.append(name)
        break
    if not candidates:
        return Plan()
    distinct: dict[str, dict[str, None]] = {name: {} for name in candidates}
    for batch in records.batches(size):
        for name in candidates:
            seen = distinct[name]
            if len(seen) < MAX_DISTINCT:
                seen.update(dict.fromkeys(v for v in batch.columns[name] if isinstance(v, str)))
    found = Plan()
    for name in candidates:
        reading = decide(list(distinct[name]), schema.get(name, ""))
        if reading is not None:
            found.readings[name] = reading
    return found


class ReadRecords:
    """Records with the planned columns read by their readings; a value that cannot be read
    is left empty and kept as a `Problem` (all counted, the first few kept to show)."""

    def __init__(self, records: Records, readings: dict[str, Reading]) -> None:
        self.records = records
        self.unit = records.unit
        self.sources = records.sources
        self.readings = readings
        self.problems: list[Problem] = []
        self.unreadable = 0

    def batches(self, size: int) -> Iterator[RecordBatch]:
        self.problems, self.unreadable = [], 0  # each pass over the file reports afresh
        for batch in self.records.batches(size):
            columns = dict(batch.columns)
            for name, reading in self.readings.items():
                columns[name] = self._read(name, reading, columns[name], batch.locations)
            yield RecordBatch(columns, batch.locations, batch.position)

    def _read(self, name: str, reading: Reading, values: Sequence[Any], locations: list[int]) -> list[Any]:
        cache: dict[str, Any] = {}
        result: list[Any] = []
        for value, location in zip(values, locations, strict=True):
            if not isinstance(value, str) or not value.strip():
                result.append(value)
                continue
            if value not in cache:
                try:
                    cache[value] = reading.read(value)
                except Unreadable as exc:
                    cache[value] = exc
            read = cache[value]
            if isinstance(read, Unreadable):
                self.unreadable += 1
                if len(self.problems) < SHOWN_PROBLEMS:
                    self.problems.append(Problem(location, name, value, str(read)))
                result.append(None)
            else:
                result.append(read)
        return result

    def report(self) -> str:
        """What the attempt's status message says of the values that could not be read."""
        if not self.unreadable:
            return ""
        shown = "; ".join(
            f"{self.unit} {p.location}: field {p.field!r}{self._source(p.field)} {p.value!r} {p.reason}"
            for p in self.problems
        )
        more = f"; and {self.unreadable - len(self.problems)} more" if self.unreadable > len(self.problems) else ""
        if self.unreadable == 1:
            return f"1 value could not be read as its field's type and was left empty ({shown})"
        return f"{self.unreadable} values could not be read as their field's type and were left empty ({shown}{more})"

    def _source(self, name: str) -> str:
        column = self.sources.get(name)
        return f" (column {column!r})" if column and column != name else ""
