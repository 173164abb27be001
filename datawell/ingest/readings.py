"""How one value is read once its column's reading is decided (`ingest.values`): numbers with
either decimal mark, percentages, money (price-parser, the field's currency), quantities in the
field's unit (Pint), dates in a column's day/month order, month names (babel, dateparser) and
booleans in several languages. A value a reading cannot read raises `Unreadable`."""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime
from decimal import Decimal, InvalidOperation
from functools import cache
from typing import Any

from datawell.ingest.fieldtypes import truth_of

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
_SPACES = "\u00a0\u202f\u2009 '’"
NUMBER = re.compile(r"[+-]?[0-9][0-9.,\u00a0\u202f\u2009 '’]*")
_COMMA_DECIMAL = re.compile(r"[+-]?([0-9]{1,3}(\.[0-9]{3})+|[0-9]+)(,[0-9]+)?")
_DOT_DECIMAL = re.compile(r"[+-]?([0-9]{1,3}(,[0-9]{3})+|[0-9]+)(\.[0-9]+)?")
NUMERIC_DATE = re.compile(
    r"([0-9]{1,2})([./-])([0-9]{1,2})\2([0-9]{4}|[0-9]{2})(?:[ T]([0-9]{1,2}):([0-9]{2})(?::([0-9]{2}))?)?"
)
PERCENT = re.compile(r"(.*?)\s*(%|‰|percent|prozent|pourcent)", re.IGNORECASE)
QUANTITY = re.compile(r"([+-]?[0-9][0-9.,\u00a0\u202f ']*)\s*([^\W\d_][\w°µ/²³.* ]*)")
_CURRENCY_HINT = re.compile(r"[€$£¥]|\b[A-Z]{3}\b|\bfr\.", re.IGNORECASE)


class Unreadable(ValueError):
    """A value the column's reading cannot read; the message says what was expected."""


def decimal_mark(cores: Sequence[str]) -> str | None:
    """`,` or `.`: the decimal mark every number of the column is written with; `.` when
    both would do (`1,234` is then one thousand two hundred and thirty-four); None when no
    one convention reads them all."""
    cleaned = [re.sub(f"[{_SPACES}]", "", core) for core in cores]
    dot = all(_DOT_DECIMAL.fullmatch(c) for c in cleaned)
    comma = all(_COMMA_DECIMAL.fullmatch(c) for c in cleaned)
    if dot:
        return "."
    return "," if comma else None


def read_number(core: str, mark: str) -> int | float:
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


def field_currency(description: str) -> str | None:
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


def read_money(value: str, mark: str, currency: str | None) -> int | float:
    """An amount: `9,99 €` and `EUR 12` directly, anything else through price-parser."""
    simple = _SIMPLE_MONEY.fullmatch(value)
    if simple is not None and (simple["before"] or simple["after"]) and not (simple["before"] and simple["after"]):
        symbol = simple["before"] or simple["after"]
        amount = read_number(simple["number"], mark)
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


def money_core(value: str) -> str | None:
    """The number of an amount like `9,99 €`, `EUR 1.234,50` or `$12`, else None."""
    if not _CURRENCY_HINT.search(value):
        return None
    stripped = re.sub(r"[€$£¥]|\b[A-Za-z]{3}\b|\bfr\.|[-–]$", " ", value, flags=re.IGNORECASE).strip()
    return stripped if NUMBER.fullmatch(stripped) else None


@cache
def _units() -> Any:
    import pint

    return pint.UnitRegistry()


def field_unit(description: str) -> Any:
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


def read_quantity(value: str, mark: str, unit: Any) -> int | float:
    import pint

    match = QUANTITY.fullmatch(value.strip())
    if match is None:
        return read_number(value, mark)  # a bare number is in the field's unit
    amount = read_number(match.group(1), mark)
    try:
        converted = _units().Quantity(amount, match.group(2).strip()).to(unit).magnitude
    except pint.errors.DimensionalityError:
        raise Unreadable(f"is not a quantity of {unit}") from None
    except Exception:  # an unknown unit name
        raise Unreadable(f"names a unit pint does not know ({match.group(2).strip()!r})") from None
    return float(converted)


def date_order(values: Sequence[str]) -> str | None:
    """`DMY` or `MDY` for numeric dates (`11.03.2025`), from every value: a first number
    above 12 proves day first, a second one above 12 month first; with no proof, dates
    written with `.` or `-` are day first and with `/` month first. None when values prove both."""
    day_first = month_first = False
    slashes = 0
    for value in values:
        match = NUMERIC_DATE.fullmatch(value)
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


