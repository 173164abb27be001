"""Shared fixtures. Every test gets a fresh database: SQLite always, and PostgreSQL too when
DATAWELL_TEST_POSTGRES_URL names a server (`.ci/run` starts one)."""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette
from starlette.types import ASGIApp, Receive, Scope, Send

from datawell.app import create_app
from datawell.config import Settings
from datawell.llm.embeddings import HashingEmbedder
from datawell.llm.models import FixedChatModels
from datawell.llm.scripted import ScriptedChatModel
from datawell.runs import Runs
from datawell.services import Overrides, Services
from tests.fake_runs import FakeRuns
from tests.pgvector_server import fresh_database, pgvector_server

POSTGRES_URL = os.environ.get("DATAWELL_TEST_POSTGRES_URL")


@pytest.fixture(autouse=True)
def no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests never reach a model provider: a litellm call fails loudly unless litellm answers
    it itself (`mock_response=`) or it goes to the in-process embedded model."""
    import litellm

    def guarded(call: Any) -> Any:
        def call_if_offline(*args: Any, **kwargs: Any) -> Any:
            model = str(kwargs.get("model") or (args[0] if args else ""))
            mocked = kwargs.get("mock_response") is not None
            embedded = model.startswith("embedded/") and kwargs.get("custom_llm_provider") in (None, "embedded")
            if mocked or embedded:
                return call(*args, **kwargs)
            raise AssertionError(f"a test tried to call the real model {model!r} through litellm")

        return call_if_offline

    monkeypatch.setattr(litellm, "acompletion", guarded(litellm.acompletion))
    monkeypatch.setattr(litellm, "completion", guarded(litellm.completion))


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
async def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[str]:
    """A test module may add "pgvector" (a PostgreSQL with pgvector: the vectors go beside the
    rows) with `pytest.mark.parametrize("database_url", [...], indirect=True)`."""
    if request.param == "sqlite":
        yield f"sqlite+aiosqlite:///{tmp_path / 'datawell.db'}"
        return
    if request.param == "pgvector":
        async with fresh_database(request.getfixturevalue("pgvector_url")) as url:
            yield url
        return
    if not POSTGRES_URL:
        pytest.skip("DATAWELL_TEST_POSTGRES_URL is not set")
    async with fresh_database(POSTGRES_URL) as url:
        yield url


@pytest.fixture(scope="session")
def pgvector_url() -> Iterator[str]:
    """A PostgreSQL server with pgvector (DATAWELL_TEST_PGVECTOR_URL: `tests/pgvector_server.py`)."""
    with pgvector_server() as url:
        yield url


@pytest.fixture
def settings(tmp_path: Path, database_url: str) -> Settings:
    return Settings(
        data_dir=tmp_path / "data",
        database_url=database_url,
        jwt_secret="test-secret-test-secret-test-secret",
        public_base_url="http://testserver",
        embeddings_enabled=False,
        embedded_model_enabled=False,
        run_worker_in_process=False,
    )


@dataclass
class Running:
    """An app whose lifespan has run: `asgi` hands the lifespan state to every request, as a server does."""

    app: Starlette
    asgi: ASGIApp
    services: Services


@asynccontextmanager
async def served(app: Starlette) -> AsyncIterator[Running]:
    async with app.router.lifespan_context(app) as state:

        async def with_state(scope: Scope, receive: Receive, send: Send) -> None:
            scope["state"] = dict(state)
            await app(scope, receive, send)

        yield Running(app, with_state, state["services"])


@pytest.fixture
def chat_model() -> ScriptedChatModel:
    """The model every stage gets; a test that expects model calls gives it a script."""
    return ScriptedChatModel([])


@pytest.fixture
def chat_models(chat_model: ScriptedChatModel) -> FixedChatModels:
    return FixedChatModels(chat_model)


@pytest.fixture
async def service(
    request: pytest.FixtureRequest, settings: Settings, chat_models: FixedChatModels
) -> AsyncIterator[Running]:
    # A test that asks for `fake` gets canned graph runs; every other test the real ones.
    runs = request.getfixturevalue("fake").bind if "fake" in request.fixturenames else Runs
    overrides = Overrides(models=chat_models, embedder=HashingEmbedder())
    async with served(create_app(settings, overrides, runs)) as running:
        yield running


@pytest.fixture
def services(service: Running) -> Services:
    return service.services


@pytest.fixture
async def client(service: Running) -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=service.asgi, raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as http:
        yield http


class Account:
    """A user with a token, as a test client sees them."""

    def __init__(self, name: str, token: str, token_id: str) -> None:
        self.name = name
        self.token = token
        self.token_id = token_id
        self.headers = {"Authorization": f"Bearer {token}"}


async def make_account(services: Services, name: str) -> Account:
    from datetime import timedelta

    from datawell.storage.users import create_user

    async with services.db.session() as session:
        await create_user(session, name)
    token, encoded = await services.tokens.issue(name, timedelta(hours=1))
    return Account(name, encoded, token.id)


@pytest.fixture
async def alice(services: Services) -> Account:
    return await make_account(services, "alice")


@pytest.fixture
async def bob(services: Services) -> Account:
    return await make_account(services, "bob")


SALES_ORDERS = {"dataDescription": "Web shop orders", "schemaDefinition": {"customer": "Customer", "total": "EUR"}}


@pytest.fixture
async def sales(client: httpx.AsyncClient, alice: Account) -> str:
    """alice's namespace `sales` with one dataset, `orders`."""
    response = await client.post("/api/v1/ingest/new/sales/orders", json=SALES_ORDERS, headers=alice.headers)
    assert response.status_code == 201
    return "sales"


