"""The metadata database's engine."""

from __future__ import annotations

import asyncio
import random
import threading
from pathlib import Path

from sqlalchemy import text

from datawell.storage.db import create_engine


def test_a_run_cancelled_inside_a_query_lets_the_event_loop_end(tmp_path: Path) -> None:
    """A client that hangs up mid-question cancels the run while it holds a SQLite connection.
    SQLAlchemy then closes that connection in a shielded task; with aiosqlite 0.22 that close
    waited forever for a thread that had left, and the service (or a test's loop) never ended."""
    engine = create_engine(f"sqlite+aiosqlite:///{tmp_path / 'datawell.db'}")

    count = "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 300000) SELECT count(*) FROM n"
    delays = random.Random(0)

    async def question() -> None:
        async with engine.connect() as connection:
            await connection.execute(text("SELECT 1"))
            await connection.execute(text(count))

    async def main() -> None:
        # Cancelled at many points, and again while it hands its connection back: once the
        # closing and the stopping race, the old driver's close never returns.
        for _ in range(200):
            run = asyncio.create_task(question())
            await asyncio.sleep(delays.random() * 0.03)
            run.cancel()
            await asyncio.sleep(delays.random() * 0.01)
            run.cancel()
            await asyncio.gather(run, return_exceptions=True)
        # `asyncio.run` ends by waiting for what the cancelled runs left behind

    ended = threading.Event()

    def serve() -> None:
        asyncio.run(main())
        ended.set()

    threading.Thread(target=serve, daemon=True).start()
    assert ended.wait(timeout=30), "the event loop never ended: a SQLite connection's close waits forever"


async def test_sessions_not_durable_commit_without_a_sync(tmp_path: Path) -> None:
    """`session(durable=False)` (a running attempt's lease and progress) commits on a connection
    that does not sync; every other session syncs its commits, and both see each other's rows."""
    from datawell.storage.db import Database

    database = Database(f"sqlite+aiosqlite:///{tmp_path / 'meta.db'}")
    try:
        async with database.session() as session:
            await session.execute(text("CREATE TABLE t (a INTEGER)"))
        async with database.session(durable=False) as session:
            assert (await session.execute(text("PRAGMA synchronous"))).scalar_one() == 1  # NORMAL
            await session.execute(text("INSERT INTO t VALUES (1)"))
        async with database.session() as session:
            assert (await session.execute(text("PRAGMA synchronous"))).scalar_one() == 2  # FULL
            assert (await session.execute(text("SELECT a FROM t"))).scalars().all() == [1]
    finally:
        await database.close()
