"""The catalog: what a caller can query in a namespace, as the models see it.
The graphs, evals and agents build against the names and signatures here."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import sqlalchemy as sa

from datawell.storage.access import NamespaceRef
from datawell.storage.datasets import DatasetRef
from datawell.storage.rows import RowStore, dataset_columns, to_json_value

SAMPLE_ROWS = 200  # rows read to find sample values
SAMPLES_PER_FIELD = 3
SAMPLE_TEXT_LENGTH = 60


@dataclass(frozen=True)
class TableInfo:
    name: str  # as a query names it: `orders` in the namespace, `owner.namespace.orders` across
    dataset_id: str
    namespace: NamespaceRef
    physical: str  # the dataset's row table; never shown to users or models
    description: str
    columns: dict[str, str]  # field -> type (integer, real, text, boolean, timestamp)
    column_descriptions: dict[str, str]
    samples: dict[str, list[Any]] = field(default_factory=dict)  # field -> a few distinct values
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


async def with_contents(rows: RowStore, dataset: DatasetRef, table: TableInfo) -> TableInfo:
    """The table with its row count and a few distinct sample values per field."""
    physical = rows.table(dataset.record)
    async with rows.engine.connect() as connection:
        if not await connection.run_sync(lambda c: sa.inspect(c).has_table(physical.name)):
            return table
        count = int((await connection.execute(sa.select(sa.func.count()).select_from(physical))).scalar_one())
        fields = [physical.c[f] for f in table.columns]
        result = await connection.execute(sa.select(*fields).limit(SAMPLE_ROWS))
        samples: dict[str, list[Any]] = {f: [] for f in table.columns}
        for row in result:
            for name, value in zip(table.columns, row, strict=True):
                value = _sample(value)
                kept = samples[name]
                if value is not None and len(kept) < SAMPLES_PER_FIELD and value not in kept:
                    kept.append(value)
    return replace(table, samples=samples, row_count=count)


def _sample(value: Any) -> Any:
    value = to_json_value(value)
    if isinstance(value, str) and len(value) > SAMPLE_TEXT_LENGTH:
        return value[: SAMPLE_TEXT_LENGTH - 1] + "…"
    return value


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
                samples = table.samples.get(name) or []
                line = f"  {name} {kind}"
                if described:
                    line += f": {described}"
                if samples:
                    line += f" (e.g. {', '.join(_literal(v) for v in samples)})"
                lines.append(line)
        return "\n".join(lines)
