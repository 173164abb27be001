"""The second wall: where checked SQL runs, so that a query the checker got wrong still reads
nothing but the tables the checker resolved for the caller, within time and size limits the
database enforces.

- SQLite (`sqlite.py`): a read-only connection to the rows database (its own file, never the
  metadata), an authorizer that denies every read of a table outside the resolved set and every
  function outside an allow-list, a progress handler for the time limit, and a maximum string
  length.
- PostgreSQL (`postgres.py`): each query's transaction switches to a role that may read only the
  resolved tables, with `statement_timeout`, `work_mem` and `search_path` set for it.

Both fetch results in growing chunks and stop at the byte caps (`collect`)."""

from __future__ import annotations

import asyncio
from collections import Counter, deque
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from datawell.config import Settings

FIRST_CHUNK = 64  # rows fetched first; later chunks are sized from the rows seen, up to LAST_CHUNK
LAST_CHUNK = 512


@dataclass(frozen=True)
class Limits:
    """What one query may cost while it runs (the settings `query_time_limit_seconds`,
    `query_max_row_bytes`, `query_max_result_bytes`, `query_work_mem_mb`, `query_temp_file_mb`,
    `query_concurrency`)."""

    seconds: float  # a statement still running then is stopped
    row_bytes: int = 1 << 20  # a result row (and on SQLite any string or blob) larger than this is refused
    result_bytes: int = 16 << 20  # rows past this many bytes are cut, and the result says `truncated`
    work_mem_mb: int = 16  # PostgreSQL: memory per sort or hash before it spills to disk
    temp_file_mb: int = 1024  # PostgreSQL: temporary files one query may write (needs a superuser service role)
    concurrency: int = 4  # statements running at once; see `Turns`

    @classmethod
    def of(cls, settings: Settings) -> Limits:
        return cls(
            settings.query_time_limit_seconds, settings.query_max_row_bytes, settings.query_max_result_bytes,
            settings.query_work_mem_mb, settings.query_temp_file_mb, settings.query_concurrency,
        )  # fmt: skip


class Refusal(Exception):
    """The database stopped or refused a query; `kind` says which limit, if one did."""

    def __init__(self, message: str, kind: Literal["time", "size", "database"] = "database") -> None:
        super().__init__(message)
        self.message = message
        self.kind = kind


@dataclass
class Fetched:
    columns: list[str]
    records: list[tuple[Any, ...]]
    cut: bool  # the byte cap cut the result


@dataclass(frozen=True)
class Statement:
    """One statement for a sandbox to run, and whose it is."""

    sql: str
    parameters: Sequence[Any]
    tables: Sequence[str]  # physical names: all it may read
    functions: Mapping[str, Callable[..., Any]]  # SQLite functions it may call besides the allowed ones
    caller: str  # whose turn it takes (see `Turns`)
    seconds: float  # stopped when still running this long after it starts


class Sandbox(Protocol):
    async def run(self, statement: Statement) -> Fetched:
        """Run one statement reading only its tables, within its time and the byte caps."""
        ...

    async def close(self) -> None: ...


class Turns:
    """At most `size` statements run at once, and a caller already running one takes another
    only while a slot is left for someone else: four slow queries of one user cannot hold every
    connection while another user's count(*) waits behind them. Free slots go first to waiting
    callers who run nothing, then in order of arrival."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.running: Counter[str] = Counter()
        self.waiting: deque[tuple[str, asyncio.Future[None]]] = deque()

    @asynccontextmanager
    async def turn(self, caller: str) -> AsyncIterator[None]:
        if self._may_start(caller) and not (self.running[caller] and self.waiting):
            self.running[caller] += 1
        else:
            granted: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self.waiting.append((caller, granted))
            try:
                await granted
            except asyncio.CancelledError:
                if granted.done() and not granted.cancelled():  # granted as it was cancelled: pass it on
                    self._release(caller)
                else:
                    self.waiting.remove((caller, granted))
                raise
        try:
            yield
        finally:
            self._release(caller)

    def _may_start(self, caller: str) -> bool:
        free = self.size - sum(self.running.values())
        return free >= (2 if self.running[caller] and self.size > 1 else 1)

    def _release(self, caller: str) -> None:
        self.running[caller] -= 1
        if not self.running[caller]:
            del self.running[caller]
        while chosen := next((w for w in self.waiting if self._may_start(w[0])), None):
            self.waiting.remove(chosen)
            self.running[chosen[0]] += 1
            chosen[1].set_result(None)


def row_size(record: Sequence[Any]) -> int:
    """About how many bytes a row takes: text and blobs by length, anything else as 8."""
    return sum(len(v) if isinstance(v, str | bytes) else 8 for v in record)


async def collect(fetch: Callable[[int], Awaitable[Sequence[Sequence[Any]]]], limits: Limits) -> tuple[list[Any], bool]:
    """Fetch rows in chunks until there are none or the result passes `limits.result_bytes`.
    Chunks are sized so that one chunk of rows like the largest seen fits in what is left, so
    a few huge rows never arrive together."""
    records: list[Any] = []
    total, largest, chunk = 0, 1, FIRST_CHUNK
    while True:
        rows = await fetch(chunk)
        for record in rows:
            size = row_size(record)
            if size > limits.row_bytes:
                raise Refusal(f"a result row is larger than {limits.row_bytes:,} bytes", "size")
            if total + size > limits.result_bytes:
                return records, True
            total += size
            largest = max(largest, size)
            records.append(tuple(record))
        if len(rows) < chunk:
            return records, False
        chunk = max(1, min(LAST_CHUNK, (limits.result_bytes - total) // largest))
