"""`datawell ask` as an operator runs it: the generated query and the rows, or a clear error."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import datawell.services
from datawell import cli
from datawell.config import Settings
from datawell.graphs.nl2ql.state import QueryDraft
from datawell.llm.models import FixedChatModels
from datawell.llm.scripted import ScriptedChatModel
from datawell.services import Overrides, Services, build_services
from datawell.storage.access import ensure_namespace
from datawell.storage.users import create_user
from tests.graphs.conftest import CUSTOMERS
from tests.graphs.fakes import FakeQueryTools, table

OSLO = "SELECT name, city FROM customers WHERE city = 'Oslo'"


@pytest.fixture
def operator(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[ScriptedChatModel, FakeQueryTools]:
    """A data folder with users alice and bob and alice's namespace `shop`; the CLI gets a
    scripted model and fake query tools."""
    monkeypatch.setenv("DATAWELL_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("DATAWELL_EMBEDDINGS_ENABLED", "false")
    monkeypatch.setenv("DATAWELL_JWT_SECRET", "test-secret-test-secret-test-secret")
    model, tools = ScriptedChatModel([]), FakeQueryTools()
    overrides = Overrides(models=FixedChatModels(model), queries=tools)

    async def with_fakes(settings: Settings, _overrides: Overrides | None = None) -> Services:
        return await build_services(settings, overrides)

    monkeypatch.setattr(datawell.services, "build_services", with_fakes)  # what the commands build

    async def setup() -> None:
        services = await with_fakes(Settings())
        try:
            async with services.db.session() as session:
                alice = await create_user(session, "alice")
                namespace = await ensure_namespace(session, alice, "shop")
            tools.tables.append(table(namespace, "customers", CUSTOMERS))
        finally:
            await services.close()

    asyncio.run(setup())
    return model, tools


def ask(*args: str) -> Any:
    return CliRunner().invoke(cli.app, ["ask", "--local", *args])


def test_ask_prints_the_query_and_the_rows(operator: tuple[ScriptedChatModel, FakeQueryTools]) -> None:
    model, tools = operator
    model.script.append(QueryDraft(query=OSLO))
    tools.rows[OSLO] = [{"name": "Ann", "city": "Oslo", "__metadata": {"id": 1}}, {"name": "Ole-Johan", "city": "Oslo"}]

    result = ask("--namespace", "shop", "Who lives in Oslo?")

    assert result.exit_code == 0, result.output
    assert result.stdout == f"{OSLO}\n\nname       city\nAnn        Oslo\nOle-Johan  Oslo\n(2 rows)\n"
    assert {(c.user, c.namespace) for c in tools.calls} == {("alice", "alice/shop")}


def test_ask_needs_to_know_whose_access_applies(operator: tuple[ScriptedChatModel, FakeQueryTools]) -> None:
    model, _tools = operator
    assert ask("--user", "bob", "--namespace", "shop", "q").stderr == "error: no user named 'bob'\n"
    asyncio.run(add_user("bob"))

    several = ask("--namespace", "shop", "q")
    assert several.exit_code == 1
    assert "several users: name the one whose access applies with --user" in several.stderr
    forbidden = ask("--user", "bob", "--namespace", "alice/shop", "q")
    assert forbidden.exit_code == 1
    assert forbidden.stderr == "error: user 'bob' has no read access to namespace alice/shop\n"
    model.script.append(QueryDraft(refusal="no weather data"))
    refused = ask("--namespace", "alice/shop", "Rain?")  # the owner named in OWNER/NAME asks
    assert (refused.exit_code, refused.stderr) == (1, "error: the datasets cannot answer this: no weather data\n")


async def add_user(name: str) -> None:
    services = await datawell.services.build_services(Settings())
    try:
        async with services.db.session() as session:
            await create_user(session, name)
    finally:
        await services.close()
