"""The MCP server through the app in process, with the official `mcp` client over streamable
HTTP: every tool, the resources, the errors a caller sees, progress, both protocol eras."""

from __future__ import annotations

import json

import httpx
import jsonschema
import pytest
from mcp.shared.exceptions import MCPError

from datawell.services import Services
from tests.conftest import Account
from tests.fake_runs import (
    ANSWER,
    CHANGES,
    NL2QL_CHANGES,
    NL2QL_QUERY,
    NL2QL_ROWS,
    NL2QL_WRITTEN,
    PLAN,
    QUERIES,
    WRITTEN,
    FakeRuns,
)
from tests.mcp.conftest import MCP_PATH, TOOL_NAMES, Connect

MODES = ["legacy", "2026-07-28"]


@pytest.mark.parametrize("mode", MODES)
async def test_lists_every_tool_with_schemas(connect: Connect, alice: Account, mode: str) -> None:
    async with connect(alice, mode) as mcp:
        listed = {tool.name: tool for tool in (await mcp.list_tools()).tools}
    assert set(listed) == TOOL_NAMES
    for tool in listed.values():
        assert tool.output_schema is not None and tool.annotations and tool.annotations.read_only_hint
        if tool.name != "list_datasets":
            assert "namespace" in tool.input_schema["required"]
    assert {"model", "provider", "question"} <= set(listed["ask_assistant"].input_schema["properties"])
    assert "conversationId" in listed["ask_assistant"].input_schema["properties"]


async def test_list_datasets_shows_only_what_the_caller_reads(connect: Connect, alice: Account, bob: Account,
                                                              shop: str) -> None:  # fmt: skip
    async with connect(alice) as mcp:
        result = await mcp.call_tool("list_datasets", {})
    assert not result.is_error
    [sales] = result.structured_content["namespaces"]
    assert (sales["owner"], sales["namespace"], sales["access"]) == ("alice", "sales", "write")
    assert [d["name"] for d in sales["datasets"]] == ["customers", "orders"]
    assert sales["datasets"][1]["schemaUri"] == "datawell://alice/sales/orders/schema"
    assert json.loads(result.content[0].text) == result.structured_content


async def test_describe_dataset(connect: Connect, alice: Account, shop: str) -> None:
    async with connect(alice) as mcp:
        result = await mcp.call_tool("describe_dataset", {"namespace": "sales", "dataset": "orders"})
    described = result.structured_content
    assert described["rowCount"] == 5
    fields = {f["name"]: f for f in described["fields"]}
    assert fields["total"]["type"] == "real" and fields["total"]["description"] == "amount in EUR"
    assert fields["customer"]["samples"] == ["Ada", "Bob", "Cy", "Dee"]
    assert fields["customer"]["values"] == "one of 'Ada', 'Bob', 'Cy', 'Dee'"
    assert fields["total"]["samples"] == [3.0, 99.0] and fields["total"]["values"] == "3.0 to 99.0"


@pytest.mark.parametrize("mode", MODES)
async def test_run_query_returns_rows_with_metadata(connect: Connect, alice: Account, shop: str, mode: str) -> None:
    query = "SELECT order_id, total FROM orders WHERE paid ORDER BY order_id"
    async with connect(alice, mode) as mcp:
        result = await mcp.call_tool("run_query", {"namespace": "alice/sales", "query": query})
    assert not result.is_error
    rows = result.structured_content["rows"]
    assert [(r["order_id"], r["total"]) for r in rows] == [(1, 12.5), (3, 7.25), (4, 30.0)]
    assert rows[0]["__metadata"]["dataset"] == {"owner": "alice", "namespace": "sales", "datasetName": "orders"}
    assert result.structured_content["truncated"] is False


async def test_semantic_search_ranks_rows(connect: Connect, alice: Account, shop: str) -> None:
    async with connect(alice) as mcp:
        result = await mcp.call_tool(
            "semantic_search", {"namespace": "sales", "dataset": "orders", "text": "apple pie", "limit": 2}
        )
    rows = result.structured_content["rows"]
    assert len(rows) == 2 and all("apple" in r["note"] for r in rows)
    assert set(rows[0]) == {"order_id", "customer", "total", "paid", "note", "placed", "__metadata"}
    assert rows[0]["__metadata"]["score"] >= rows[1]["__metadata"]["score"] > 0


