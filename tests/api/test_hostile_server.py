"""Issue 51's attacks against a real server process (uvicorn, the real query tools, scripted
runs), on SQLite and PostgreSQL: each is refused in time, the server's memory after it is
where it was, and /health keeps answering while they arrive."""

from __future__ import annotations

import asyncio
import os
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import httpx
import pytest

from tests.agents.test_server_process import free_port, stop
from tests.api.test_hostile_queries import (
    DOUBLING,
    GROWING_AGGREGATE,
    MCP_HEADERS,
    cte_chain,
    deep,
    short_cte_chain,
    tool_call,
)
from tests.client.conftest import Live, demo_token, server_env, start
from tests.conftest import POSTGRES_URL

ATTACKS = {
    "ctes-5000": cte_chain(5_000),
    "ctes-8000": cte_chain(8_000),
    "ctes-20000": cte_chain(20_000),
    "ctes-short": short_cte_chain(2_000),
    "depth-500": deep(500),
    "depth-5000": deep(5_000),
    "doubling": DOUBLING,
    "string_agg": GROWING_AGGREGATE,
}


def cpu_seconds(pid: int) -> float:
    """The process's user and system CPU time (`/proc/PID/stat` fields 14 and 15)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def resident_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


class HealthWatch:
    """/health asked every 50 ms from another thread while the attacks run."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.times: list[float] = []
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._watch, daemon=True)

    def _watch(self) -> None:
        with httpx.Client(timeout=10) as client:
            while not self.done.is_set():
                started = time.monotonic()
                assert client.get(f"{self.url}/health").status_code == 200
                self.times.append(time.monotonic() - started)
                time.sleep(0.05)

    def __enter__(self) -> HealthWatch:
        self.thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.done.set()
        self.thread.join()


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def server(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Live, int]]:
    with ExitStack() as stack:
        yield from serve(request.param, tmp_path, stack)


def serve(store: str, tmp_path: Path, stack: ExitStack) -> Iterator[tuple[Live, int]]:
    port = free_port()
    env = server_env(tmp_path / "data", port)
    if store == "postgresql":
        env["DATAWELL_DATABASE_URL"] = stack.enter_context(postgres_database())
    url = f"http://127.0.0.1:{port}"
    process = start([sys.executable, "-m", "tests.agents.serve_fakes", str(port)], env, url)
    try:
        token = demo_token(url, env)
        headers = {"Authorization": f"Bearer {token}"}
        made = httpx.post(
            f"{url}/api/v1/ingest/new/shop/orders",
            json={"dataDescription": "Orders", "schemaDefinition": {"product": "Product"}},
            headers=headers,
        )
        assert made.status_code == 201, made.text
        yield Live(url, env, token), process.pid
    finally:
        stop(process)


@contextmanager
def postgres_database() -> Iterator[str]:
    """A fresh database on the test server (as tests/conftest.py's `database_url` makes one)."""
    import asyncpg

    from datawell.tools.sandbox.postgres import drop_roles

    if not POSTGRES_URL:
        pytest.skip("DATAWELL_TEST_POSTGRES_URL is not set")
    admin_dsn = POSTGRES_URL.replace("postgresql+asyncpg://", "postgresql://")
    name = f"dw_test_{uuid.uuid4().hex[:12]}"

    async def admin(*statements: str) -> None:
        connection = await asyncpg.connect(admin_dsn)
        try:
            for statement in statements:
                await connection.execute(statement)
            if statements[0].startswith("DROP"):
                await drop_roles(connection, name)
        finally:
            await connection.close()

    asyncio.run(admin(f'CREATE DATABASE "{name}"'))
    try:
        yield POSTGRES_URL.rsplit("/", 1)[0] + f"/{name}"
    finally:
        asyncio.run(admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


def test_attacks_are_refused_in_time_and_leave_memory_and_health_as_they_were(server: tuple[Live, int]) -> None:
    live, pid = server
    headers = {"Authorization": f"Bearer {live.token}", **MCP_HEADERS}
    with httpx.Client(timeout=60) as client:
        warm = client.post(
            f"{live.url}/api/v1/mcp",
            json=tool_call("run_query", {"namespace": "shop", "query": "SELECT 1 AS x"}),
            headers=headers,
        )
        assert warm.status_code == 200
        before = resident_mb(pid)
        took: dict[str, tuple[float, float]] = {}  # the server's CPU seconds, and wall seconds
        with HealthWatch(live.url) as health:
            for name, query in ATTACKS.items():
                cpu, started = cpu_seconds(pid), time.monotonic()
                response = client.post(
                    f"{live.url}/api/v1/mcp",
                    json=tool_call("run_query", {"namespace": "shop", "query": query}),
                    headers=headers,
                )
                took[name] = (cpu_seconds(pid) - cpu, time.monotonic() - started)
                assert response.status_code == 200, response.text
                assert '"isError":true' in response.text.replace(" ", ""), (name, response.text[:300])
                assert "INTERNAL_ERROR" not in response.text
        after = resident_mb(pid)
    # CPU time, which a shared machine's load does not inflate; wall time bounded loosely.
    slow = {name: (round(cpu, 2), round(wall, 2)) for name, (cpu, wall) in took.items() if cpu > 2 or wall > 10}
    assert not slow, f"(CPU s, wall s) past 2 s of CPU or 10 s: {slow}"
    assert after - before < 100, f"resident memory {before:.0f} MB before the attacks, {after:.0f} MB after"
    assert health.times, "/health was never answered"
    # A loose bound, under a shared CI machine's load; bench/hostile.py measures the p99.
    # (before issue 51 one attack held it 9 s).
    assert max(health.times) < 2.0, f"/health took {max(health.times):.2f} s during the attacks"
