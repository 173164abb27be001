"""The catalog: what a caller can query in a namespace, as the models see it.
The graphs, evals and agents build against the names and signatures here."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

from datawell.storage.access import NamespaceRef
from datawell.storage.datasets import DatasetRef
from datawell.storage.db import Database
from datawell.storage.hints import DATE_TIME, ColumnHint, hints_of
from datawell.storage.row_tables import dataset_columns
from datawell.storage.rows import RowStore

NOTABLE_NULLS = 0.05  # a column empty at least this often says so


@dataclass(frozen=True)
class TableInfo:
    name: str  # as a query names it: `orders` in the namespace, `owner.namespace.orders` across
    dataset_id: str
    namespace: NamespaceRef
    physical: str  # the dataset's row table; never shown to users or models
    description: str
    columns: dict[str, str]  # field -> type (integer, real, text, boolean, timestamp)
    column_descriptions: dict[str, str]
    hints: dict[str, ColumnHint] = field(default_factory=dict)  # field -> facts about its values
    row_count: int = 0

    @property
    def dataset_name(self) -> str:
        return self.name.rsplit(".", 1)[-1]

    def coordinate(self) -> dict[str, str]:
        """The dataset as SPEC's DatasetCoordinate."""
        return {"owner": self.namespace.owner, "namespace": self.namespace.name, "datasetName": self.dataset_name}


def table_info(dataset: DatasetRef, name: str) -> TableInfo:
    record = dataset.record
    return TableInfo(
        name=name,
        dataset_id=record.id,
        namespace=dataset.namespace,
        physical=record.table_name,
        description=record.description or "",
        columns=dataset_columns(record),
        column_descriptions={k: str(v) for k, v in record.schema_definition.items()},
    )


async def with_contents(
    db: Database, rows: RowStore, tables: Sequence[tuple[DatasetRef, TableInfo]]
) -> list[TableInfo]:
    """The tables with their row counts and value hints, as stored when their rows changed."""
    found = await hints_of(db, rows, [dataset.record for dataset, _ in tables])
    return [
        replace(table, hints=found[dataset.record.id].columns, row_count=found[dataset.record.id].rows)
        for dataset, table in tables
    ]


def describe_values(hint: ColumnHint, rows: int) -> str:
    """What a query writer should know of a column's values, in a few words."""
    if rows and hint.nulls == rows:
        return "always null"
    told = _range(hint)
    if hint.values:
        listed = ", ".join(_literal(v) for v in hint.values)
        if hint.distinct_at_least is not None:
            told = f"{hint.distinct_at_least:,}+ distinct, e.g. {listed}"
        elif hint.distinct is None:
            told = f"e.g. {listed}"
        elif hint.distinct == len(hint.values):
            told = f"one of {listed}"
        elif hint.distinct == rows - hint.nulls:
            told = f"unique, e.g. {listed}"
        else:
            told = f"{hint.distinct:,} distinct, e.g. {listed}"
    if rows and hint.nulls / rows >= NOTABLE_NULLS:
        told += ("; " if told else "") + f"{hint.nulls / rows:.0%} null"
    return told


# Whole numbers in this range, in a column named or described as a time, are Unix seconds
# (1973 to 2100): the catalog says so, with their dates, so the writer converts them.
EPOCH_SECONDS = (100_000_000, 4_102_444_800)
TIME_WORDS = re.compile(r"time|date|epoch|unix|_at$|^at_|created|updated|modified", re.I)


def unix_seconds(name: str, description: str, hint: ColumnHint) -> bool:
    """Whether a column holds Unix seconds: whole numbers of 1973 to 2100, named or described as a time."""
    low, high = hint.low, hint.high
    if hint.type != "integer" or not isinstance(low, int | float) or not isinstance(high, int | float):
        return False
    return EPOCH_SECONDS[0] <= low <= high <= EPOCH_SECONDS[1] and bool(TIME_WORDS.search(f"{name} {description}"))


def epoch_note(name: str, description: str, hint: ColumnHint) -> str:
    """For a column of Unix seconds: what they are and how a query reads them as timestamps."""
    if not unix_seconds(name, description, hint):
        return ""
    first, last = (datetime.fromtimestamp(float(v or 0), UTC).strftime("%Y-%m-%d %H:%M") for v in (hint.low, hint.high))
    return f"Unix seconds ({first} to {last} UTC): as a timestamp, to_timestamp({name})"


def _range(hint: ColumnHint) -> str:
    if hint.low is None:
        return ""
    if hint.format is None:
        return f"{_number(hint.low)} to {_number(hint.high)}"
    # Timestamps unquoted, with the form literals compared to them should take.
    zone = ", UTC" if hint.format == DATE_TIME else ""
    return f"{hint.low} to {hint.high} ({hint.format}{zone})"


def _number(value: Any) -> str:
    shown = repr(value)
    return f"{value:.6g}" if isinstance(value, float) and len(shown) > 12 else shown


def _literal(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    return repr(value)


@dataclass(frozen=True)
class Catalog:
    namespace: NamespaceRef
    tables: list[TableInfo]

    def table(self, name: str) -> TableInfo | None:
        return next((t for t in self.tables if t.name == name), None)

    def fields(self) -> str:
        """Each dataset with its fields, in one line: `orders (id, amount); customers (id, name)`."""
        return "; ".join(f"{t.name} ({', '.join(t.columns)})" for t in self.tables) or "no datasets"

    def render(self) -> str:
        """The catalog as text for a prompt."""
        if not self.tables:
            return f"Namespace {self.namespace} has no datasets."
        lines = [f"Namespace {self.namespace}: {len(self.tables)} table(s)."]
        for table in self.tables:
            about = f": {table.description.strip()}" if table.description.strip() else ""
            lines.append("")
            lines.append(f"Table {table.name} ({table.row_count:,} rows){about}")
            for name, kind in table.columns.items():
                described = table.column_descriptions.get(name, "").strip()
                hint = table.hints.get(name)
                told = describe_values(hint, table.row_count) if hint is not None else ""
                epoch = epoch_note(name, described, hint) if hint is not None else ""
                about = "; ".join(part for part in (described, told, epoch) if part)
                lines.append(f"  {name} {kind}: {about}" if about else f"  {name} {kind}")
        return "\n".join(lines)
