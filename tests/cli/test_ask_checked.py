"""Issue 50: `datawell ask` prints only the checked answer. The stream it reads is the real
server's (the assistant graph with a scripted model that states a number the rows do not
hold), replayed to the command through the client's transport."""

from __future__ import annotations

import asyncio

import httpx
import pytest
from typer.testing import CliRunner

import datawell.commands.remote
from datawell.cli import app
from datawell.client import Client
from datawell.llm.scripted import ScriptedChatModel
from tests.api.test_checked_answer import CHECKED, sse_run, wrong_twice
from tests.conftest import Account


async def test_datawell_ask_prints_the_checked_answer_and_never_the_models_number(
    client, alice: Account, sales: str, chat_model: ScriptedChatModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    wrong_twice(chat_model)
    body = await sse_run(client, alice, sales)
    asked: list[httpx.Request] = []

    def server(request: httpx.Request) -> httpx.Response:
        asked.append(request)
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, text=body)

    def replaying(url: str, token: str | None = None) -> Client:
        return Client(url, token, transport=httpx.MockTransport(server))

    monkeypatch.setattr(datawell.commands.remote, "Client", replaying)
    command = ["ask", "--namespace", sales, "--token", "t", "--server", "http://testserver", "How many orders?"]

    result = await asyncio.to_thread(CliRunner().invoke, app, command)

    assert result.exit_code == 0, result.output
    assert [r.url.path for r in asked] == ["/api/v1/query/autorag"]
    answer = result.stdout.split("\nA: ", 1)[1]
    assert answer.startswith(CHECKED)
    assert "1 order" not in result.stdout
    assert result.stdout.count("A:") == 1 and "checked against" not in result.stdout
