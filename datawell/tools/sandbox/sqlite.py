"""SQLite: queries run on read-only connections of their own, guarded per query by an
authorizer (tables and functions), a progress handler and a watchdog (time) and a string length
limit (size).

The progress handler runs between virtual-machine steps, and a step may be slow: a function
call over a megabyte string, a comparison in a recursive UNION. So a watchdog on the event loop
also interrupts the connection when the time is up (SQLite checks for that within a step's
loops), and no built-in function the authorizer allows takes more than linear time in its
arguments: `instr`, `replace` and two-argument `trim` are replaced by linear Python versions
(`sqlite_functions`) and LIKE patterns are kept short.

aiosqlite runs each connection in a thread of its own; the connector below runs in that thread,
so the guards are installed on the `sqlite3.Connection` before aiosqlite hands it out. They read
a `_Guard` that `run` arms before each statement and disarms after: a connection that is not
running a query reads nothing and is interrupted at its first step."""

from __future__ import annotations

import asyncio
import sqlite3
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import aiosqlite

from datawell.tools.checker.allowed import CTE_PREFIX, PATTERN_CHARS
from datawell.tools.sandbox import Fetched, Limits, Refusal, Statement, Turns, collect, sqlite_functions

# The progress handler runs every this many virtual-machine steps (roughly a millisecond of
# work): often enough to stop on time, rarely enough to cost nothing.
PROGRESS_STEPS = 100_000
# Every function the SQL the checker writes for SQLite may call. Anything else (load_extension,
# zeroblob, randomblob, sqlite_version, fts3_tokenizer, printf, ...) is denied.
FUNCTIONS = frozenset(
    {
        "count", "sum", "total", "avg", "min", "max", "group_concat", "string_agg",
        "row_number", "rank", "dense_rank", "percent_rank", "cume_dist", "ntile", "lag", "lead",
        "first_value", "last_value", "nth_value",
        "abs", "round", "ceil", "ceiling", "floor", "sign", "pow", "power", "sqrt", "ln", "log", "log10", "exp",
        "trunc", "random", "mod", "lower", "upper", "length", "substr", "substring", "trim", "ltrim", "rtrim", "replace", "instr",
        "coalesce", "ifnull", "nullif", "iif", "like", "glob", "concat", "concat_ws",
        "date", "time", "datetime", "julianday", "current_date", "current_time", "current_timestamp", "strftime", "unixepoch", "json_each",
        *sqlite_functions.NAMES,
    }
)  # fmt: skip
_ALWAYS = {sqlite3.SQLITE_SELECT, sqlite3.SQLITE_RECURSIVE}


class _Guard:
    """What the connection's statement may do right now; empty between queries."""

    def __init__(self) -> None:
        self.tables: frozenset[str] = frozenset()
        self.functions: frozenset[str] = frozenset()
        self.deadline = 0.0
        self.connection: sqlite3.Connection | None = None  # for the watchdog's interrupt

    def interrupt(self) -> None:
        if self.connection is not None:
            self.connection.interrupt()

    def arm(self, tables: Sequence[str], functions: Sequence[str], seconds: float) -> None:
        self.tables = frozenset(tables)
        self.functions = FUNCTIONS | {f.lower() for f in functions}
        self.deadline = time.monotonic() + seconds

    def disarm(self) -> None:
        self.tables = frozenset()
        self.functions = frozenset()
        self.deadline = 0.0

    def authorize(self, action: int, first: str | None, second: str | None, database: str | None, _: Any) -> int:
        if action in _ALWAYS:
            return sqlite3.SQLITE_OK
        if action == sqlite3.SQLITE_READ:
            # COUNT(*) reads with no database named, and names a CTE it counts as a table: the
            # checker's CTE names are reserved, so no real table has one. json_each is semantic()'s
            # list of hits.
            name = first or ""
            allowed = database in ("main", None) and (
                name in self.tables or name == "json_each" or name.startswith(CTE_PREFIX)
            )
            return sqlite3.SQLITE_OK if allowed else sqlite3.SQLITE_DENY
        if action == sqlite3.SQLITE_FUNCTION:
            return sqlite3.SQLITE_OK if (second or "").lower() in self.functions else sqlite3.SQLITE_DENY
        return sqlite3.SQLITE_DENY  # pragmas, attach, writes, schema changes, transactions

    def progress(self) -> int:
        return 1 if time.monotonic() > self.deadline else 0


