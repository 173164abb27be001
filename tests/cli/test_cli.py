"""The command line as an operator uses it: users, tokens and grants, then the API accepts
(or refuses) what the commands produced."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from datawell.app import create_app
from datawell.cli import app
from datawell.config import Settings
from datawell.llm.embeddings import HashingEmbedder
from datawell.llm.models import FixedChatModels
from datawell.llm.scripted import ScriptedChatModel
from datawell.services import Overrides
from tests.conftest import served


@pytest.fixture
def environment(tmp_path: Path, database_url: str, monkeypatch: pytest.MonkeyPatch) -> Settings:
    monkeypatch.setenv("DATAWELL_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("DATAWELL_DATABASE_URL", database_url)
    monkeypatch.setenv("DATAWELL_EMBEDDINGS_ENABLED", "false")
    return Settings()


def run_cli(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


async def invoke(*args: str) -> tuple[int, str, str]:
    """The CLI runs its own event loop, so it runs in a thread beside the test's loop."""
    return await asyncio.to_thread(run_cli, *args)


async def get(settings: Settings, path: str, token: str) -> httpx.Response:
    overrides = Overrides(models=FixedChatModels(ScriptedChatModel([])), embedder=HashingEmbedder())
    async with served(create_app(settings, overrides)) as running:
        transport = httpx.ASGITransport(app=running.asgi)
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
            return await client.get(path, headers={"Authorization": f"Bearer {token}"})


async def test_users_tokens_and_revocation(environment: Settings) -> None:
    assert (await invoke("users", "create", "carol"))[0] == 0
    code, _, err = await invoke("users", "create", "carol")
    assert code == 1
    assert "already exists" in err
    assert (await invoke("users", "list"))[1].split() == ["carol"]

    code, token, err = await invoke("token", "issue", "carol", "--ttl", "60")
    assert code == 0
    token_id = err.split("token id: ")[1].split()[0]
    assert (await get(environment, "/api/v1/build-specs", token.strip())).status_code == 200

    assert (await invoke("token", "revoke", token_id))[0] == 0
    response = await get(environment, "/api/v1/build-specs", token.strip())
    assert response.status_code == 401
    assert "revoked" in response.json()["message"]


async def test_token_for_unknown_user_fails(environment: Settings) -> None:
    code, _, err = await invoke("token", "issue", "nobody")
    assert code == 1
    assert "no user named 'nobody'" in err


async def test_grants_add_list_remove(environment: Settings) -> None:
    await invoke("users", "create", "carol")
    await invoke("users", "create", "dave")
    _, dave_token, _ = await invoke("token", "issue", "dave")
    _, carol_token, _ = await invoke("token", "issue", "carol")
    overrides = Overrides(models=FixedChatModels(ScriptedChatModel([])), embedder=HashingEmbedder())
    async with served(create_app(environment, overrides)) as running:
        transport = httpx.ASGITransport(app=running.asgi)
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
            created = await client.post(
                "/api/v1/ingest/new/lab/samples",
                json={"schemaDefinition": {"id": "sample id"}},
                headers={"Authorization": f"Bearer {carol_token.strip()}"},
            )
            assert created.status_code == 201

    assert (await get(environment, "/api/v1/datasets/carol/lab", dave_token.strip())).status_code == 403
    assert (await invoke("grants", "add", "carol/lab", "dave", "--permission", "read"))[0] == 0
    assert (await invoke("grants", "list", "carol/lab"))[1].split() == ["dave", "read"]
    assert (await get(environment, "/api/v1/datasets/carol/lab", dave_token.strip())).status_code == 200
    assert (await invoke("grants", "remove", "carol/lab", "dave"))[0] == 0
    assert (await get(environment, "/api/v1/datasets/carol/lab", dave_token.strip())).status_code == 403


def test_namespace_argument_must_name_the_owner(environment: Settings) -> None:
    code, _, err = run_cli("grants", "list", "lab")
    assert code == 2
    assert "OWNER/NAMESPACE" in err


def test_help_does_not_load_the_graphs_models_or_vector_store() -> None:
    """`datawell --help` and the file-only eval commands answer without importing the heavy
    libraries (seconds each); commands that need them import them when they run."""
    import subprocess
    import sys

    heavy = ["langgraph", "langchain_core", "litellm", "qdrant_client", "sentence_transformers", "a2a", "datawell.app"]
    probe = f"import sys, datawell.cli; print([m for m in {heavy!r} if m in sys.modules])"
    loaded = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout.strip()
    assert loaded == "[]"
