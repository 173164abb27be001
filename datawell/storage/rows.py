"""Dataset rows: one real SQL table per dataset (columns = the schema's fields plus
`__id`, `__ingestion_id`, `__source`).

An ingestion writes into its own staging table; `publish` moves the rows into the
dataset's table in one transaction and drops the staging table. So a failed or killed
attempt leaves nothing visible, and taking an attempt again starts from an empty stage."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from itertools import repeat
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncEngine

from datawell.storage.db import create_engine
from datawell.storage.tables import Dataset

FIELD_TYPES = ("integer", "real", "text", "boolean", "timestamp")
INTERNAL_COLUMNS = ("__id", "__ingestion_id", "__source")
_SQL_TYPES: dict[str, Any] = {
    "integer": sa.BigInteger(),
    "real": sa.Float(),
    "text": sa.Text(),
    "boolean": sa.Boolean(),
    "timestamp": sa.DateTime(timezone=True),
}


def column_type(field_type: str) -> Any:
    return _SQL_TYPES[field_type]


def staging_name(ingestion_id: str) -> str:
    return "stg_" + re.sub(r"[^0-9a-f]", "", ingestion_id.lower())[:32]


def dataset_columns(dataset: Dataset) -> dict[str, str]:
    """Field name -> type for every schema field, `text` where ingestion inferred nothing yet."""
    return {name: dataset.field_types.get(name, "text") for name in dataset.schema_definition}


def table_for(name: str, columns: Mapping[str, str], metadata: sa.MetaData | None = None) -> sa.Table:
    return sa.Table(
        name,
        metadata or sa.MetaData(),
        sa.Column("__id", sa.String(36), primary_key=True),
        sa.Column("__ingestion_id", sa.String(36), index=False),
        sa.Column("__source", sa.Text()),
        *(sa.Column(field, column_type(kind)) for field, kind in columns.items()),
    )


class RowStore:
    """Reads and writes dataset rows in the rows database."""

    def __init__(self, url: str) -> None:
        self.engine: AsyncEngine = create_engine(url)

    @property
    def dialect(self) -> str:
        return self.engine.dialect.name

    def table(self, dataset: Dataset) -> sa.Table:
        return table_for(dataset.table_name, dataset_columns(dataset))

    async def ensure_table(self, dataset: Dataset) -> sa.Table:
        table = self.table(dataset)
        try:
            async with self.engine.begin() as connection:
                await connection.run_sync(lambda c: table.create(c, checkfirst=True))
        except sa.exc.DBAPIError:
            # Two ingestions of a new dataset publishing at once: both checked, one created it.
            async with self.engine.connect() as connection:
                if not await connection.run_sync(lambda c: sa.inspect(c).has_table(table.name)):
                    raise
        return table

    async def stage(self, dataset: Dataset, ingestion_id: str) -> None:
        """A fresh, empty staging table for this ingestion (dropping any left by a dead worker)."""
        staged = table_for(staging_name(ingestion_id), dataset_columns(dataset))
        async with self.engine.begin() as connection:
            await connection.run_sync(lambda c: staged.drop(c, checkfirst=True))
            await connection.run_sync(lambda c: staged.create(c))

    async def write(
        self, dataset: Dataset, ingestion_id: str, rows: Sequence[Mapping[str, Any]], source: str
    ) -> list[str]:
        """Append a batch of rows (field name -> value, already of the fields' types) to the
        ingestion's staging table; returns the rows' `__id`s in order, so the caller can embed
        them without reading them back."""
        if not rows:
            return []
        columns = dataset_columns(dataset)
        ids = new_row_ids(len(rows))
        names = [*INTERNAL_COLUMNS, *columns]
        values = {f: [row.get(f) for row in rows] for f in columns}
        if self.dialect == "sqlite":
            for field, kind in columns.items():
                if kind == "timestamp":
                    values[field] = [_sqlite_stamp(v) for v in values[field]]
        records = list(zip(ids, repeat(ingestion_id), repeat(source), *values.values(), strict=False))
        table = staging_name(ingestion_id)
        # Bulk paths per backend: SQLAlchemy's executemany costs about 100 µs a row, binary
        # COPY and the driver's own executemany a few.
        if self.dialect == "postgresql":
            async with self.engine.connect() as connection:
                raw = await connection.get_raw_connection()
                await raw.driver_connection.copy_records_to_table(table, records=records, columns=names)  # type: ignore[union-attr]
        elif self.dialect == "sqlite":
            quoted = ", ".join(f'"{n}"' for n in names)
            statement = f'INSERT INTO "{table}" ({quoted}) VALUES ({", ".join("?" * len(names))})'
            async with self.engine.begin() as connection:
                await connection.exec_driver_sql(statement, records)  # type: ignore[arg-type]
        else:
            staged = table_for(table, columns)
            async with self.engine.begin() as connection:
                await connection.execute(staged.insert(), [dict(zip(names, r, strict=True)) for r in records])
        return ids

    async def publish(self, dataset: Dataset, ingestion_id: str) -> int:
        """Make the staged rows visible, atomically; returns how many there were."""
        table = await self.ensure_table(dataset)
        staged = table_for(staging_name(ingestion_id), dataset_columns(dataset))
        columns = [c.name for c in table.columns]
        async with self.engine.begin() as connection:
            # The rows of an attempt that published before its worker died are not published twice.
            await connection.execute(table.delete().where(table.c["__ingestion_id"] == ingestion_id))
            result = await connection.execute(
                table.insert().from_select(columns, sa.select(*(staged.c[c] for c in columns)))
            )
            await connection.run_sync(lambda c: staged.drop(c))
        return int(result.rowcount or 0)

    async def staged_ids(self, dataset: Dataset, ingestion_id: str) -> list[tuple[str, dict[str, Any]]]:
        """(__id, row) of every staged row, for embedding before publication."""
        staged = table_for(staging_name(ingestion_id), dataset_columns(dataset))
        async with self.engine.connect() as connection:
            result = await connection.execute(sa.select(staged))
            return [(row["__id"], dict(row)) for row in result.mappings()]

    async def discard(self, dataset: Dataset, ingestion_id: str) -> None:
        staged = table_for(staging_name(ingestion_id), dataset_columns(dataset))
        async with self.engine.begin() as connection:
            await connection.run_sync(lambda c: staged.drop(c, checkfirst=True))

    async def unpublish(self, dataset: Dataset, ingestion_id: str) -> int:
        """Delete the published rows of one ingestion (cancelled as it published); how many."""
        table = self.table(dataset)
        async with self.engine.begin() as connection:
            if not await connection.run_sync(lambda c: sa.inspect(c).has_table(table.name)):
                return 0
            result = await connection.execute(table.delete().where(table.c["__ingestion_id"] == ingestion_id))
        return int(result.rowcount or 0)

    async def clear(self, dataset: Dataset) -> int:
        """Delete every row of the dataset; returns how many."""
        table = self.table(dataset)
        async with self.engine.begin() as connection:
            exists = await connection.run_sync(lambda c: sa.inspect(c).has_table(table.name))
            if not exists:
                return 0
            result = await connection.execute(table.delete())
        return int(result.rowcount or 0)

    async def count(self, dataset: Dataset) -> int:
        table = self.table(dataset)
        async with self.engine.connect() as connection:
            exists = await connection.run_sync(lambda c: sa.inspect(c).has_table(table.name))
            if not exists:
                return 0
            return int((await connection.execute(sa.select(sa.func.count()).select_from(table))).scalar_one())

    async def close(self) -> None:
        await self.engine.dispose()


def _sqlite_stamp(stamp: Any) -> Any:
    """A timestamp as SQLAlchemy stores it in SQLite (UTC, no zone), so reads parse it back."""
    if not isinstance(stamp, datetime):
        return stamp
    if stamp.tzinfo is not None:
        stamp = stamp.astimezone(UTC).replace(tzinfo=None)
    return stamp.isoformat(" ", "microseconds")


def new_row_ids(count: int) -> list[str]:
    """`count` random (version 4) UUIDs as text; four times faster than `uuid.uuid4()` a row."""
    raw = bytearray(os.urandom(16 * count))
    raw[6::16] = bytes(b & 0x0F | 0x40 for b in raw[6::16])
    raw[8::16] = bytes(b & 0x3F | 0x80 for b in raw[8::16])
    h = raw.hex()
    return [
        f"{h[i : i + 8]}-{h[i + 8 : i + 12]}-{h[i + 12 : i + 16]}-{h[i + 16 : i + 20]}-{h[i + 20 : i + 32]}"
        for i in range(0, 32 * count, 32)
    ]


def to_json_value(value: Any) -> Any:
    """A column value as it appears in a result row."""
    if isinstance(value, datetime):
        return value.isoformat()
    return value
