"""Pure metrics: execution accuracy as BIRD computes it, numbers in answers, link
precision/recall/F1, and the mean and standard error reports are built from."""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from decimal import Decimal
from itertools import permutations
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
) -> bool:
    """BIRD's execution accuracy: the predicted rows equal the gold rows as sets of value
    tuples (column names do not matter); as lists when the order matters."""
    pred_rows = [row_values(r) for r in predicted]
    gold_rows = [row_values(r) for r in gold]
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
