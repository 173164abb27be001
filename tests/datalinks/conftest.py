"""A real `datawell serve`-like process (`tests.agents.serve_fakes`: the app under uvicorn with
scripted assistant and nl2ql runs, no model) for the DataLinks SDK, on SQLite and on
PostgreSQL, with users alice and bob. One per module and database: starting it takes seconds.
The SDK is pointed at the bare origin, as its README configures it; test_sdk_async.py and a
test in test_sdk.py use the `/api/v1` form of its `.env.example`."""

from __future__ import annotations

import asyncio
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from datalinks.api import DataLinksAPI, DLConfig

from tests.agents.test_server_process import free_port, stop
from tests.client.conftest import Live, server_env, start
from tests.conftest import POSTGRES_URL


@dataclass(frozen=True)
class Server:
    live: Live
    alice: str  # tokens
    bob: str

    @property
    def host(self) -> str:
        """`DL_HOST` as the SDK's README writes it: the bare origin."""
        return self.live.url

    @property
    def prefixed(self) -> str:
        """`DL_HOST` as the SDK's `.env.example` writes it: with `/api/v1`."""
        return self.live.url + "/api/v1"

    def config(
        self, namespace: str = "shop", dataset: str = "products", token: str | None = None, host: str | None = None
    ) -> DLConfig:
        return DLConfig(host=host or self.host, apikey=token or self.alice, namespace=namespace, objectname=dataset)

    def api(
        self, namespace: str = "shop", dataset: str = "products", token: str | None = None, host: str | None = None
    ) -> DataLinksAPI:
        return DataLinksAPI(self.config(namespace, dataset, token, host))


async def _database(name: str, drop: bool) -> None:
    import asyncpg

    assert POSTGRES_URL
    admin = await asyncpg.connect(POSTGRES_URL.replace("postgresql+asyncpg://", "postgresql://"))
    try:
        if drop:
            from datawell.tools.sandbox.postgres import drop_roles

            await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            await drop_roles(admin, name)
        else:
            await admin.execute(f'CREATE DATABASE "{name}"')
    finally:
        await admin.close()


@pytest.fixture(scope="module", params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def server(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    port = free_port()
    env = server_env(tmp_path_factory.mktemp("sdk") / "data", port)
    database = None
    if request.param == "postgresql":
        if not POSTGRES_URL:
            pytest.skip("DATAWELL_TEST_POSTGRES_URL is not set")
        database = f"dw_sdk_{uuid.uuid4().hex[:12]}"
        asyncio.run(_database(database, drop=False))
        env["DATAWELL_DATABASE_URL"] = POSTGRES_URL.rsplit("/", 1)[0] + f"/{database}"
    url = f"http://127.0.0.1:{port}"
    bare = Live(url, env, "")
    for name in ("alice", "bob"):
        bare.datawell("users", "create", name)
    alice = bare.datawell("token", "issue", "alice").stdout.strip()
    bob = bare.datawell("token", "issue", "bob").stdout.strip()
    process = start([sys.executable, "-m", "tests.agents.serve_fakes", str(port)], env, url)
    try:
        yield Server(Live(url, env, alice), alice, bob)
    finally:
        stop(process)
        if database is not None:
            asyncio.run(_database(database, drop=True))
