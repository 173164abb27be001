"""The metadata database: engine, sessions and migrations."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import aiosqlite
from alembic import command
from alembic.config import Config
from sqlalchemy import event, make_url
from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker, create_async_engine

from datawell.storage.direct import DirectReads

MIGRATIONS_DIR = Path(__file__).parent / "migrations"


class _SqliteConnection(aiosqlite.Connection):
    """aiosqlite's connection, stopped at most once.

    When a task is cancelled while it holds a connection, SQLAlchemy closes that connection in a
    shielded task and, once cancelled itself, stops aiosqlite's thread. The shielded `close()`
    then stops the thread a second time and waits for it forever, because the thread has left
    (omnilib/aiosqlite#369): the service would never shut down, and neither would a test's event
    loop. Here a second stop asks nothing of the thread."""

    def stop(self) -> asyncio.Future[Any] | None:
        if not self._running:
            return None
        return super().stop()


def _sqlite_connector(database: str) -> Callable[[], Awaitable[aiosqlite.Connection]]:
    def connect() -> Awaitable[aiosqlite.Connection]:
        connection = _SqliteConnection(lambda: sqlite3.connect(database, timeout=30, check_same_thread=False), 64)
        # As SQLAlchemy's own connect does: a process may end without closing its engine (a
        # command that refuses to start), and a pooled connection's thread must not keep it alive.
        connection._thread.daemon = True
        return connection

    return connect


def create_engine(url: str) -> AsyncEngine:
    if url.startswith("sqlite"):
        database = make_url(url).database or ":memory:"
        engine = create_async_engine(url, async_creator=_sqlite_connector(database))
        event.listen(engine.sync_engine, "connect", _sqlite_pragmas)
        return engine
    return create_async_engine(url, pool_pre_ping=True)


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA busy_timeout=30000")
    cursor.close()


def alembic_config(url: str) -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    config.set_main_option("sqlalchemy.url", url)
    return config


class Database:
    def __init__(self, url: str) -> None:
        self.url = url
        self.engine = create_engine(url)
        self.sessions = async_sessionmaker(self.engine, expire_on_commit=False)
        self.direct = DirectReads(url)  # the API's hot reads, past the ORM (`storage.direct`)

    @property
    def dialect(self) -> str:
        return self.engine.dialect.name

    async def migrate(self) -> None:
        """Bring the schema to the newest revision (idempotent)."""

        def upgrade(connection: Connection) -> None:
            config = alembic_config(self.url)
            config.attributes["connection"] = connection
            command.upgrade(config, "head")

        async with self.engine.begin() as connection:
            await connection.run_sync(upgrade)

    @asynccontextmanager
    async def session(self) -> AsyncIterator[AsyncSession]:
        """A session whose transaction commits on success and rolls back on error."""
        async with self.sessions() as session, session.begin():
            yield session

    @asynccontextmanager
    async def read(self) -> AsyncIterator[AsyncSession]:
        """A session for reading only: no transaction is begun or committed explicitly. The
        hottest reads (token check, dataset listing) skip sessions altogether: `self.direct`."""
        async with self.sessions() as session:
            yield session

    async def close(self) -> None:
        await self.direct.close()
        await self.engine.dispose()
