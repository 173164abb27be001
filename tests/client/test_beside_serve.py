"""Commands beside a real `datawell serve` on the same data folder, and the absolute URLs the
server hands out when only `--port` says where it listens.

Local Qdrant locks its folder for one process, and the server holds it: commands that only
need the metadata database (users, tokens, grants) never open it; those that need vectors
in this process say in one line what to do instead of printing a traceback."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from dataclasses import replace
from datetime import timedelta

import httpx
import pytest

from datawell.app import Overrides, create_app
from datawell.config import Settings
from datawell.llm.embeddings import HashingEmbedder
from datawell.llm.models import FixedChatModels
from datawell.llm.scripted import ScriptedChatModel
from datawell.storage.users import create_user
from tests.client.conftest import Live, free_port, server_env, start, stop
from tests.conftest import served


@pytest.fixture(scope="module")
def serving(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    """`datawell serve --port P`, with neither DATAWELL_PORT nor DATAWELL_PUBLIC_BASE_URL set."""
    port = free_port()
    env = server_env(tmp_path_factory.mktemp("serve") / "data", 8000)
    del env["DATAWELL_PORT"]
    url = f"http://127.0.0.1:{port}"
    process = start([sys.executable, "-m", "datawell", "serve", "--port", str(port)], env, url)
    try:
        yield Live(url, env, "")
    finally:
        stop(process)


def test_users_tokens_and_grants_work_while_the_server_runs(serving: Live) -> None:
    assert serving.datawell("users", "create", "demo").returncode == 0
    token = serving.datawell("token", "issue", "demo").stdout.strip()
    assert serving.datawell("users", "list").stdout.split() == ["demo"]
    headers = {"Authorization": f"Bearer {token}"}
    created = httpx.post(
        f"{serving.url}/api/v1/ingest/new/shop/orders", json={"schemaDefinition": {"a": "A"}}, headers=headers
    )
    assert created.status_code == 201
    assert serving.datawell("users", "create", "erin").returncode == 0
    assert serving.datawell("grants", "add", "demo/shop", "erin").returncode == 0
    assert serving.datawell("grants", "list", "demo/shop").stdout.split() == ["erin", "read"]


@pytest.mark.parametrize("command", [["worker"], ["demo"], ["ask", "--local", "--namespace", "demo/shop", "How many?"]])
def test_commands_that_need_the_vector_store_say_what_to_do(serving: Live, command: list[str]) -> None:
    serving.datawell("users", "create", "demo", check=False)
    # No server at DATAWELL_SERVER: `datawell demo` would use one that answers there.
    elsewhere = replace(serving, env={**serving.env, "DATAWELL_SERVER": "http://127.0.0.1:9"})
    result = elsewhere.datawell(*command, check=False)
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    [line] = result.stderr.strip().splitlines()
    assert line.startswith("error: the vector store in ") and "is in use by another process" in line
    assert "DATAWELL_QDRANT_URL" in line


def test_urls_follow_the_port_the_server_listens_on(serving: Live) -> None:
    serving.datawell("users", "create", "demo", check=False)
    token = serving.datawell("token", "issue", "demo").stdout.strip()
    headers = {"Authorization": f"Bearer {token}"}
    with httpx.Client(base_url=serving.url, headers=headers) as http:
        agents = http.get("/api/v1/a2a").json()
        card = http.get(agents[0]["agentCard"]).json()
        assert agents[0]["url"] == f"{serving.url}/api/v1/a2a/{agents[0]['name']}"
        assert card["supportedInterfaces"][0]["url"] == agents[0]["url"]
        assert http.get("/api/v1/openapi.json").json()["servers"] == [{"url": serving.url}]

        http.post("/api/v1/ingest/new/shop/parts", json={"schemaDefinition": {"a": "A"}})
        prepared = http.post(
            "/api/v1/upload/multipart/demo/shop/parts/prepare", json={"filename": "a.csv", "size": 6}
        ).json()
        [part] = prepared["presignedUrls"]
        assert part["url"].startswith(f"{serving.url}/api/v1/upload/parts?")
        put = httpx.put(part["url"], content=b"a\n1\n2\n")
        assert put.status_code == 200 and put.headers["etag"]
        completed = http.post(
            "/api/v1/upload/multipart/demo/shop/parts/complete",
            json={"uploadId": prepared["uploadId"], "key": prepared["key"]},
        )
        assert completed.status_code == 202


@pytest.mark.parametrize(
    ("configured", "expected"),
    [(None, "http://192.0.2.7:9123"), ("https://data.example.org/", "https://data.example.org")],
)
async def test_the_public_base_url_wins_over_the_request_host(
    settings: Settings, configured: str | None, expected: str
) -> None:
    custom = settings.model_copy(update={"public_base_url": configured})
    overrides = Overrides(models=FixedChatModels(ScriptedChatModel([])), embedder=HashingEmbedder())
    async with served(create_app(custom, overrides)) as running:
        async with running.services.db.session() as session:
            await create_user(session, "alice")
        _, token = await running.services.tokens.issue("alice", timedelta(hours=1))
        transport = httpx.ASGITransport(app=running.asgi)
        async with httpx.AsyncClient(
            transport=transport, base_url="http://192.0.2.7:9123", headers={"Authorization": f"Bearer {token}"}
        ) as http:
            await http.post("/api/v1/ingest/new/lab/files", json={"schemaDefinition": {"a": "A"}})
            prepared = await http.post(
                "/api/v1/upload/multipart/alice/lab/files/prepare", json={"filename": "a.csv", "size": 1}
            )
            [agent, *_] = (await http.get("/api/v1/a2a")).json()
    assert prepared.json()["presignedUrls"][0]["url"].startswith(f"{expected}/api/v1/upload/parts?")
    assert agent["url"] == f"{expected}/api/v1/a2a/{agent['name']}"
