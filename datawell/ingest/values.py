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
from datetime import datetime
from decimal import Decimal, InvalidOperation
from functools import cache, partial
from typing import Any, Literal

from datawell.ingest.fieldtypes import kind_of
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
_CURRENCY_NAMES = {
    "euro": "EUR", "euros": "EUR", "eur": "EUR", "€": "EUR", "dollar": "USD", "dollars": "USD", "usd": "USD",
    "$": "USD", "us$": "USD", "pound": "GBP", "pounds": "GBP", "gbp": "GBP", "£": "GBP", "yen": "JPY", "jpy": "JPY",
    "¥": "JPY", "franc": "CHF", "francs": "CHF", "chf": "CHF", "fr.": "CHF", "sfr": "CHF",
}  # fmt: skip

# Booleans in several languages: a column is boolean when every value is one of these.
TRUE_WORDS = frozenset(
    {"true", "yes", "y", "t", "1", "ja", "j", "wahr", "oui", "vrai", "sí", "si", "sim", "verdadero", "vero",
     "waar", "tak", "да", "x", "✓", "✔"}
)  # fmt: skip
FALSE_WORDS = frozenset(
    {"false", "no", "n", "f", "0", "nein", "falsch", "non", "faux", "não", "nao", "falso", "nee", "onwaar",
     "nie", "нет", "-", "✗"}
)  # fmt: skip
_WORDS_ONLY = frozenset({"1", "0", "-", "x"})  # not enough, alone, to call a column boolean

_SPACES = "\u00a0\u202f\u2009 '’"
_NUMBER = re.compile(r"[+-]?[0-9][0-9.,\u00a0\u202f\u2009 '’]*")
_COMMA_DECIMAL = re.compile(r"[+-]?([0-9]{1,3}(\.[0-9]{3})+|[0-9]+)(,[0-9]+)?")
_DOT_DECIMAL = re.compile(r"[+-]?([0-9]{1,3}(,[0-9]{3})+|[0-9]+)(\.[0-9]+)?")
_NUMERIC_DATE = re.compile(
    r"([0-9]{1,2})([./-])([0-9]{1,2})\2([0-9]{4}|[0-9]{2})(?:[ T]([0-9]{1,2}):([0-9]{2})(?::([0-9]{2}))?)?"
)
_PERCENT = re.compile(r"(.*?)\s*(%|‰|percent|prozent|pourcent)", re.IGNORECASE)
_QUANTITY = re.compile(r"([+-]?[0-9][0-9.,\u00a0\u202f ']*)\s*([^\W\d_][\w°µ/²³.* ]*)")
_CURRENCY_HINT = re.compile(r"[€$£¥]|\b[A-Z]{3}\b|\bfr\.", re.IGNORECASE)


class Unreadable(ValueError):
    """A value the column's reading cannot read; the message says what was expected."""


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


# ------------------------------------------------------------------ numbers


def _decimal_mark(cores: Sequence[str]) -> str | None:
    """`,` or `.`: the decimal mark every number of the column is written with; `.` when
    both would do (`1,234` is then one thousand two hundred and thirty-four); None when no
    one convention reads them all."""
    cleaned = [re.sub(f"[{_SPACES}]", "", core) for core in cores]
    dot = all(_DOT_DECIMAL.fullmatch(c) for c in cleaned)
    comma = all(_COMMA_DECIMAL.fullmatch(c) for c in cleaned)
    if dot:
        return "."
    return "," if comma else None


def _number(core: str, mark: str) -> int | float:
    """A number written with `mark` as decimal mark, through babel's parser."""
    from babel.numbers import NumberFormatError, parse_decimal

    cleaned = re.sub(f"[{_SPACES}]", "", core.strip())
    if not (_COMMA_DECIMAL if mark == "," else _DOT_DECIMAL).fullmatch(cleaned):
        raise Unreadable(f"is not a number written with {mark!r} as decimal mark")
    try:
        value = parse_decimal(cleaned, locale=_number_locale(mark), strict=False)
    except (NumberFormatError, InvalidOperation):
        raise Unreadable("is not a number") from None
    return _plain(value, whole=mark not in cleaned)


@cache
def _number_locale(mark: str) -> Any:
    """A locale writing numbers with `mark` as decimal mark (parsed once: babel parses a locale
    name on every call otherwise, three times the cost of the number)."""
    from babel import Locale

    return Locale.parse("de_DE" if mark == "," else "en_US")


def _plain(value: Decimal, *, whole: bool) -> int | float:
    return int(value) if whole and value == value.to_integral_value() else float(value)


