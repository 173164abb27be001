"""The SQL shape of a dataset's tables: a staging table holds `__id` and the fields; a
dataset's table adds `__ingestion_id` and `__source`, which publishing adds to a stage as
column defaults (`storage.rows` says why)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import sqlalchemy as sa
from alembic.migration import MigrationContext
from alembic.operations import Operations

from datawell.storage.tables import Dataset

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


def stage_table(name: str, columns: Mapping[str, str], metadata: sa.MetaData | None = None) -> sa.Table:
    """A staging table: the rows' ids and the fields."""
    return sa.Table(
        name,
        metadata or sa.MetaData(),
        sa.Column("__id", sa.String(36)),  # unique by construction; no index to maintain
        *(sa.Column(field, column_type(kind)) for field, kind in columns.items()),
    )


def table_for(name: str, columns: Mapping[str, str], metadata: sa.MetaData | None = None) -> sa.Table:
    """A dataset's table: a staging table's columns, then the ingestion and file of each row."""
    table = stage_table(name, columns, metadata)
    for column in origin_columns():
        table.append_column(column)
    return table


def origin_columns(ingestion_id: str | None = None, source: str | None = None) -> list[sa.Column[Any]]:
    """`__ingestion_id` and `__source`, with these values as their defaults when given."""
    return [
        sa.Column("__ingestion_id", sa.String(36), server_default=ingestion_id),
        sa.Column("__source", sa.Text(), server_default=source),
    ]


def add_origin(connection: sa.Connection, stage: str, ingestion_id: str, source: str) -> None:
    """Give every row of `stage` its ingestion and file, as column defaults (no row rewritten)."""
    operations = Operations(MigrationContext.configure(connection))
    for column in origin_columns(ingestion_id, source):
        operations.add_column(stage, column)


def drop_origin_defaults(connection: sa.Connection, table: str) -> None:
    """A published table's rows keep their values; later inserts must name theirs. SQLite
    cannot drop a default (its rows written before the column rely on it): there, every
    insert names both values."""
    if connection.dialect.name == "postgresql":
        operations = Operations(MigrationContext.configure(connection))
        for column in origin_columns():
            operations.alter_column(table, column.name, server_default=None)