async def test_list_links(connect: Connect, alice: Account, shop: str) -> None:
    async with connect(alice) as mcp:
        result = await mcp.call_tool("list_links", {"namespace": "sales"})
    [link] = result.structured_content["links"]
    assert (link["origin"], link["destination"], link["matchType"]) == (
        "sales/orders.customer",
        "sales/customers.name",
        "ExactMatch",
    )


async def test_ask_nl2ql(connect: Connect, alice: Account, shop: str, fake: FakeRuns) -> None:
    async with connect(alice) as mcp:
        result = await mcp.call_tool(
            "ask_nl2ql", {"namespace": "sales", "question": "Big orders?", "model": "gpt-x", "provider": "openai"}
        )
    # issue 47, beside the query and rows: the query as written and the rules that changed it
    assert result.structured_content == {
        "query": NL2QL_QUERY,
        "rows": NL2QL_ROWS,
        "truncated": False,
        "modelQuery": NL2QL_WRITTEN,
        "changes": NL2QL_CHANGES,
    }
    [request] = fake.requests
    assert (request.question, request.namespace.name, request.choices.default.litellm_name()) == (
        "Big orders?",
        "sales",
        "openai/gpt-x",
    )


@pytest.mark.parametrize("mode", MODES)
async def test_ask_assistant_reports_progress_and_continues(connect: Connect, alice: Account, shop: str,
                                                           fake: FakeRuns, mode: str) -> None:  # fmt: skip
    progress: list[tuple[float, float | None, str | None]] = []

    async def record(value: float, total: float | None, message: str | None) -> None:
        progress.append((value, total, message))

    async with connect(alice, mode) as mcp:
        first = await mcp.call_tool(
            "ask_assistant", {"namespace": "sales", "question": "Who orders most?"}, progress_callback=record
        )
        conversation = first.structured_content["conversationId"]
        second = await mcp.call_tool(
            "ask_assistant", {"namespace": "sales", "question": "And then?", "conversationId": conversation}
        )
    assert first.content[0].text == ANSWER
    assert first.structured_content["plan"] == PLAN
    assert [s["query"] for s in first.structured_content["steps"]] == [
        "SELECT customer, COUNT(*) AS orders FROM orders GROUP BY customer",
        "SELECT customer FROM orders GROUP BY customer ORDER BY COUNT(*) DESC LIMIT 1",
    ]
    assert [(s["modelQuery"], s["changes"]) for s in first.structured_content["steps"]] == [
        (WRITTEN, CHANGES),
        (QUERIES[1], []),
    ]
    assert [m for _, _, m in progress] == [
        "planning",
        "plan: 2 step(s)",
        f"step 1: {PLAN[0]}",
        "step 1: 2 rows",
        f"step 2: {PLAN[1]}",
        "step 2: 1 rows",
        "answered",
    ]
    values = [v for v, _, _ in progress]
    assert values == sorted(set(values)) and progress[-1][:2] == (4, 4)
    assert second.structured_content["answer"].endswith("(after: Who orders most?)")


async def test_resources_are_the_readable_schemas(connect: Connect, alice: Account, bob: Account, shop: str) -> None:
    async with connect(bob) as mcp:
        listed = [r.uri for r in (await mcp.list_resources()).resources]
        templates = (await mcp.list_resource_templates()).resource_templates
        read = await mcp.read_resource("datawell://bob/crm/leads/schema")
        with pytest.raises(MCPError) as refused:
            await mcp.read_resource("datawell://alice/sales/orders/schema")
    assert listed == ["datawell://bob/crm/leads/schema"]
    assert templates[0].uri_template == "datawell://{owner}/{namespace}/{dataset}/schema"
    assert json.loads(read.contents[0].text)["fields"][0]["name"] == "name"
    assert "no read access to namespace alice/sales" in refused.value.message
    assert refused.value.data == {"errorCode": "FORBIDDEN"}


async def test_another_users_namespace_is_a_tool_error(connect: Connect, bob: Account, shop: str,
                                                       fake: FakeRuns) -> None:  # fmt: skip
    async with connect(bob) as mcp:
        for name, arguments in [
            ("run_query", {"query": "SELECT * FROM orders"}),
            ("describe_dataset", {"dataset": "orders"}),
            ("ask_assistant", {"question": "Who?"}),
        ]:
            result = await mcp.call_tool(name, {"namespace": "alice/sales", **arguments})
            assert result.is_error
            assert result.content[0].text == "FORBIDDEN: user 'bob' has no read access to namespace alice/sales"
            assert result.structured_content is None and result.meta["errorCode"] == "FORBIDDEN"
    assert fake.requests == []


