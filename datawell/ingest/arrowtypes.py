"""The rules of `fieldtypes` over Arrow arrays of text, a batch at a time in Arrow kernels.

Each function settles the common case (every value of the batch clearly fits) and answers
None otherwise; the caller then applies the Python rules to that batch's values, which
decide exactly as before: the same type, the same value, the same message for a value
that does not fit. So the Arrow path is only ever a faster way to the same answer."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from datawell.ingest.fieldtypes import FALSE_WORDS, INT64_DIGITS, TRUE_WORDS

_INTEGER = r"^[+-]?(0|[1-9][0-9]*)$"
_REAL = r"^[+-]?((0|[1-9][0-9]*)(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?$"
_DATE_START = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}"
_WORDS = pa.array(sorted(TRUE_WORDS | FALSE_WORDS))
_TRUE = pa.array(sorted(TRUE_WORDS))
HEAD_VALUES = 1024


def _all(mask: pa.Array) -> bool:
    return bool(pc.all(mask, skip_nulls=True).as_py() is not False)


def _present(values: pa.Array) -> tuple[pa.Array, pa.Array]:
    """(the values stripped of surrounding white space, which of them are not empty)."""
    stripped = pc.utf8_trim_whitespace(values)
    return stripped, pc.greater(pc.binary_length(stripped), 0)


def _integers(stripped: pa.Array) -> pa.Array | None:
    if not _all(pc.match_substring_regex(stripped, _INTEGER)):
        return None
    if (pc.max(pc.binary_length(stripped)).as_py() or 0) >= INT64_DIGITS:
        return None  # may not fit in 64 bits: the Python rules decide
    return pc.cast(stripped, pa.int64())


def _reals(stripped: pa.Array) -> pa.Array | None:
    if not _all(pc.match_substring_regex(stripped, _REAL)):
        return None
    try:
        reals = pc.cast(stripped, pa.float64())
    except pa.ArrowInvalid:
        return None
    return reals if _all(pc.is_finite(reals)) else None


def _booleans(stripped: pa.Array) -> pa.Array | None:
    lowered = pc.ascii_lower(stripped)
    empty = pc.is_null(lowered)
    if not _all(pc.or_(empty, pc.is_in(lowered, value_set=_WORDS))):
        return None
    return pc.if_else(empty, pa.scalar(None, pa.bool_()), pc.is_in(lowered, value_set=_TRUE))


def _timestamps(stripped: pa.Array) -> pa.Array | None:
    """Naive values are UTC; values with a zone all converted to UTC. A batch mixing both,
    or anything Arrow's ISO 8601 parser refuses, is left to Python's."""
    if not _all(pc.match_substring_regex(stripped, _DATE_START)):
        return None
    for kind in (pa.timestamp("us"), pa.timestamp("us", "UTC")):
        try:
            return pc.cast(stripped, kind).cast(pa.timestamp("us"))
        except pa.ArrowInvalid:
            continue
    return None


def _texts(values: pa.Array) -> pa.Array:
    empty = pc.or_(pc.equal(pc.binary_length(values), 0), pc.utf8_is_space(values))
    return pc.if_else(empty, pa.scalar(None, pa.string()), values)


def coerce_text_array(values: pa.Array, field_type: str) -> pa.Array | None:
    """Text values as `field_type` (empty values as null), or None when the Python rules must decide."""
    if field_type == "text":
        return _texts(values)
    stripped, present = _present(values)
    nulled = pc.if_else(present, stripped, pa.scalar(None, pa.string()))
    convert = {"integer": _integers, "real": _reals, "boolean": _booleans, "timestamp": _timestamps}[field_type]
    return convert(nulled)


def _fits_nothing(values: pa.Array) -> bool:
    real = pc.match_substring_regex(values, _REAL)
    word = pc.is_in(pc.ascii_lower(values), value_set=_WORDS)
    date = pc.match_substring_regex(values, _DATE_START)
    return not _all(pc.or_(pc.or_(real, word), date))


def infer_text_array(values: pa.Array) -> tuple[str | None, pa.Array | None]:
    """The type of a batch of text values when Arrow settles it; `text` as soon as one value
    fits nothing else; None for no value at all or when the Python rules must decide. With
    it, the values converted to that type (what `coerce_text_array` gives) when finding the
    type converted them anyway, so a batch typed as it was inferred is not converted twice.

    Every check holds for all values or fails, so each is tried on the batch's first values
    before the whole batch: most columns are settled by their first few values at the cost
    of one pass over the batch."""
    stripped, present = _present(values)
    nulled = pc.if_else(present, stripped, pa.scalar(None, pa.string()))  # checks skip nulls
    filled = pc.drop_null(nulled)
    if len(filled) == 0:
        return None, None
    head = filled.slice(0, HEAD_VALUES)
    if _fits_nothing(head):
        return "text", None
    for kind, convert in (("integer", _integers), ("real", _reals), ("boolean", _booleans), ("timestamp", _timestamps)):
        if convert(head) is not None and (converted := convert(nulled)) is not None:
            return kind, converted
    return ("text" if _fits_nothing(filled) else None), None


# Arrays of other types than text (Parquet columns, JSON numbers and booleans). Each rule
# gives what the Python rules give for the array's values (`to_pylist()`), or None.
ARROW_KINDS = {"integer": pa.int64(), "real": pa.float64(), "boolean": pa.bool_()}
_EXACT_INTEGERS = (pa.int8(), pa.int16(), pa.int32(), pa.int64(), pa.uint8(), pa.uint16(), pa.uint32())


def _native_kind(values: pa.Array) -> str | None:
    """The type Python's rules give to every value of a typed array, or None."""
    kind = values.type
    if pa.types.is_boolean(kind):
        return "boolean"
    if kind in _EXACT_INTEGERS:
        return "integer"
    if kind in (pa.float32(), pa.float64()):
        return "real" if _all(pc.is_finite(values)) else None  # not finite: text, by Python's rules
    if (pa.types.is_timestamp(kind) and kind.unit != "ns") or pa.types.is_date(kind):
        return "timestamp"
    return None


def _coerce_native(values: pa.Array, field_type: str) -> pa.Array | None:
    natural = _native_kind(values)
    if natural is None or field_type == "text":
        return None  # Python spells numbers, booleans and dates as text its own way
    if natural == field_type == "timestamp":  # naive ones are UTC; aware ones are held in UTC
        zone = "UTC" if getattr(values.type, "tz", None) else None
        return pc.cast(values, pa.timestamp("us", zone)).cast(pa.timestamp("us"))
    if natural == field_type:
        return pc.cast(values, ARROW_KINDS[field_type])
    if natural == "integer" and field_type == "real":
        return pc.cast(values, pa.float64(), safe=False)  # rounded to nearest, as float(int)
    return None


def _as_text_array(values: pa.Array) -> pa.Array | None:
    kind = values.type
    if pa.types.is_dictionary(kind):
        return _as_text_array(values.dictionary_decode())
    if pa.types.is_string(kind) or pa.types.is_large_string(kind):
        return values.cast(pa.string())
    return None


def infer_array(values: pa.Array) -> tuple[str | None, pa.Array | None]:
    """`infer_text_array` for an array of any type."""
    text = _as_text_array(values)
    if text is not None:
        return infer_text_array(text)
    if values.null_count == len(values):
        return None, None
    return _native_kind(values.drop_null()), None


def coerce_array(values: pa.Array, field_type: str) -> pa.Array | None:
    """`coerce_text_array` for an array of any type."""
    text = _as_text_array(values)
    if text is not None:
        return coerce_text_array(text, field_type)
    return _coerce_native(values, field_type)
