"""The MCP endpoint over real HTTP: a uvicorn process (graph runs faked, as for the A2A
process test) and the official `mcp` client, in both protocol eras."""

from __future__ import annotations

import httpx
import pytest
from mcp.shared.exceptions import MCPError

from tests.agents.test_server_process import server, server_env, token, user_with_token  # noqa: F401  (fixtures)
from tests.conftest import Account
from tests.mcp.conftest import MCP_PATH, TOOL_NAMES, connector


@pytest.fixture
async def bob(server_env: dict[str, str]) -> Account:  # noqa: F811
    """A second user; made before the server starts (the test names it first)."""
    return Account("bob", await user_with_token(server_env, "bob"), "")


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_mcp_over_real_http(bob: Account, server: httpx.AsyncClient, token: str, mode: str) -> None:  # noqa: F811
    alice = Account("alice", token, "")
    for account, namespace in ((alice, "sales"), (bob, "crm")):
        created = await server.post(
            f"/api/v1/ingest/new/{namespace}/orders",
            json={"schemaDefinition": {"customer": "Customer", "total": "EUR"}},
            headers=account.headers,
        )
        assert created.status_code == 201
    connect = connector(str(server.base_url).rstrip("/"))
    progress: list[str | None] = []

    async def record(_value: float, _total: float | None, message: str | None) -> None:
        progress.append(message)

    async with connect(alice, mode) as mcp:
        assert {t.name for t in (await mcp.list_tools()).tools} == TOOL_NAMES
        calls = {
            "list_datasets": {},
            "describe_dataset": {"namespace": "sales", "dataset": "orders"},
            "run_query": {"namespace": "sales", "query": "SELECT customer FROM orders"},
            "semantic_search": {"namespace": "sales", "dataset": "orders", "text": "big"},
            "list_links": {"namespace": "sales"},
            "ask_nl2ql": {"namespace": "sales", "question": "Big orders?"},
            "ask_assistant": {"namespace": "sales", "question": "Who orders most?"},
        }
        results = {
            name: await mcp.call_tool(name, arguments, progress_callback=record) for name, arguments in calls.items()
        }
        refused = await mcp.call_tool("run_query", {"namespace": "bob/crm", "query": "SELECT * FROM orders"})
        hostile = await mcp.call_tool("run_query", {"namespace": "sales", "query": "SELECT 1; DELETE FROM orders"})
        schema = await mcp.read_resource("datawell://alice/sales/orders/schema")
    assert [name for name, result in results.items() if result.is_error] == []
    assert [d["name"] for d in results["list_datasets"].structured_content["namespaces"][0]["datasets"]] == ["orders"]
    assert results["describe_dataset"].structured_content["rowCount"] == 0
    assert results["ask_assistant"].structured_content["answer"] == "Alice placed the most orders (2)."
    assert progress[:2] == ["query: SELECT customer, total FROM orders WHERE total > 100", "1 rows"]
    assert progress[2:] == [
        "planning",
        "plan: 2 step(s)",
        "step 1: Count the orders per customer",
        "step 1: 2 rows",
        "step 2: Find the customer with the most orders",
        "step 2: 1 rows",
        "answered",
    ]
    assert refused.is_error
    assert refused.content[0].text == "FORBIDDEN: user 'alice' has no read access to namespace bob/crm"
    assert hostile.is_error and hostile.meta["errorCode"] == "QUERY_ERROR"
    assert '"dataset": "orders"' in schema.contents[0].text

    unauthenticated = await server.post(MCP_PATH, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    assert unauthenticated.status_code == 401
    assert unauthenticated.headers["www-authenticate"] == "Bearer"
    failed: list[Exception] = []
    try:
        async with connect(None, mode) as mcp:
            await mcp.list_tools()
    except* MCPError as group:
        failed = list(group.exceptions)
    assert failed


async def test_origin_over_real_http(server: httpx.AsyncClient, token: str) -> None:  # noqa: F811
    """The service's own origins are where it listens (and the loopback names of that port); a
    DNS-rebinding page has its own name in both Origin and Host, and is refused."""
    base = str(server.base_url).rstrip("/")
    port = base.rsplit(":", 1)[1]
    headers = {"Authorization": f"Bearer {token}", "Accept": "application/json, text/event-stream",
               "MCP-Protocol-Version": "2025-11-25"}  # fmt: skip
    list_tools = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    for origin, host, status in [
        (base, None, 200),
        (f"http://localhost:{port}", None, 200),
        (f"http://evil.example.com:{port}", f"evil.example.com:{port}", 403),
        ("http://evil.example.com", None, 403),
    ]:
        sent = {**headers, "Origin": origin, **({"Host": host} if host else {})}
        response = await server.post(MCP_PATH, json=list_tools, headers=sent)
        assert response.status_code == status, (origin, response.text)
        if status == 403:
            assert response.json()["error_code"] == "FORBIDDEN"