@pytest.fixture
def fake() -> FakeRuns:
    """Canned assistant and nl2ql runs in place of the graphs (for the REST and A2A layers)."""
    return FakeRuns()


@pytest.fixture(scope="session")
def moto_endpoint() -> Iterator[str]:
    """An S3-compatible server (moto in server mode) on loopback, shared by the session;
    tests make their own bucket (`s3_bucket`). boto3 reads the fake credentials from the
    environment, as it would read real ones."""
    from moto.server import ThreadedMotoServer

    with pytest.MonkeyPatch.context() as env:
        env.setenv("AWS_ACCESS_KEY_ID", "testing")
        env.setenv("AWS_SECRET_ACCESS_KEY", "testing")
        env.delenv("AWS_SESSION_TOKEN", raising=False)
        env.delenv("AWS_PROFILE", raising=False)
        env.setenv("AWS_CONFIG_FILE", os.devnull)
        env.setenv("AWS_SHARED_CREDENTIALS_FILE", os.devnull)
        env.setenv("NO_PROXY", "127.0.0.1")
        server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
        server.start()
        host, port = server.get_host_and_port()
        try:
            yield f"http://{host}:{port}"
        finally:
            server.stop()


@pytest.fixture
def s3_bucket(moto_endpoint: str) -> str:
    import boto3

    name = f"datawell-{uuid.uuid4().hex[:12]}"
    boto3.client("s3", endpoint_url=moto_endpoint, region_name="us-east-1").create_bucket(Bucket=name)
    return name


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """schemathesis makes an item per operation (`test[GET /path]`), but pytest 9.2 builds a node
    id from the test's name and a parametrize call only, so all 79 got the test's id; pytest-xdist's
    `--dist loadfile` (scripts/test.sh) schedules by node id and ran one of them. Each gets its
    operation as its id's parameters, as a parametrized test's items have theirs."""
    for item in items:
        label = getattr(item, "operation_label", None)
        if label and item.nodeid.endswith("::" + item.originalname):  # type: ignore[attr-defined]
            item._id = item._id.with_params(label)  # type: ignore[attr-defined]
