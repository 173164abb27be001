"""Python values of the fields' types as Arrow arrays, and a stored value as a result row
shows it. The row store writes these batches; ingestion and the hints build them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import pyarrow as pa

ARROW_TYPES: dict[str, pa.DataType] = {
    "integer": pa.int64(),
    "real": pa.float64(),
    "text": pa.string(),
    "boolean": pa.bool_(),
    "timestamp": pa.timestamp("us"),  # UTC
}


def arrow_rows(rows: Sequence[Mapping[str, Any]], columns: Mapping[str, str]) -> pa.RecordBatch:
    """Rows of Python values (already of the fields' types) as an Arrow batch."""
    arrays = [arrow_column([row.get(f) for row in rows], kind) for f, kind in columns.items()]
    return pa.RecordBatch.from_arrays(arrays, names=list(columns))


def arrow_column(values: Sequence[Any], kind: str) -> pa.Array:
    """Python values of a field's type as an Arrow array of it."""
    if kind == "timestamp":
        values = [_utc(v) for v in values]
    return pa.array(values, ARROW_TYPES[kind])


def _utc(stamp: Any) -> Any:
    """An aware timestamp as the naive UTC one Arrow's `timestamp("us")` holds."""
    if isinstance(stamp, datetime) and stamp.tzinfo is not None:
        return stamp.astimezone(UTC).replace(tzinfo=None)
    return stamp


def to_json_value(value: Any) -> Any:
    """A column value as it appears in a result row."""
    if isinstance(value, datetime):
        return value.isoformat()
    return value