def read_numeric_date(value: str, order: str) -> datetime:
    match = NUMERIC_DATE.fullmatch(value.strip())
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


def babel_month_names() -> frozenset[str]:
    """Month names and abbreviations in the languages above, lower case, from babel's CLDR data
    (0.1 s a process: `MONTH_NAMES` holds them, and a test keeps the two equal)."""
    from babel.dates import get_month_names

    names = {
        name.lower().rstrip(".")
        for locale in MONTH_LOCALES
        for width in ("wide", "abbreviated")
        for context in ("format", "stand-alone")
        for name in get_month_names(width, context, locale).values()
    }
    return frozenset(names)


# `babel_month_names()`, written out: asked for every column with digits and words in it.
MONTH_NAMES = frozenset(
    {
        "abr", "abril", "ago", "agosto", "août", "apr", "april", "aprile", "aug", "august", "augusti", "augustus",
        "avr", "avril", "bře", "březen", "března", "cze", "czerwca", "czerwiec", "dec", "december", "des",
        "desember", "dez", "dezember", "dezembro", "dic", "dicembre", "diciembre", "dub", "duben", "dubna", "déc",
        "décembre", "elo", "elokuu", "elokuuta", "ene", "enero", "feb", "febbraio", "febrero", "februar",
        "februari", "february", "fev", "fevereiro", "févr", "février", "gen", "gennaio", "giu", "giugno", "gru",
        "grudnia", "grudzień", "heinä", "heinäkuu", "heinäkuuta", "helmi", "helmikuu", "helmikuuta", "huhti",
        "huhtikuu", "huhtikuuta", "jan", "janeiro", "januar", "januari", "january", "janv", "janvier", "joulu",
        "joulukuu", "joulukuuta", "juil", "juillet", "juin", "jul", "julho", "juli", "julio", "july", "jun", "june",
        "junho", "juni", "junio", "kesä", "kesäkuu", "kesäkuuta", "kvě", "květen", "května", "kwi", "kwiecień",
        "kwietnia", "led", "leden", "ledna", "lip", "lipca", "lipiec", "lis", "listopad", "listopada", "listopadu",
        "loka", "lokakuu", "lokakuuta", "lug", "luglio", "lut", "lutego", "luty", "maalis", "maaliskuu",
        "maaliskuuta", "maart", "mag", "maggio", "mai", "maio", "maj", "maja", "mar", "marca", "march", "marras",
        "marraskuu", "marraskuuta", "mars", "marts", "marzec", "marzo", "março", "may", "mayo", "mei", "mrt", "mär",
        "märz", "nov", "november", "novembre", "novembro", "noviembre", "oct", "october", "octobre", "octubre",
        "okt", "oktober", "ott", "ottobre", "out", "outubro", "paź", "październik", "października", "pro",
        "prosince", "prosinec", "sep", "sept", "september", "septembre", "septiembre", "set", "setembro",
        "settembre", "sie", "sierpień", "sierpnia", "srp", "srpen", "srpna", "sty", "styczeń", "stycznia", "syys",
        "syyskuu", "syyskuuta", "tammi", "tammikuu", "tammikuuta", "touko", "toukokuu", "toukokuuta", "wrz",
        "wrzesień", "września", "zář", "září", "úno", "únor", "února", "červen", "července", "červenec", "června",
        "čvc", "čvn", "říj", "říjen", "října",
    }
)  # fmt: skip


def has_month_name(value: str) -> bool:
    return any(word.lower() in MONTH_NAMES for word in re.findall(r"[^\W\d_]+", value))


def read_named_date(value: str, order: str) -> datetime:
    import dateparser

    # dateparser is slow and generous: only a value with digits and a month name is given to it
    if not re.search(r"[0-9]", value) or not has_month_name(value):
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


def read_percent(value: str, mark: str, scale: float) -> float:
    match = PERCENT.fullmatch(value.strip())
    core = match.group(1) if match else value
    return float(read_number(core, mark)) * scale


def read_date(value: str, order: str) -> datetime:
    if NUMERIC_DATE.fullmatch(value.strip()):
        return read_numeric_date(value, order)
    return read_named_date(value, order)


def read_boolean(value: str) -> bool:
    if (truth := truth_of(value, TRUE_WORDS, FALSE_WORDS)) is None:
        raise Unreadable("is not yes or no")
    return truth
