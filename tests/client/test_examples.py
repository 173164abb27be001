"""Verified examples through the client (sync and async) and `datawell examples`, beside a server."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner, Result

from datawell.cli import app
from datawell.client import ApiError, AsyncClient, Client
from tests.client.conftest import Live

QUERY = "SELECT customer FROM orders"


def datawell(live: Live, *args: str) -> Result:
    return CliRunner().invoke(app, list(args), env=live.env)


async def test_examples_through_the_clients(live: Live) -> None:
    with Client(live.url, live.token) as client:
        client.create_dataset("book", "orders", {"customer": "Who", "total": "EUR"})
        added = client.add_example("demo", "book", "Who ordered?", QUERY)
        with pytest.raises(ApiError) as refused:
            client.add_example("demo", "book", "Shoe sizes?", "SELECT shoe_size FROM orders")
        with pytest.raises(ApiError) as unknown:
            client.mark_step("no-such-conversation", 1, "good")
    async with AsyncClient(live.url, live.token) as aclient:
        listed = await aclient.list_examples("demo", "book")
        await aclient.delete_example("demo", "book", added.id)
        after = await aclient.list_examples("demo", "book")
    assert (added.question, added.query, added.source, added.created_by) == ("Who ordered?", QUERY, "manual", "demo")
    assert (refused.value.status, refused.value.error_code) == (422, "QUERY_ERROR")
    assert unknown.value.status == 404
    assert [e.id for e in listed.data] == [added.id]
    assert after.data == []


def test_examples_commands(live: Live) -> None:
    with Client(live.url, live.token) as client:
        client.create_dataset("desk", "orders", {"customer": "Who", "total": "EUR"})
    added = datawell(live, "examples", "add", "demo/desk", "Who ordered?", QUERY)
    assert added.exit_code == 0, added.output
    example_id = added.output.split()[-1]
    listed = datawell(live, "examples", "list", "demo/desk")
    assert example_id in listed.output and "Who ordered?" in listed.output and "manual" in listed.output
    refused = datawell(live, "examples", "add", "demo/desk", "Sizes?", "SELECT size FROM orders")
    assert refused.exit_code == 1 and "unknown column 'size'" in refused.output
    marked = datawell(live, "examples", "mark", "no-such-conversation", "1", "bad")
    assert marked.exit_code == 1 and "does not exist" in marked.output
    deleted = datawell(live, "examples", "delete", "demo/desk", example_id)
    assert deleted.exit_code == 0 and "no verified examples" in datawell(live, "examples", "list", "demo/desk").output
