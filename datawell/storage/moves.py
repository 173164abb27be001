"""Row tables that an older Datawell kept in the SQLite metadata database move to the rows
database, once, at start, before anything reads or writes them.

Each table is copied in one transaction of the rows database and then dropped from the metadata
database. A start that dies between the two finds the table in both places and copies it again
(replacing the earlier copy): nothing else runs before the move has finished, so the copy in the
metadata database is still the whole table."""

from __future__ import annotations

import asyncio
import logging
import re
import sqlite3

from sqlalchemy.engine import make_url

log = logging.getLogger(__name__)
_ROW_TABLES = (
    r"SELECT name, sql FROM main.sqlite_master WHERE type = 'table' AND (name GLOB 'ds_*' OR name GLOB 'stg_*')"
)


async def move_row_tables(metadata_url: str, rows_url: str) -> None:
    """Move `ds_*` and `stg_*` tables from the metadata database to the rows database when both
    are SQLite files and different ones."""
    metadata, rows = make_url(metadata_url), make_url(rows_url)
    if metadata.get_backend_name() != "sqlite" or rows.get_backend_name() != "sqlite":
        return
    if not metadata.database or not rows.database or metadata.database == rows.database:
        return
    await asyncio.to_thread(_move, metadata.database, rows.database)


def _move(metadata_path: str, rows_path: str) -> None:
    connection = sqlite3.connect(metadata_path, isolation_level=None)
    try:
        tables = connection.execute(_ROW_TABLES).fetchall()
        if not tables:
            return
        connection.execute("ATTACH DATABASE ? AS rows", (rows_path,))
        for name, sql in tables:
            if not re.fullmatch(r"(ds|stg)_[0-9a-z_]+", name):
                continue  # not a name Datawell gives: leave it alone
            create = re.sub(rf'^CREATE TABLE\s+"?{name}"?', f'CREATE TABLE rows."{name}"', sql, count=1)
            connection.execute("BEGIN")
            connection.execute(f'DROP TABLE IF EXISTS rows."{name}"')
            connection.execute(create)
            connection.execute(f'INSERT INTO rows."{name}" SELECT * FROM main."{name}"')
            connection.execute("COMMIT")
            connection.execute(f'DROP TABLE main."{name}"')
            log.info("moved row table %s to the rows database %s", name, rows_path)
    finally:
        connection.close()
