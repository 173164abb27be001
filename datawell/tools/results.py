"""What comes back from the database, made into what callers see: JSON rows and QueryErrors."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import UTC, date, datetime, timedelta
from datetime import time as clock
from decimal import Decimal
from typing import Any

from datawell.errors import QueryError, SubError
from datawell.storage.tables import Dataset
from datawell.tools.catalog import TableInfo
from datawell.tools.checker import ID_COLUMN, NAIVE_TIMESTAMP, SCORE_COLUMN, CompiledQuery
from datawell.tools.sandbox import Refusal


def dataset_stub(table: TableInfo) -> Dataset:
    """Enough of a dataset record for the row store to create its (empty) table."""
    return Dataset(
        id=table.dataset_id,
        table_name=table.physical,
        schema_definition=table.column_descriptions or dict.fromkeys(table.columns, ""),
        field_types=table.columns,
    )


def missing_table(refusal: Refusal, tables: list[TableInfo]) -> bool:
    lowered = refusal.message.lower()
    return any(t.physical in refusal.message for t in tables) and (
        "no such table" in lowered or "does not exist" in lowered
    )


def query_error(refusal: Refusal, compiled: CompiledQuery, limit: float) -> QueryError:
    if refusal.kind == "time":
        text = f"the query ran longer than the time limit of {limit:g} s"
        return QueryError(text, sub_errors=[SubError("time_limit", text)])
    message = refusal.message
    for table in compiled.tables:  # users never see row-table names
        message = message.replace(table.physical, table.name)
    if refusal.kind == "size":
        text = f"the query's result is too large: {message}; select fewer or shorter values"
        return QueryError(text, sub_errors=[SubError("size_limit", text)])
    text = f"the database refused the query: {message}"
    return QueryError(text, sub_errors=[SubError("database_error", text)])


def result_row(compiled: CompiledQuery, columns: list[str], record: Sequence[Any]) -> dict[str, Any]:
    row: dict[str, Any] = {}
    metadata: dict[str, Any] = {}
    if compiled.dataset is not None:
        metadata["dataset"] = compiled.dataset.coordinate()
    for column, value in zip(columns, record, strict=True):
        if column == ID_COLUMN:
            metadata["id"] = value
        elif column == SCORE_COLUMN:
            metadata["score"] = float(value)
        else:
            key = column
            while key in row:  # SELECT a.x, b.x: both kept
                key += "_"
            row[key] = json_value(value, compiled.kinds.get(column))
    row["__metadata"] = metadata
    return row


def json_value(value: Any, kind: str | None = None) -> Any:
    """A database value as JSON, alike on every store (SQLite returns booleans as 0/1 and
    timestamps as text, in UTC)."""
    if value is None:
        return None
    if kind == "boolean" and isinstance(value, int):
        return bool(value)
    if kind in ("timestamp", NAIVE_TIMESTAMP) and isinstance(value, str):
        try:
            value = datetime.fromisoformat(value)
        except ValueError:
            return value
        if kind == NAIVE_TIMESTAMP:
            return value.replace(tzinfo=None).isoformat()
        return (value if value.tzinfo else value.replace(tzinfo=UTC)).isoformat()
    if isinstance(value, Decimal):
        exponent = value.as_tuple().exponent
        return int(value) if isinstance(exponent, int) and exponent >= 0 else float(value)
    if isinstance(value, datetime | date | clock):
        return value.isoformat()
    if isinstance(value, timedelta):
        return value.total_seconds()
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, bytes):
        return value.hex()
    if isinstance(value, list | tuple):
        return [json_value(v) for v in value]
    return value
