from __future__ import annotations

from pathlib import Path

from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

from datawell.graphs.memory import SQLITE_FILE, ConversationMemory, postgres_conninfo


def test_postgres_urls_become_libpq_addresses() -> None:
    assert postgres_conninfo("postgresql+asyncpg://u:p@h:5432/db") == "postgresql://u:p@h:5432/db"
    assert postgres_conninfo("postgresql://h/db") == "postgresql://h/db"
    assert postgres_conninfo("sqlite+aiosqlite:///x.db") is None


async def test_sqlite_memory_opens_once_in_the_data_folder_and_closes(tmp_path: Path) -> None:
    memory = ConversationMemory("sqlite+aiosqlite:///ignored.db", tmp_path / "data")
    saver = await memory.saver()
    assert isinstance(saver, AsyncSqliteSaver)
    assert await memory.saver() is saver
    assert (tmp_path / "data" / SQLITE_FILE).is_file()
    await memory.close()
    await memory.close()  # closing twice is harmless (Services.close after a failed start)