@pytest.mark.parametrize(
    "query",
    [
        "DELETE FROM orders",
        "SELECT 1; DROP TABLE orders",
        "SELECT * FROM sqlite_master",
        "SELECT * FROM bob.crm.leads",
    ],
)
async def test_hostile_queries_are_refused_by_the_checker(connect: Connect, alice: Account, shop: str,
                                                          query: str) -> None:  # fmt: skip
    async with connect(alice) as mcp:
        result = await mcp.call_tool("run_query", {"namespace": "sales", "query": query})
    assert result.is_error
    assert result.structured_content is None and result.meta["errorCode"] == "QUERY_ERROR"
    assert result.content[0].text.startswith("QUERY_ERROR: ")


async def test_bad_arguments_and_unknown_tools(connect: Connect, alice: Account, shop: str) -> None:
    async with connect(alice) as mcp:
        missing = await mcp.call_tool("run_query", {"namespace": "sales"})
        malformed = await mcp.call_tool("list_links", {"namespace": "a/b/c"})
        nowhere = await mcp.call_tool("list_links", {"namespace": "nobody"})
        with pytest.raises(MCPError) as unknown:
            await mcp.call_tool("drop_everything", {})
    assert missing.is_error and missing.meta["errorCode"] == "VALIDATION_ERROR"
    assert missing.content[0].text == "VALIDATION_ERROR: the tool arguments are invalid\n- query: Field required"
    assert missing.meta["subErrors"] == [{"code": "missing", "message": "query: Field required"}]
    assert malformed.meta["errorCode"] == "VALIDATION_ERROR"
    assert [r.structured_content for r in (missing, malformed, nowhere)] == [None] * 3
    assert nowhere.content[0].text == "NOT_FOUND: namespace alice/nobody does not exist"
    assert "no tool named 'drop_everything'" in unknown.value.message


async def test_failed_runs_are_tool_errors(connect: Connect, alice: Account, shop: str, fake: FakeRuns) -> None:
    fake.fail = "event"
    async with connect(alice) as mcp:
        assistant = await mcp.call_tool("ask_assistant", {"namespace": "sales", "question": "Who?"})
        nl2ql = await mcp.call_tool("ask_nl2ql", {"namespace": "sales", "question": "Who?"})
    assert assistant.content[0].text == "MODEL_ERROR: the plan model returned nothing usable"
    assert nl2ql.content[0].text == "QUERY_ERROR: no column named 'totl'"
    fake.fail = "raise"
    async with connect(alice) as mcp:
        crashed = await mcp.call_tool("ask_nl2ql", {"namespace": "sales", "question": "Who?"})
    assert crashed.content[0].text.startswith("INTERNAL_ERROR: ")
    assert "connection reset" not in crashed.content[0].text


async def test_no_token_is_401(client: httpx.AsyncClient, connect: Connect) -> None:
    list_tools = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    response = await client.post(MCP_PATH, json=list_tools, headers={"Accept": "application/json, text/event-stream"})
    assert response.status_code == 401
    assert response.headers["www-authenticate"] == "Bearer"
    assert response.json()["error_code"] == "UNAUTHORIZED"
    # The SDK client reports the 401 as an error response without its status.
    refused: list[Exception] = []
    try:
        async with connect(None) as mcp:
            await mcp.list_tools()
    except* MCPError as group:
        refused = list(group.exceptions)
    assert refused


async def test_trailing_slash_and_no_sessions(client: httpx.AsyncClient, alice: Account) -> None:
    headers = {**alice.headers, "Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-11-25"}
    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
    }
    for path in (MCP_PATH, MCP_PATH + "/"):
        response = await client.post(path, json=initialize, headers=headers)
        assert response.status_code == 200
        assert "mcp-session-id" not in response.headers
    assert (await client.get(MCP_PATH, headers=headers)).status_code == 405


