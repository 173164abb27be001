"""The hot read path: the bearer-token check and the dataset reads of the API go straight
through the database driver (aiosqlite or asyncpg), one round trip each, without
SQLAlchemy's async adapter, session and ORM, which cost most of a request's time
(docs/decisions.md, "API read speed"). Everything else, and every write, goes through
`Database`'s engine. Nothing here caches: each call reads the committed state, so a write
by any process (a revocation from the CLI) is seen by the next request.

SQL is written once with PostgreSQL's `$1` placeholders; SQLite reads `?1` the same way."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import aiosqlite
import asyncpg
from sqlalchemy.engine import make_url

Row = Sequence[Any]


class DirectReads:
    """Read-only queries on the metadata database, opened on first use."""

    def __init__(self, url: str) -> None:
        parsed = make_url(url)
        self.sqlite_path: Path | None = None
        self.dsn = ""
        if parsed.get_backend_name() == "sqlite":
            if not parsed.database or parsed.database == ":memory:":
                raise ValueError("the direct read path needs a SQLite database file")
            self.sqlite_path = Path(parsed.database)
        else:
            self.dsn = parsed.set(drivername="postgresql").render_as_string(hide_password=False)
        self._sqlite: aiosqlite.Connection | None = None
        self._pool: asyncpg.Pool | None = None
        self._opening = asyncio.Lock()

    async def fetch(self, sql: str, *args: Any) -> list[Row]:
        if self.sqlite_path is None:
            pool = self._pool or await self._open_pool()
            return list(await pool.fetch(sql, *args))
        connection = self._sqlite or await self._open_sqlite()
        return list(await connection.execute_fetchall(sql.replace("$", "?"), args))

    async def _open_sqlite(self) -> aiosqlite.Connection:
        # One connection serves every request, as in the minimal peer app: its statements run
        # one after another on aiosqlite's thread, each outside a transaction, so each sees
        # the newest commit (WAL lets it read while others write).
        async with self._opening:
            if self._sqlite is None:
                assert self.sqlite_path is not None
                connection = await aiosqlite.connect(self.sqlite_path, timeout=30)
                await connection.execute("PRAGMA query_only=ON")
                self._sqlite = connection
            return self._sqlite

    async def _open_pool(self) -> asyncpg.Pool:
        async with self._opening:
            if self._pool is None:
                self._pool = await asyncpg.create_pool(self.dsn, min_size=1, max_size=5)
            return self._pool

    async def close(self) -> None:
        if self._sqlite is not None:
            await self._sqlite.close()
            self._sqlite = None
        if self._pool is not None:
            await self._pool.close()
            self._pool = None


def timestamp(value: datetime | str) -> datetime:
    """A UTC timestamp column as `UTCDateTime` reads it (SQLite gives the text SQLAlchemy wrote)."""
    if isinstance(value, str):
        value = datetime.fromisoformat(value)
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def json_value(value: str | None) -> Any:
    """A JSON column: both drivers give its text."""
    return None if value is None else json.loads(value)
