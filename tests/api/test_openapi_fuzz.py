"""Schemathesis against the app in process: every operation of the OpenAPI document, with
generated valid and invalid requests, answers as the document says (status codes, bodies,
headers), never with a 500, on SQLite and on PostgreSQL. MCP's JSON-RPC body is described in the
document, so its generated requests are MCP messages (every method the server answers, every
tool with its own arguments). Bounded examples keep it to about a minute per store."""

from __future__ import annotations

import asyncio
import copy
import shutil
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NoReturn

import jsonschema
import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from starlette.types import Receive, Scope, Send

from datawell.app import create_app
from datawell.config import Settings
from datawell.errors import ModelError
from datawell.llm.embeddings import HashingEmbedder
from datawell.llm.models import FixedChatModels
from datawell.llm.scripted import ScriptedChatModel
from datawell.services import Overrides, build_services
from tests.conftest import POSTGRES_URL, Account, make_account

EXAMPLES = 12
# MCP's body is one of fourteen JSON-RPC messages (a `tools/call` per tool): more examples, so
# each is sent a few times.
MCP_EXAMPLES = 80


def offline(_messages: object) -> NoReturn:
    """The model, unreachable as a provider can be: operations that need it answer 502."""
    raise ModelError("the fake model is offline")


def app_settings(folder: Path, database_url: str) -> Settings:
    return Settings(
        data_dir=folder,
        database_url=database_url,
        jwt_secret="fuzz-secret-fuzz-secret-fuzz-secret",
        public_base_url="http://testserver",
        embeddings_enabled=False,
        embedded_model_enabled=False,
        # JSON ingestion (the DataLinks SDK's) answers once a worker has stored the rows.
        run_worker_in_process=True,
    )


async def seed(config: Settings, overrides: Overrides) -> Account:
    services = await build_services(config, overrides)
    try:
        return await make_account(services, "alice")
    finally:
        await services.close()


OVERRIDES = Overrides(models=FixedChatModels(ScriptedChatModel([offline] * 100_000)), embedder=HashingEmbedder())
# Schemathesis starts the app's lifespan at its first request and stops it at exit.


class FreshApp:
    """The app for schemathesis, built anew at each lifespan start: schemathesis may start
    and stop the lifespan between tests, and an app's lifespan runs once (its MCP session
    manager cannot be restarted)."""

    def __init__(self, database_url: str | None) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix="datawell-fuzz-"))
        self.database_url = database_url or f"sqlite+aiosqlite:///{self.folder / 'datawell.db'}"
        self.settings = app_settings(self.folder, self.database_url)
        self.app = create_app(self.settings, OVERRIDES)
        self.started = False

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            if self.started:
                self.app = create_app(self.settings, OVERRIDES)
            self.started = True
        await self.app(scope, receive, send)


def postgres_database() -> str | None:
    """A fresh database on the test server, when there is one (dropped by `account_on`)."""
    if not POSTGRES_URL:
        return None
    import asyncpg

    async def create() -> str:
        admin = await asyncpg.connect(POSTGRES_URL.replace("postgresql+asyncpg://", "postgresql://"))
        name = f"dw_fuzz_{uuid.uuid4().hex[:12]}"
        await admin.execute(f'CREATE DATABASE "{name}"')
        await admin.close()
        return POSTGRES_URL.rsplit("/", 1)[0] + f"/{name}"

    return asyncio.run(create())


async def drop_database(url: str) -> None:
    import asyncpg

    from datawell.tools.sandbox.postgres import drop_roles

    assert POSTGRES_URL
    name = url.rsplit("/", 1)[1]
    admin = await asyncpg.connect(POSTGRES_URL.replace("postgresql+asyncpg://", "postgresql://"))
    await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    await drop_roles(admin, name)
    await admin.close()


APP = FreshApp(None)
PG_APP = FreshApp(postgres_database()) if POSTGRES_URL else None
DOCUMENT = APP.app.state.openapi
# The document as built, copied before schemathesis is given it to fuzz from.
PUBLISHED = copy.deepcopy(DOCUMENT)
NEEDS_MODEL = [
    op["operationId"] for ops in DOCUMENT["paths"].values() for op in ops.values() if "502" in op["responses"]
]
CONFIG = schemathesis.Config.from_dict(
    {
        "base-url": "http://testserver",
        "operations": [
            # A BuildSpec naming datasets that do not exist is refused with 422 naming each of
            # them, and so is an example whose query the checker refuses: existence and query
            # validity are no rules a schema can state. Every other 422 on schema-valid input
            # is a failure.
            # So are the DataLinks SDK's requests that name things that must exist or fit
            # together (link ends in one namespace, a `rows` step's field holding rows), or that
            # Datawell refuses (restricted tokens), a query in the DataLinks query language, a
            # usage page cursor or a time zone name, and JSON rows the pipeline cannot store (no
            # row with a field, values of one field that fit no one type).
            {
                "include-operation-id": [
                    "build-specs.create",
                    "build-specs.replace",
                    "examples.add",
                    "datalinks.add_link",
                    "datalinks.add_token",
                    "datalinks.finish",
                    "datalinks.ingest_rows",
                    "datalinks.preview",
                    "datalinks.query",
                    "datalinks.save_ontology",
                    "datalinks.usage_by_day",
                    "datalinks.usage_history",
                ],
                # 502: the model is offline (`datalinks.query` documents it; elsewhere it is undocumented).
                "checks": {"positive_data_acceptance": {"expected-statuses": ["2xx", 401, 403, 404, 409, 422, 502]}},
            },
            # `/query/ask` streams JSON objects in its SSE `data:` lines, which the document
            # describes in words (as `/query/autorag`'s stream); tests/datalinks checks them.
            {"include-operation-id": ["datalinks.ask"], "checks": {"response_schema_conformance": {"enabled": False}}},
            # GET `/ontology/{owner}/{namespace}/links` and the SDK's POST
            # `/ontology/{username}/{namespace}/{datasetName}` share a path shape: a POST there
            # reaches the SDK's route (docs/decisions.md, the DataLinks SDK's surface).
            {"include-operation-id": ["ontology.list_any"], "checks": {"unsupported_method": {"enabled": False}}},
            # MCP is JSON-RPC: a well-formed message whose method, tool or arguments are wrong is
            # answered 200 with a JSON-RPC error or an error result, as the protocol has it, so a
            # body outside the document's oneOf is not refused with a 4xx (one that is no
            # JSON-RPC message is: 422).
            {"include-operation-id": ["mcp.call_mcp"], "checks": {"negative_data_rejection": {"enabled": False}}},
            # The model is offline, which these operations document as 502.
            {
                "include-operation-id": NEEDS_MODEL,
                "checks": {"not_a_server_error": {"expected-statuses": ["1xx", "2xx", "3xx", "4xx", 502]}},
            },
        ],
    }
)