async def test_results_match_their_output_schema_and_errors_carry_none(
    connect: Connect, alice: Account, shop: str
) -> None:
    """What the TypeScript SDK checks: structured content, whenever present (on errors too),
    validates against the tool's outputSchema; a tool error carries none."""
    calls = [
        ("describe_dataset", {"namespace": "sales", "dataset": "orders"}),
        ("run_query", {"namespace": "sales", "query": "SELECT * FROM orders"}),
        ("list_datasets", {}),
        ("describe_dataset", {"namespace": "sales", "dataset": "nothing"}),
        ("run_query", {"namespace": "sales"}),
        ("run_query", {"namespace": "sales", "query": "SELECT nope FROM orders"}),
    ]
    async with connect(alice) as mcp:
        schemas = {tool.name: tool.output_schema for tool in (await mcp.list_tools()).tools}
        results = [(name, await mcp.call_tool(name, arguments)) for name, arguments in calls]
    assert [r.is_error for _, r in results] == [False, False, False, True, True, True]
    for name, result in results:
        if result.is_error:
            assert result.structured_content is None
        else:
            jsonschema.validate(result.structured_content, schemas[name])
    samples = schemas["describe_dataset"]["$defs"]["FieldDescription"]["properties"]["samples"]
    assert samples["items"] == {"anyOf": [{"type": "string"}, {"type": "integer"}, {"type": "number"}]}
    placed = next(f for f in results[0][1].structured_content["fields"] if f["name"] == "placed")
    assert all(isinstance(v, str) for v in placed["samples"]) and len(placed["samples"]) == 2


JSON_RPC = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-11-25"}
LIST_TOOLS = {"jsonrpc": "2.0", "id": 7, "method": "tools/list"}


def assert_error(response: httpx.Response, status: int, code: str, rpc_code: int) -> dict:
    """An MCP transport error: an ErrorResponse and a JSON-RPC error in one body."""
    assert response.status_code == status, response.text
    body = response.json()
    assert body["error_code"] == code and body["message"] and body["sub_errors"] == []
    assert body["jsonrpc"] == "2.0" and body["error"]["code"] == rpc_code
    assert body["error"]["data"] == {"errorCode": code} and body["error"]["message"] == body["message"]
    return body


async def test_transport_errors_are_error_responses_and_json_rpc_errors(
    client: httpx.AsyncClient, alice: Account
) -> None:
    headers = {**alice.headers, **JSON_RPC}
    plain = await client.post(
        MCP_PATH, content=json.dumps(LIST_TOOLS), headers={**headers, "Content-Type": "text/plain"}
    )
    assert "application/json" in assert_error(plain, 415, "UNSUPPORTED_MEDIA_TYPE", -32602)["message"]
    unparsable = await client.post(MCP_PATH, content=b"{nope", headers={**headers, "Content-Type": "application/json"})
    assert_error(unparsable, 422, "VALIDATION_ERROR", -32700)
    not_rpc = await client.post(MCP_PATH, json={"hello": 1}, headers=headers)
    assert_error(not_rpc, 422, "VALIDATION_ERROR", -32602)
    fine = await client.post(MCP_PATH, json=LIST_TOOLS, headers=headers)
    assert fine.status_code == 200


@pytest.mark.parametrize(
    ("origin", "status"),
    [
        (None, 200),
        ("http://testserver", 200),  # the service's own origin (where it listens)
        ("http://TESTSERVER:80", 200),
        ("https://studio.example.com", 200),  # DATAWELL_MCP_ALLOWED_ORIGINS
        ("http://evil.example.com", 403),
        ("http://testserver:8080", 403),  # another port of the same host is another origin
        ("https://testserver", 403),
        ("null", 403),
    ],
)
async def test_a_foreign_origin_is_refused(
    client: httpx.AsyncClient, services: Services, alice: Account, origin: str | None, status: int
) -> None:
    """DNS rebinding (MCP transport, 2025-11-25): a browser page on another origin must not
    reach the endpoint, even with a valid token."""
    services.settings.mcp_allowed_origins = ["https://studio.example.com"]
    headers = {**alice.headers, **JSON_RPC, **({"Origin": origin} if origin else {})}
    response = await client.post(MCP_PATH, json=LIST_TOOLS, headers=headers)
    if status == 403:
        assert origin in assert_error(response, 403, "FORBIDDEN", -32602)["message"]
    else:
        assert response.status_code == 200, response.text
