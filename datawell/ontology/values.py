"""How field values are compared: their exact text, a normalised form, the number inside a
prefixed code, and the country a name or code stands for.

Values are compared as 64-bit hashes of these forms, kept as sorted unique numpy arrays: a
field of a million distinct values costs 8 MB instead of a set of strings, and the overlap
of two fields is one vectorised `isin`. Hashes are Python's `hash()` of the form, which is
salted per process: they are never stored, only compared within one run."""

from __future__ import annotations

import re
import string
import unicodedata
from collections.abc import Iterable
from datetime import date, datetime
from functools import cache
from typing import Any

import numpy as np
import pycountry

# Deleted by normalisation: ASCII punctuation and whitespace, so "C-001", "c 001" and "c001" agree.
_DELETE = str.maketrans("", "", string.punctuation + string.whitespace)
_CODE = re.compile(r"([a-z]{1,4})0*(\d+)")
_NUMBER = re.compile(r"-?\d+")
_DECIMAL = re.compile(r"\s*[-+]?\d*[.,]\d+\s*")

EMPTY = np.zeros(0, dtype=np.uint64)


def exact_text(value: Any) -> str | None:
    """The value as text, the same whether a database returns 1, 1.0 or "1"."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        if value != value:  # NaN
            return None
        return str(int(value)) if value.is_integer() else repr(value)
    if isinstance(value, (datetime, date)):
        return value.isoformat()
    text = str(value)
    return text if text.strip() else None


def normalize(text: str) -> str:
    """Case, accents, Unicode compatibility forms, punctuation and whitespace removed;
    zero padding of a number (or of a code's number) dropped: "C-001" -> "c1", "Côte d'Ivoire"
    -> "cotedivoire", "ＡＢＣ" -> "abc". Decimal numbers keep their point and sign."""
    if _DECIMAL.fullmatch(text):
        return text.strip().replace(",", ".")
    if text.isascii():
        folded = text.lower().translate(_DELETE)
    else:
        decomposed = unicodedata.normalize("NFKD", unicodedata.normalize("NFKC", text))
        stripped = "".join(c for c in decomposed if not unicodedata.combining(c))
        folded = "".join(c for c in stripped.casefold() if c.isalnum())
    if folded.isdigit():
        return folded.lstrip("0") or "0"
    if folded[-1:].isdigit():
        code = _CODE.fullmatch(folded)
        if code is not None:
            return code.group(1) + code.group(2)
    return folded


def code_number(normalized: str) -> tuple[str, str] | None:
    """(prefix, number) of a prefixed code such as "c1" (from "C-001"); None for anything else."""
    code = _CODE.fullmatch(normalized)
    return None if code is None else (code.group(1), code.group(2))


@cache
def country_codes() -> dict[str, str]:
    """Normalised country name, official name, common name, alpha-2 and alpha-3 code -> alpha-2."""
    table: dict[str, str] = {}
    for country in pycountry.countries:
        code = country.alpha_2
        for attribute in ("name", "official_name", "common_name", "alpha_2", "alpha_3"):
            spelled = getattr(country, attribute, None)
            if spelled:
                table.setdefault(normalize(spelled), code)
    # Short forms people write that ISO does not list.
    for spelled, code in (("usa", "US"), ("uk", "GB"), ("england", "GB"), ("russia", "RU")):
        table.setdefault(spelled, code)
    return table


def hashes(forms: Iterable[str]) -> np.ndarray:
    """Sorted unique 64-bit hashes of the given forms."""
    array = np.fromiter((hash(f) for f in forms), dtype=np.int64).view(np.uint64)
    return np.unique(array)


def overlap(a: np.ndarray, b: np.ndarray) -> int:
    """How many hashes two sorted unique arrays share (exact, up to 64-bit collisions)."""
    if len(a) == 0 or len(b) == 0:
        return 0
    if len(a) > len(b):
        a, b = b, a
    if 16 * len(a) < len(b):  # a few values against many: binary search beats a merge
        found = np.searchsorted(b, a).clip(max=len(b) - 1)
        return int((b[found] == a).sum())
    return int(np.isin(a, b, assume_unique=True).sum())


def is_number(text: str) -> bool:
    return _NUMBER.fullmatch(text) is not None
