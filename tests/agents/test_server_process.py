"""The A2A and REST surfaces over real HTTP: a uvicorn process on a free loopback port, a2a-sdk's
client and raw httpx against it."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from datetime import timedelta
from pathlib import Path

import httpx
import pytest

from datawell.config import Settings
from datawell.llm.embeddings import HashingEmbedder
from datawell.llm.models import FixedChatModels
from datawell.llm.scripted import ScriptedChatModel
from datawell.services import Overrides, build_services
from datawell.storage.users import create_user
from tests.agents.a2a_client import discover, message, rpc_body, sdk_client, send, sse_data, wire_message

REPO = Path(__file__).resolve().parents[2]
SECRET = "process-test-secret-process-test-secret"


def free_port() -> int:
    """A free loopback port; within DATAWELL_TEST_PORTS (`first-last`) when that is set, for
    machines where each user of it has a range of their own. Under pytest-xdist each worker
    takes every n-th port of the range, so two workers never both pick the first free one."""
    ports = [0]  # the kernel's choice
    if "DATAWELL_TEST_PORTS" in os.environ:
        first, _, last = os.environ["DATAWELL_TEST_PORTS"].partition("-")
        worker = int(os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw"))
        workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
        ports = list(range(int(first) + worker, int(last or first) + 1, workers))
    for port in ports:
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
            return int(sock.getsockname()[1])
    raise RuntimeError(f"no free port in DATAWELL_TEST_PORTS={os.environ['DATAWELL_TEST_PORTS']}")


@pytest.fixture
def server_env(tmp_path: Path) -> Iterator[dict[str, str]]:
    port = free_port()
    yield {
        "DATAWELL_DATA_DIR": str(tmp_path / "data"),
        "DATAWELL_DATABASE_URL": f"sqlite+aiosqlite:///{tmp_path / 'datawell.db'}",
        "DATAWELL_JWT_SECRET": SECRET,
        "DATAWELL_PUBLIC_BASE_URL": f"http://127.0.0.1:{port}",
        "DATAWELL_PORT": str(port),
        "DATAWELL_EMBEDDINGS_ENABLED": "false",
        "DATAWELL_EMBEDDED_MODEL_ENABLED": "false",
        "DATAWELL_RUN_WORKER_IN_PROCESS": "false",
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    }


async def user_with_token(server_env: dict[str, str], username: str) -> str:
    """A user and their token, written to the database the server will open (before it starts:
    the server then holds the vector store)."""
    settings = Settings(
        data_dir=Path(server_env["DATAWELL_DATA_DIR"]),
        database_url=server_env["DATAWELL_DATABASE_URL"],
        jwt_secret=SECRET,
        embeddings_enabled=False,
    )
    services = await build_services(
        settings, Overrides(models=FixedChatModels(ScriptedChatModel([])), embedder=HashingEmbedder())
    )
    try:
        async with services.db.session() as session:
            await create_user(session, username)
        _, encoded = await services.tokens.issue(username, timedelta(hours=1))
    finally:
        await services.close()
    return encoded


@pytest.fixture
async def token(server_env: dict[str, str]) -> str:
    """alice's token."""
    return await user_with_token(server_env, "alice")


@pytest.fixture
async def server(server_env: dict[str, str], token: str) -> AsyncIterator[httpx.AsyncClient]:
    env = {**os.environ, **server_env}
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.agents.serve_fakes", server_env["DATAWELL_PORT"]],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    base = server_env["DATAWELL_PUBLIC_BASE_URL"]
    try:
        async with httpx.AsyncClient(base_url=base, timeout=30) as http:
            for _ in range(300):
                if process.poll() is not None:
                    output = process.stdout.read().decode() if process.stdout else ""
                    pytest.fail(f"the server exited: {output}")
                try:
                    if (await http.get("/health")).status_code == 200:
                        break
                except httpx.TransportError:
                    await asyncio.sleep(0.1)
            else:
                pytest.fail("the server did not start")
            yield http
    finally:
        stop(process)


def stop(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()


async def test_agents_over_real_http(server: httpx.AsyncClient, token: str) -> None:
    auth = {"Authorization": f"Bearer {token}"}
    created = await server.post(
        "/api/v1/ingest/new/sales/orders", json={"schemaDefinition": {"customer": "Customer"}}, headers=auth
    )
    assert created.status_code == 201

    agents = await discover(server)
    base = str(server.base_url).rstrip("/")
    assert {a.url for a in agents.values()} == {f"{base}/api/v1/a2a/{name}" for name in agents}
    for agent in agents.values():
        async with await sdk_client(server, agent, token) as a2a:
            events = await send(a2a, message("Who orders most?", {"namespace": "sales"}))
        assert next(iter(events[-1].values()))["status"]["state"] == "TASK_STATE_COMPLETED"
        names = [e["artifactUpdate"]["artifact"]["name"] for e in events if "artifactUpdate" in e]
        assert names in (["generated-query", "result-data"], ["step-1", "step-2", "answer"])

        raw = await server.post(
            agent.url,
            json=rpc_body("SendStreamingMessage", {"message": wire_message("Who?", {"namespace": "sales"})}),
            headers={**auth, "A2A-Version": "1.0"},
        )
        assert raw.headers["content-type"].startswith("text/event-stream")
        wire = sse_data(raw.text)
        assert [set(e["result"]) <= {"task", "statusUpdate", "artifactUpdate"} for e in wire] == [True] * len(wire)

        unauthenticated = await server.post(
            agent.url, json=rpc_body("GetTask", {"id": "x"}), headers={"A2A-Version": "1.0"}
        )
        assert unauthenticated.status_code == 401
        assert unauthenticated.headers["www-authenticate"] == "Bearer"
        wrong_type = await server.post(
            agent.url,
            content=b'{"jsonrpc": "2.0", "id": 3, "method": "GetTask"}',
            headers={**auth, "Content-Type": "text/plain"},
        )
        assert wrong_type.json()["error"]["code"] == -32005

    async with await sdk_client(server, agents["assistant"], token) as a2a:
        first = await send(a2a, message("Who orders most?", {"namespace": "sales"}))
        context_id = first[0]["task"]["contextId"]
        second = await send(a2a, message("And then?", {"namespace": "sales"}, context_id=context_id))
    assert second[0]["task"]["contextId"] == context_id
    answer = [e for e in second if e.get("artifactUpdate", {}).get("artifact", {}).get("name") == "answer"]
    assert answer[0]["artifactUpdate"]["artifact"]["parts"][0]["text"].endswith("(after: Who orders most?)")


async def test_autorag_stream_over_real_http(server: httpx.AsyncClient, token: str) -> None:
    auth = {"Authorization": f"Bearer {token}"}
    await server.post(
        "/api/v1/ingest/new/sales/orders", json={"schemaDefinition": {"customer": "Customer"}}, headers=auth
    )
    names = []
    async with server.stream(
        "POST",
        "/api/v1/query/autorag",
        json={"namespace": "sales", "query": "Who?"},
        headers={**auth, "Accept": "text/event-stream"},
    ) as response:
        assert response.status_code == 200
        async for line in response.aiter_lines():
            if line.startswith("event: "):
                names.append(line[len("event: ") :])
    assert names[0] == "run-started" and names[-2:] == ["answer", "run-finished"]
