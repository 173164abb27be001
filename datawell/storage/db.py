"""The metadata database: engine, sessions and migrations."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from functools import partial
from pathlib import Path
from typing import Any

import aiosqlite
from alembic import command
from alembic.config import Config
from sqlalchemy import event, inspect, make_url, text
from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, AsyncSession, async_sessionmaker, create_async_engine

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


def create_engine(url: str, *, lazy: bool = False) -> AsyncEngine:
    """An engine; `lazy` (SQLite): its commits are not synced to disk (`Database.session`)."""
    if url.startswith("sqlite"):
        database = make_url(url).database or ":memory:"
        engine = create_async_engine(url, async_creator=_sqlite_connector(database))
        event.listen(engine.sync_engine, "connect", partial(_sqlite_pragmas, lazy=lazy))
        return engine
    return create_async_engine(url, pool_pre_ping=True)


async def has_table(connection: AsyncConnection, name: str) -> bool:
    """Whether a table exists (a dataset's row table appears with its first published rows)."""
    return bool(await connection.run_sync(lambda sync: inspect(sync).has_table(name)))


def _sqlite_pragmas(dbapi_connection: Any, _record: Any, *, lazy: bool = False) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA busy_timeout=30000")
    if lazy:
        cursor.execute("PRAGMA synchronous=NORMAL")
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
        # SQLite: a second engine whose commits are not synced (`session(durable=False)`).
        on_file = self.dialect == "sqlite" and (make_url(url).database or ":memory:") != ":memory:"
        self.lazy_engine = create_engine(url, lazy=True) if on_file else None
        self.lazy_sessions = async_sessionmaker(self.lazy_engine or self.engine, expire_on_commit=False)
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
    async def session(self, *, durable: bool = True) -> AsyncIterator[AsyncSession]:
        """A session whose transaction commits on success and rolls back on error. Not
        `durable`: the commit is not waited onto the disk (a running attempt's progress and
        lease, which a crash makes moot): SQLite's WAL then keeps it in the log, synced by the
        next durable commit; PostgreSQL commits it without waiting for its WAL flush."""
        sessions = self.sessions if durable else self.lazy_sessions
        async with sessions() as session, session.begin():
            if not durable and self.dialect == "postgresql":
                await session.execute(text("SET LOCAL synchronous_commit TO OFF"))
            yield session

    @asynccontextmanager
    async def read(self) -> AsyncIterator[AsyncSession]:
        """A session for reading only: no transaction is begun or committed explicitly. The
        hottest reads (token check, dataset listing) skip sessions altogether: `self.direct`."""
        async with self.sessions() as session:
            yield session

    async def close(self) -> None:
        await self.direct.close()
        if self.lazy_engine is not None:
            await self.lazy_engine.dispose()
        await self.engine.dispose()