class _Connection:
    def __init__(self, connection: aiosqlite.Connection, guard: _Guard) -> None:
        self.connection = connection
        self.guard = guard


class SqliteSandbox:
    def __init__(self, path: str, limits: Limits) -> None:
        self.path = Path(path)
        self.limits = limits
        self.idle: asyncio.Queue[_Connection] = asyncio.Queue()
        self.opened: list[_Connection] = []
        self.turns = Turns(limits.concurrency)

    def _connector(self, guard: _Guard) -> Callable[[], sqlite3.Connection]:
        def connect() -> sqlite3.Connection:
            if not self.path.exists():  # no dataset has rows yet: the writer creates it on first use
                sqlite3.connect(self.path).close()
            connection = sqlite3.connect(f"{self.path.resolve().as_uri()}?mode=ro", uri=True, check_same_thread=False)
            connection.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, self.limits.row_bytes)
            connection.setlimit(sqlite3.SQLITE_LIMIT_ATTACHED, 0)
            connection.setlimit(sqlite3.SQLITE_LIMIT_LIKE_PATTERN_LENGTH, PATTERN_CHARS)
            sqlite_functions.register(connection, self.limits.row_bytes)
            # json_each (semantic()'s list of hits) declares its table on first use, which the
            # authorizer would see as a schema change: declare it before the authorizer is on.
            connection.execute("SELECT value FROM json_each('[]')").fetchall()
            connection.set_authorizer(guard.authorize)
            connection.set_progress_handler(guard.progress, PROGRESS_STEPS)
            guard.connection = connection
            return connection

        return connect

    async def _acquire(self) -> _Connection:
        if self.idle.empty() and len(self.opened) < self.limits.concurrency:
            guard = _Guard()
            opened = _Connection(await aiosqlite.Connection(self._connector(guard), 64), guard)
            self.opened.append(opened)
            return opened
        return await self.idle.get()

    async def run(self, statement: Statement) -> Fetched:
        async with self.turns.turn(statement.caller):
            return await self._run(statement)

    async def _run(self, statement: Statement) -> Fetched:
        held = await self._acquire()
        connection, guard = held.connection, held.guard
        watchdog: asyncio.TimerHandle | None = None
        try:
            for name, function in statement.functions.items():
                await connection.create_function(name, 1, function, deterministic=True)
            guard.arm(statement.tables, list(statement.functions), statement.seconds)
            watchdog = asyncio.get_running_loop().call_later(statement.seconds, guard.interrupt)
            async with connection.execute(statement.sql, tuple(statement.parameters)) as cursor:
                columns = [d[0] for d in cursor.description or ()]
                records, cut = await collect(cursor.fetchmany, self.limits)  # type: ignore[arg-type]
            return Fetched(columns, records, cut)
        except sqlite3.Error as exc:
            raise _refusal(exc) from None
        except asyncio.CancelledError:  # the caller went away: stop the statement now, not at its deadline
            guard.interrupt()
            raise
        finally:
            if watchdog is not None:
                watchdog.cancel()
            guard.disarm()
            for name in statement.functions:
                await connection.create_function(name, 1, None)  # type: ignore[arg-type]  # None removes it
            self.idle.put_nowait(held)

    async def close(self) -> None:
        for held in self.opened:
            await held.connection.close()
        self.opened.clear()


def _refusal(exc: sqlite3.Error) -> Refusal:
    message = str(exc).strip() or type(exc).__name__
    lowered = message.lower()
    if "interrupted" in lowered:
        return Refusal(message, "time")
    if "too big" in lowered:
        return Refusal(message, "size")
    return Refusal(message)