def _field_currency(description: str) -> str | None:
    from babel.numbers import list_currencies

    for word in re.findall(r"[€$£¥]|[A-Za-z.$]+", description):
        code = _CURRENCY_NAMES.get(word.lower())
        if code:
            return code
        if len(word) == 3 and word.isupper() and word in list_currencies():
            return word
    return None


_SIMPLE_MONEY = re.compile(
    r"\s*(?P<before>[€$£¥]|[A-Za-z]{3})?\s*(?P<number>[+-]?[0-9][0-9.,\u00a0\u202f ']*?)\s*(?P<after>[€$£¥]|[A-Za-z]{3})?\s*"
)


def _money(value: str, mark: str, currency: str | None) -> int | float:
    """An amount: `9,99 €` and `EUR 12` directly, anything else through price-parser."""
    simple = _SIMPLE_MONEY.fullmatch(value)
    if simple is not None and (simple["before"] or simple["after"]) and not (simple["before"] and simple["after"]):
        symbol = simple["before"] or simple["after"]
        amount = _number(simple["number"], mark)
    else:
        from price_parser import Price

        price = Price.fromstring(value, decimal_separator=mark)
        if price.amount is None:
            raise Unreadable("is not an amount of money")
        symbol, amount = price.currency or "", _plain(price.amount, whole=mark not in value)
    found = _CURRENCY_NAMES.get(symbol.lower(), symbol.upper() or None)
    if currency and found and found != currency:
        raise Unreadable(f"is in {found}, the field holds {currency}")
    return amount


def _money_core(value: str) -> str | None:
    """The number of an amount like `9,99 €`, `EUR 1.234,50` or `$12`, else None."""
    if not _CURRENCY_HINT.search(value):
        return None
    stripped = re.sub(r"[€$£¥]|\b[A-Za-z]{3}\b|\bfr\.|[-–]$", " ", value, flags=re.IGNORECASE).strip()
    return stripped if _NUMBER.fullmatch(stripped) else None


# ------------------------------------------------------------------ units


@cache
def _units() -> Any:
    import pint

    return pint.UnitRegistry()


def _field_unit(description: str) -> Any:
    """The unit a description names (`Weight in kilograms`, `Length (cm)`), or None."""
    import pint

    for candidate in re.findall(r"\bin ([A-Za-zµ°²³/ ]+?)(?:\s*[(),;.]|$)|\(([^()]+)\)", description):
        text = (candidate[0] or candidate[1]).strip()
        if not text or _CURRENCY_NAMES.get(text.lower()) or len(text) > 30:
            continue
        try:
            unit = _units().parse_units(text)
        except (pint.errors.UndefinedUnitError, pint.errors.DefinitionSyntaxError, ValueError, AttributeError):
            continue
        except Exception:  # pint's parser raises assorted errors for prose
            continue
        if not unit.dimensionless:
            return unit
    return None


def _quantity(value: str, mark: str, unit: Any) -> int | float:
    import pint

    match = _QUANTITY.fullmatch(value.strip())
    if match is None:
        return _number(value, mark)  # a bare number is in the field's unit
    amount = _number(match.group(1), mark)
    try:
        converted = _units().Quantity(amount, match.group(2).strip()).to(unit).magnitude
    except pint.errors.DimensionalityError:
        raise Unreadable(f"is not a quantity of {unit}") from None
    except Exception:  # an unknown unit name
        raise Unreadable(f"names a unit pint does not know ({match.group(2).strip()!r})") from None
    return float(converted)


# ------------------------------------------------------------------ dates


def _date_order(values: Sequence[str]) -> str | None:
    """`DMY` or `MDY` for numeric dates (`11.03.2025`), from every value: a first number
    above 12 proves day first, a second one above 12 month first; with no proof, dates
    written with `.` or `-` are day first and with `/` month first. None when values prove both."""
    day_first = month_first = False
    slashes = 0
    for value in values:
        match = _NUMERIC_DATE.fullmatch(value)
        if match is None:
            continue
        first, second = int(match.group(1)), int(match.group(3))
        day_first |= first > 12
        month_first |= second > 12
        slashes += match.group(2) == "/"
    if day_first and month_first:
        return None
    if day_first or month_first:
        return "DMY" if day_first else "MDY"
    return "MDY" if slashes > len(values) / 2 else "DMY"


