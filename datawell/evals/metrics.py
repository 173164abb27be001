"""Pure metrics: execution accuracy as BIRD computes it, numbers in answers, link
precision/recall/F1, and the mean and standard error reports are built from."""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, time
from decimal import Decimal
from itertools import permutations, product
from typing import Any

import sqlglot
from sqlglot import exp

# Above this many columns, trying every column order costs too much; rows are then compared
# with their values sorted, which only loses which value sat in which column.
MAX_PERMUTED_COLUMNS = 6


def normalize_value(value: Any) -> Any:
    """A cell as compared: 3, 3.0 and True→1 alike; floats to 6 decimals (SQLite and
    PostgreSQL disagree in the last bits of an average); other values as they are."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, Decimal):
        value = float(value)
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            return str(value)
        rounded = round(value, 6)
        return int(rounded) if rounded.is_integer() else rounded
    if isinstance(value, dict | list):
        return repr(value)
    return value


def row_values(row: dict[str, Any]) -> tuple[Any, ...]:
    """A result row as a tuple in column order, without the internal `__` fields."""
    return tuple(normalize_value(v) for k, v in row.items() if not k.startswith("__"))


def query_orders(query: str) -> bool:
    """Whether the query's outermost SELECT has an ORDER BY (so the order is part of the answer)."""
    try:
        tree = sqlglot.parse_one(query)
    except sqlglot.errors.ParseError:
        return False
    return tree.args.get("order") is not None if isinstance(tree, exp.Query) else False


def _sort_key(value: Any) -> tuple[str, str]:
    return (type(value).__name__, repr(value))


def results_match(
    predicted: Sequence[dict[str, Any]],
    gold: Sequence[dict[str, Any]],
    *,
    ordered: bool,
    any_column_order: bool = False,
    extra_columns: bool = False,
) -> bool:
    """BIRD's execution accuracy: the predicted rows equal the gold rows as sets of value
    tuples (column names do not matter); as lists when the order matters.

    With `extra_columns` the predicted rows may also carry columns the gold has not, as
    sql-eval's `subset_df` allows: each gold column is paired with a predicted column
    holding the same values, and the rows are compared on the paired columns."""
    pred_rows = [row_values(r) for r in predicted]
    gold_rows = [row_values(r) for r in gold]
    if extra_columns and pred_rows and gold_rows and len(pred_rows[0]) > len(gold_rows[0]):
        return any(
            _same([tuple(r[i] for i in pairing) for r in pred_rows], gold_rows, ordered)
            for pairing in _column_pairings(pred_rows, gold_rows)
        )
    if not any_column_order:
        return _same(pred_rows, gold_rows, ordered)
    width = len(gold_rows[0]) if gold_rows else 0
    if pred_rows and len(pred_rows[0]) != width:
        return False
    if width > MAX_PERMUTED_COLUMNS:
        resorted = [tuple(sorted(r, key=_sort_key)) for r in pred_rows]
        return _same(resorted, [tuple(sorted(r, key=_sort_key)) for r in gold_rows], ordered)
    return any(
        _same([tuple(r[i] for i in order) for r in pred_rows], gold_rows, ordered)
        for order in permutations(range(width))
    )


def mismatch(
    predicted: Sequence[dict[str, Any]],
    gold: Sequence[dict[str, Any]],
    *,
    ordered: bool,
    any_column_order: bool = False,
    extra_columns: bool = False,
) -> str:
    """Why rows that do not match the gold rows differ, as a category a report counts
    (never the values): "empty", "columns missing" (fewer columns than the gold's), "order"
    (the right rows in another order), "more rows", "fewer rows", or "other values" (as many
    rows, not the same)."""
    if gold and not predicted:
        return "empty"
    if predicted and gold and len(row_values(predicted[0])) < len(row_values(gold[0])):
        return "columns missing"
    flags = {"any_column_order": any_column_order, "extra_columns": extra_columns}
    if ordered and results_match(predicted, gold, ordered=False, **flags):
        return "order"
    if len(predicted) != len(gold):
        return "more rows" if len(predicted) > len(gold) else "fewer rows"
    return "other values"


def _column_pairings(pred_rows: list[tuple[Any, ...]], gold_rows: list[tuple[Any, ...]]) -> Iterable[tuple[int, ...]]:
    """For each gold column in turn, a distinct predicted column with the same set of values."""
    width = len(gold_rows[0])
    pred_columns = [{r[i] for r in pred_rows} for i in range(len(pred_rows[0]))]
    candidates = [
        [i for i, values in enumerate(pred_columns) if values == {r[g] for r in gold_rows}] for g in range(width)
    ]
    return (pairing for pairing in product(*candidates) if len(set(pairing)) == width)


def _same(predicted: list[tuple[Any, ...]], gold: list[tuple[Any, ...]], ordered: bool) -> bool:
    return predicted == gold if ordered else set(predicted) == set(gold)


def rows_contain(rows: Sequence[dict[str, Any]], values: Iterable[Any]) -> list[Any]:
    """The wanted values that appear in no cell of the rows (text compared case-insensitively)."""
    cells = {_cell_key(v) for row in rows for k, v in row.items() if not k.startswith("__")}
    return [v for v in values if _cell_key(v) not in cells]


def _cell_key(value: Any) -> Any:
    value = normalize_value(value)
    return value.casefold() if isinstance(value, str) else value


_NUMBER = re.compile(r"(?<![\w.])(?:[-−]?\d{1,3}(?:,\d{3})+(?:\.\d+)?|[-−]?\d+(?:\.\d+)?)")