def fuzzed(app: object, document: dict[str, Any] = DOCUMENT) -> Any:
    """Every operation of the document, MCP's included, sent to `app`."""
    found = schemathesis.openapi.from_dict(document, config=CONFIG)
    found.app = app
    return found


MCP_DOCUMENT = {**DOCUMENT, "paths": {"/api/v1/mcp": DOCUMENT["paths"]["/api/v1/mcp"]}}


schema = fuzzed(APP)
pg_schema = fuzzed(PG_APP)
mcp_schema = fuzzed(APP, MCP_DOCUMENT)
pg_mcp_schema = fuzzed(PG_APP, MCP_DOCUMENT)


def account_on(app: FreshApp) -> Iterator[Account]:
    yield asyncio.run(seed(app.settings, OVERRIDES))
    schemathesis.python.asgi.shutdown_lifespans()
    shutil.rmtree(app.folder, ignore_errors=True)
    if app.database_url.startswith("postgresql"):
        asyncio.run(drop_database(app.database_url))


@pytest.fixture(scope="module")
def account() -> Iterator[Account]:
    yield from account_on(APP)


@pytest.fixture(scope="module")
def pg_account() -> Iterator[Account]:
    if PG_APP is None:
        pytest.skip("DATAWELL_TEST_POSTGRES_URL is not set")
    yield from account_on(PG_APP)


def signed_in(case: schemathesis.Case, account: Account) -> dict[str, str]:
    """The account's token, except where schemathesis made the case negative through its
    Authorization header: replacing that would send a valid request it expects refused (a
    case whose only other negative value cannot be serialised, and so is left out, was then
    answered 200 and failed). Such a case goes as generated, and must be refused."""
    negative = case.meta is not None and case.meta.generation.mode.is_negative
    if negative and any(name.lower() == "authorization" for name in case.headers or {}):
        return {}
    return {"Authorization": f"Bearer {account.token}"}


@schema.parametrize()
@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
def test_every_operation_answers_as_documented(case: schemathesis.Case, account: Account) -> None:
    case.call_and_validate(headers=signed_in(case, account))


@pg_schema.parametrize()
@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@pytest.mark.postgres
def test_every_operation_answers_as_documented_on_postgresql(case: schemathesis.Case, pg_account: Account) -> None:
    """The issue: on PostgreSQL, NUL characters made 98 of 10,519 fuzzed requests answer 500."""
    case.call_and_validate(headers=signed_in(case, pg_account))


@mcp_schema.parametrize()
@settings(max_examples=MCP_EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
def test_mcp_answers_as_documented(case: schemathesis.Case, account: Account) -> None:
    case.call_and_validate(headers=signed_in(case, account))


@pg_mcp_schema.parametrize()
@settings(max_examples=MCP_EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@pytest.mark.postgres
def test_mcp_answers_as_documented_on_postgresql(case: schemathesis.Case, pg_account: Account) -> None:
    case.call_and_validate(headers=signed_in(case, pg_account))


def test_the_document_refuses_a_nul_in_a_key_of_an_open_object_at_any_depth() -> None:
    """The fuzzer sent an MCP call whose params held an unstated property, itself an object with
    a NUL in a key: the document allowed it (params left additional properties unstated, so any
    value) and the service refused it with 422. An unstated `additionalProperties` now says what
    routing takes: any JSON without a NUL."""
    validator = mcp_body_validator(PUBLISHED)

    def call(extra_key: str) -> dict[str, Any]:
        arguments = {"question": "How many orders?", "namespace": "shop"}
        params = {"name": "ask_nl2ql", "arguments": arguments, "extra": {extra_key: ["x"]}}
        return {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}

    assert validator.is_valid(call("plain"))
    assert not validator.is_valid(call("nu\u0000l"))


def test_a_second_app_in_the_process_publishes_the_same_document() -> None:
    """Building the document marked module-level schemas (MCP's body) in place, so a second app
    marked them again: an MCP request's integer id became invalid in every app's document."""
    document = FreshApp(None).app.state.openapi
    assert document == PUBLISHED
    validator = mcp_body_validator(document)
    assert validator.is_valid({"jsonrpc": "2.0", "id": 7, "method": "ping"})


def mcp_body_validator(document: dict[str, Any]) -> jsonschema.Draft202012Validator:
    """What `document` says a POST to the MCP endpoint may carry."""
    body_schema = document["paths"]["/api/v1/mcp"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    return jsonschema.Draft202012Validator({**body_schema, "components": document["components"]})