def _numeric_date(value: str, order: str) -> datetime:
    match = _NUMERIC_DATE.fullmatch(value.strip())
    if match is None:
        raise Unreadable("is not a date like the column's others")
    first, second, year = int(match.group(1)), int(match.group(3)), int(match.group(4))
    day, month = (first, second) if order == "DMY" else (second, first)
    year += 2000 if year < 70 else 1900 if year < 100 else 0
    hour, minute, second_ = (int(match.group(n) or 0) for n in (5, 6, 7))
    try:
        return datetime(year, month, day, hour, minute, second_)
    except ValueError:
        raise Unreadable(f"is not a date ({'day first' if order == 'DMY' else 'month first'})") from None


MONTH_LOCALES = ("en", "de", "fr", "es", "it", "pt", "nl", "sv", "da", "nb", "pl", "cs", "fi")


@cache
def month_names() -> frozenset[str]:
    """Month names and abbreviations in the languages above, lower case, from babel's CLDR data."""
    from babel.dates import get_month_names

    names = {
        name.lower().rstrip(".")
        for locale in MONTH_LOCALES
        for width in ("wide", "abbreviated")
        for context in ("format", "stand-alone")
        for name in get_month_names(width, context, locale).values()
    }
    return frozenset(names)


def _has_month_name(value: str) -> bool:
    return any(word.lower() in month_names() for word in re.findall(r"[^\W\d_]+", value))


def _named_date(value: str, order: str) -> datetime:
    import dateparser

    # dateparser is slow and generous: only a value with digits and a month name is given to it
    if not re.search(r"[0-9]", value) or not _has_month_name(value):
        raise Unreadable("is not a date")
    parsed = dateparser.parse(
        value,
        settings={
            "DATE_ORDER": order,
            "PARSERS": ["absolute-time"],
            "REQUIRE_PARTS": ["month", "year"],
            "PREFER_DAY_OF_MONTH": "first",
            "RETURN_AS_TIMEZONE_AWARE": False,
        },
    )
    if parsed is None:
        raise Unreadable("is not a date")
    return parsed


# ------------------------------------------------------------------ deciding a column's reading


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
        return Reading("boolean", "yes/no words", _boolean)
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
    percents = [m.group(1) for v in values if (m := _PERCENT.fullmatch(v))]
    if percents and (mark := _decimal_mark(percents)):
        scale = 0.01 if _FRACTION_WORDS.search(description) else 1.0
        label = "percentages" + (" as fractions" if scale != 1 else "")
        yield Reading("percent", label, partial(_percent, mark=mark, scale=scale))
    monies = [core for v in values if (core := _money_core(v))]
    if monies and (mark := _decimal_mark(monies)):
        currency = _field_currency(description)
        label = (
            f"amounts of money{f' in {currency}' if currency else ''}, decimal {'comma' if mark == ',' else 'point'}"
        )
        yield Reading("money", label, partial(_money, mark=mark, currency=currency))
    unit = _field_unit(description)
    if unit is not None:
        cores = [m.group(1) if (m := _QUANTITY.fullmatch(v)) else v for v in values]
        mark = _decimal_mark([c for c in cores if _NUMBER.fullmatch(c.strip())]) or "."
        yield Reading("quantity", f"quantities in {unit}", partial(_quantity, mark=mark, unit=unit))
    numbers = [v for v in values if _NUMBER.fullmatch(v)]
    if numbers and (mark := _decimal_mark(numbers)):
        label = f"numbers with a decimal {'comma' if mark == ',' else 'point'}"
        yield Reading("number", label, partial(_number, mark=mark))
    dated = [v for v in values if _NUMERIC_DATE.fullmatch(v)]
    order = _date_order(dated or values)
    if order is not None:
        first = "day first" if order == "DMY" else "month first"
        if dated:
            yield Reading("date", f"dates, {first}", partial(_numeric_date, order=order))
        if any(_has_month_name(v) for v in values[:CHECKED]):
            yield Reading("date", f"dates with month names, {first}", partial(_any_date, order=order))


def _percent(value: str, mark: str, scale: float) -> float:
    match = _PERCENT.fullmatch(value.strip())
    core = match.group(1) if match else value
    return float(_number(core, mark)) * scale


def _any_date(value: str, order: str) -> datetime:
    if _NUMERIC_DATE.fullmatch(value.strip()):
        return _numeric_date(value, order)
    return _named_date(value, order)


def _boolean(value: str) -> bool:
    word = value.strip().lower()
    if word in TRUE_WORDS:
        return True
    if word in FALSE_WORDS:
        return False
    raise Unreadable("is not yes or no")


# ------------------------------------------------------------------ planning and reading a file


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