def numbers_in(text: str) -> list[float]:
    """Every number written in the text: `1,234.5`, `-3`, `42%` → 1234.5, -3, 42."""
    return [float(m.replace(",", "").replace("−", "-")) for m in _NUMBER.findall(text)]


def numeric_match(text: str, expected: float, tolerance: float = 0.0) -> float | None:
    """The number in the text closest to `expected` if within tolerance, else None."""
    allowed = tolerance + 1e-9 * max(1.0, abs(expected))
    found = [n for n in numbers_in(text) if abs(n - expected) <= allowed]
    return min(found, key=lambda n: abs(n - expected)) if found else None


@dataclass(frozen=True)
class LinkScore:
    precision: float
    recall: float
    f1: float
    true_positives: int
    predicted: int
    gold: int
    match_type_agreement: float | None  # of the links found, how many have the gold matchType


def link_key(origin: str, destination: str) -> frozenset[str]:
    """A link regardless of direction: a join key is the same link both ways."""
    return frozenset((origin.strip(), destination.strip()))


def link_scores(predicted: Iterable[tuple[str, str, str]], gold: Iterable[tuple[str, str, str | None]]) -> LinkScore:
    """Precision/recall/F1 of predicted (origin, destination, matchType) against gold links."""
    pred = {link_key(o, d): t for o, d, t in predicted}
    want = {link_key(o, d): t for o, d, t in gold}
    found = pred.keys() & want.keys()
    tp = len(found)
    precision = tp / len(pred) if pred else (1.0 if not want else 0.0)
    recall = tp / len(want) if want else 1.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    typed = [k for k in found if want[k]]
    agreement = sum(pred[k] == want[k] for k in typed) / len(typed) if typed else None
    return LinkScore(precision, recall, f1, tp, len(pred), len(want), agreement)


@dataclass(frozen=True)
class FieldScore:
    """Extraction scored per field: of the fields the gold rows hold (plus those of rows the
    extraction made up), how many came out with the gold value, in the field's type."""

    right: int
    total: int
    wrong: list[str]  # "row 2 price: 9.99 != '9,99 €'", for the report

    @property
    def accuracy(self) -> float:
        return self.right / self.total if self.total else 1.0


_ISO_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")


def field_value(value: Any) -> Any:
    """A value as compared: empty is None, numbers to 6 decimals (an integer and a real
    alike), text without case or repeated spaces, a date-time at midnight as its date."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float | Decimal):
        return normalize_value(float(value))
    if isinstance(value, datetime | date):
        value = value.isoformat()
    text = " ".join(str(value).split())
    if _ISO_DATE.match(text):
        try:
            stamp = datetime.fromisoformat(text)
        except ValueError:
            return text.casefold()
        stamp = stamp.astimezone(UTC).replace(tzinfo=None) if stamp.tzinfo else stamp
        return stamp.date().isoformat() if stamp.time() == time() else stamp.isoformat()
    return text.casefold()


def field_scores(
    predicted: Sequence[dict[str, Any]], gold: Sequence[dict[str, Any]], key: str | None = None
) -> FieldScore:
    """Each gold row paired with one predicted row (by `key`'s value, else the unpaired row
    agreeing on most fields), then every gold field compared. A gold row with no partner
    has all its fields wrong; a predicted row with no partner counts its non-empty fields
    as wrong."""
    remaining = list(range(len(predicted)))
    right = total = 0
    wrong: list[str] = []
    for number, want in enumerate(gold, start=1):
        fields = list(want)
        agreeing = [
            (sum(field_value(predicted[i].get(f)) == field_value(want[f]) for f in fields), -i, i) for i in remaining
        ]
        if key is not None:
            agreeing = [a for a in agreeing if field_value(predicted[a[2]].get(key)) == field_value(want[key])]
        partner = max(agreeing)[2] if agreeing else None
        if partner is not None:
            remaining.remove(partner)
        for name in fields:
            total += 1
            got = None if partner is None else predicted[partner].get(name)
            if field_value(got) == field_value(want[name]):
                right += 1
            elif len(wrong) < 20:
                wrong.append(f"row {number} {name}: {got!r} != {want[name]!r}")
    for index in remaining:
        made_up = [name for name, value in predicted[index].items() if field_value(value) is not None]
        total += len(made_up)
        if made_up and len(wrong) < 20:
            wrong.append(f"a row not in the file: {predicted[index]!r}")
    return FieldScore(right, total, wrong)


@dataclass(frozen=True)
class Estimate:
    mean: float
    se: float  # standard error of the mean
    n: int

    def __str__(self) -> str:
        return f"{self.mean:.3f} ± {self.se:.3f}"


def estimate(values: Sequence[float]) -> Estimate:
    """Mean and standard error; for 0/1 values this is the binomial sqrt(p(1-p)/n)."""
    n = len(values)
    if n == 0:
        return Estimate(0.0, 0.0, 0)
    mean = sum(values) / n
    if n == 1:
        return Estimate(mean, 0.0, 1)
    if all(v in (0, 1) for v in values):
        return Estimate(mean, math.sqrt(mean * (1 - mean) / n), n)
    variance = sum((v - mean) ** 2 for v in values) / (n - 1)
    return Estimate(mean, math.sqrt(variance / n), n)


def percentile(values: Sequence[float], fraction: float) -> float:
    """Nearest-rank percentile (0 for no values)."""
    if not values:
        return 0.0
    ordered = sorted(values)
    rank = max(1, math.ceil(fraction * len(ordered)))
    return ordered[rank - 1]
