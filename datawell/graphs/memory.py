"""Conversation memory: the LangGraph checkpointer the assistant keeps its conversations in
(thread id = conversation id). SQLite in the data folder by default; the metadata
PostgreSQL database when the service runs on PostgreSQL, so several processes share it.

Opened on first use: most commands and requests never need it."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import aiosqlite
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
from psycopg.rows import dict_row
from psycopg_pool import AsyncConnectionPool

SQLITE_FILE = "conversations.sqlite"


def postgres_conninfo(database_url: str) -> str | None:
    """The libpq address of a SQLAlchemy PostgreSQL URL, or None for any other database."""
    scheme, sep, rest = database_url.partition("://")
    if not sep or not scheme.startswith("postgresql"):
        return None
    return f"postgresql://{rest}"


class ConversationMemory:
    def __init__(self, database_url: str, data_dir: Path) -> None:
        self.database_url = database_url
        self.data_dir = data_dir
        self._saver: BaseCheckpointSaver[str] | None = None
        self._sqlite: aiosqlite.Connection | None = None
        self._pool: AsyncConnectionPool | None = None
        self._lock = asyncio.Lock()

    async def saver(self) -> BaseCheckpointSaver[str]:
        async with self._lock:
            if self._saver is None:
                self._saver = await self._open()
            return self._saver

    async def _open(self) -> BaseCheckpointSaver[str]:
        conninfo = postgres_conninfo(self.database_url)
        if conninfo is None:
            self.data_dir.mkdir(parents=True, exist_ok=True)
            self._sqlite = await aiosqlite.connect(self.data_dir / SQLITE_FILE)
            sqlite_saver = AsyncSqliteSaver(self._sqlite)
            await sqlite_saver.setup()
            return sqlite_saver
        # The saver's own requirements: autocommit, dict rows, no server-side prepared
        # statements (they break behind poolers such as PgBouncer).
        self._pool = AsyncConnectionPool(
            conninfo,
            min_size=1,
            max_size=4,
            open=False,
            kwargs={"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row},
        )
        await self._pool.open()
        postgres_saver = AsyncPostgresSaver(self._pool)  # type: ignore[arg-type]
        await postgres_saver.setup()
        return postgres_saver

    async def close(self) -> None:
        async with self._lock:
            if self._sqlite is not None:
                await self._sqlite.close()
            if self._pool is not None:
                await self._pool.close()
            self._saver, self._sqlite, self._pool = None, None, None


async def finished_turn(memory: ConversationMemory, conversation_id: str, turn: int | None) -> dict[str, Any] | None:
    """The assistant's state at the end of a conversation's turn (1-based; None: the latest),
    or None when the conversation has no such turn. Only finished turns are checkpointed,
    one checkpoint each, holding that turn's question and step results."""
    saver = await memory.saver()
    async for saved in saver.alist({"configurable": {"thread_id": conversation_id}}):  # newest first
        values: dict[str, Any] = saved.checkpoint.get("channel_values", {})
        if turn is None or len(values.get("turns", [])) == turn:
            return values
        if len(values.get("turns", [])) < turn:
            return None
    return None
