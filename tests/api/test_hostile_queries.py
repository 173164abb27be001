"""Issue 51's attacks, on every store: a query is bounded before anything parses it, a value
cannot grow past the row size inside the database, a query the model writes past the limits
is refused with the limit's message before any rewrite reads it, and a NUL character is
refused alike on every surface. Each answer is a clear refusal, in time, never a 500."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from datawell.graphs.nl2ql.state import QueryDraft
from datawell.llm.scripted import ScriptedChatModel
from datawell.services import Services
from tests.agents.a2a_client import rpc_body, wire_message
from tests.conftest import Account

MCP = "/api/v1/mcp"
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-11-25"}
A2A_HEADERS = {"A2A-Version": "1.0"}


def cte_chain(count: int) -> str:
    links = ", ".join(f"c{i} AS (SELECT x + 1 AS x FROM c{i - 1})" for i in range(1, count))
    return f"WITH c0 AS (SELECT 1 AS x), {links} SELECT x FROM c{count - 1}"


def short_cte_chain(count: int) -> str:
    """As many CTEs as fit in few characters: past the CTE limit, within the length limit."""
    return "WITH " + ",".join(f"a{i} AS (SELECT 1)" for i in range(count)) + " SELECT 1 AS x"


def deep(levels: int) -> str:
    return "SELECT " + "(" * levels + "1" + ")" * levels + " AS x"


DOUBLING = (
    "WITH RECURSIVE r(n, s) AS (SELECT 1, 'x' UNION ALL SELECT n + 1, s || s FROM r WHERE n < 40) "
    "SELECT max(length(s)) AS l FROM r"
)
LONG = "'" + "y" * 5000 + "'"
GROWING_AGGREGATE = (
    "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 200000) "
    f"SELECT length(string_agg({LONG}, ',')) AS l FROM r"
)
GROWING_ARRAY = (
    "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 200000) "
    f"SELECT array_agg({LONG}) AS a FROM r"
)


@dataclass
class Took:
    """A request's time: this process's CPU seconds (the server runs in it, in every thread),
    which other work on a shared machine does not inflate, and its wall seconds, bounded
    loosely for that reason (bench/hostile.py measures them on an idle machine)."""

    cpu: float = 0.0
    wall: float = 0.0

    def within(self, seconds: float) -> None:
        assert self.cpu < seconds, f"took {self.cpu:.2f} CPU seconds"
        assert self.wall < 5 * seconds, f"took {self.wall:.2f} s"


@contextmanager
def timed() -> Iterator[Took]:
    took = Took()
    cpu, wall = time.process_time(), time.monotonic()
    yield took
    took.cpu, took.wall = time.process_time() - cpu, time.monotonic() - wall


def tool_call(name: str, arguments: dict[str, Any], request_id: int = 1) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments},
    }


def mcp_result(response: httpx.Response) -> dict[str, Any]:
    if response.headers["content-type"].startswith("text/event-stream"):
        data = [line[5:] for line in response.text.splitlines() if line.startswith("data:")]
        return dict(json.loads(data[-1])["result"])
    return dict(response.json()["result"])


async def run_query(client: httpx.AsyncClient, account: Account, namespace: str, query: str) -> dict[str, Any]:
    response = await client.post(
        MCP,
        json=tool_call("run_query", {"namespace": namespace, "query": query}),
        headers={**account.headers, **MCP_HEADERS},
    )
    assert response.status_code == 200, response.text
    return mcp_result(response)


@pytest.mark.parametrize(
    ("query", "limit"),
    [
        (cte_chain(5_000), "length_limit"),
        (cte_chain(8_000), "length_limit"),
        (cte_chain(20_000), "length_limit"),
        (short_cte_chain(2_000), "cte_limit"),
        (deep(500), "nesting_limit"),
        (deep(5_000), "nesting_limit"),
        ("SELECT 1 AS x FROM (" * 70 + "SELECT 1 AS x" + ") AS t" * 70, "select_limit"),
        ("SELECT 1 AS x FROM orders " + " ".join(f"JOIN orders AS o{i} ON true" for i in range(40)), "join_limit"),
        (" UNION ALL ".join(["SELECT 1 AS x"] * 100), "select_limit"),
    ],
    ids=[
        "ctes-5000",
        "ctes-8000",
        "ctes-20000",
        "ctes-short",
        "depth-500",
        "depth-5000",
        "subqueries",
        "joins",
        "unions",
    ],
)
async def test_a_query_past_a_limit_is_refused_before_it_is_parsed(
    client: httpx.AsyncClient, alice: Account, sales: str, query: str, limit: str
) -> None:
    with timed() as took:
        result = await run_query(client, alice, sales, query)
    assert result["isError"] is True
    assert result["_meta"]["errorCode"] == "QUERY_REFUSED"
    assert [s["code"] for s in result["_meta"]["subErrors"]] == [limit]
    assert "(setting DATAWELL_QUERY_MAX_" in result["content"][0]["text"]
    took.within(2)


async def test_ctes_read_twice_over_are_refused_before_the_store_plans_them(
    client: httpx.AsyncClient, alice: Account, sales: str
) -> None:
    # SQLite plans each reading of a CTE as a copy: 20 links of "read the last one twice" are
    # a million copies (1 GB and seconds of planning that no progress handler sees).
    links = ", ".join(f"c{i} AS (SELECT x FROM c{i - 1} UNION ALL SELECT x FROM c{i - 1})" for i in range(1, 20))
    with timed() as took:
        result = await run_query(
            client, alice, sales, f"WITH c0 AS (SELECT 1 AS x), {links} SELECT count(*) AS n FROM c19"
        )
    took.within(2)
    assert [s["code"] for s in result["_meta"]["subErrors"]] == ["expansion_limit"]
    assert "1,048,576 query blocks" in result["content"][0]["text"]
    # A few links run, with the same answer on every store.
    few = ", ".join(f"c{i} AS (SELECT x FROM c{i - 1} UNION ALL SELECT x FROM c{i - 1})" for i in range(1, 6))
    result = await run_query(client, alice, sales, f"WITH c0 AS (SELECT 1 AS x), {few} SELECT count(*) AS n FROM c5")
    assert result["structuredContent"]["rows"][0]["n"] == 32


@pytest.mark.parametrize(
    "query", [DOUBLING, GROWING_AGGREGATE, GROWING_ARRAY], ids=["doubling", "string_agg", "array_agg"]
)
async def test_a_value_that_grows_inside_the_database_stops_at_the_row_size(
    client: httpx.AsyncClient, services: Services, alice: Account, sales: str, query: str
) -> None:
    if query == GROWING_ARRAY and services.rows.dialect == "sqlite":
        pytest.skip("SQLite has no array_agg")
    with timed() as took:
        result = await run_query(client, alice, sales, query)
    assert result["isError"] is True, result
    assert result["_meta"]["errorCode"] == "QUERY_ERROR"
    assert [s["code"] for s in result["_meta"]["subErrors"]] == ["size_limit"], result
    took.within(5)


async def test_aggregates_and_concatenation_within_the_row_size_run_as_before(
    client: httpx.AsyncClient, alice: Account, sales: str
) -> None:
    query = (
        "WITH t AS (SELECT 1 AS k, 'a' AS v UNION ALL SELECT 1, 'a' UNION ALL SELECT 2, 'c' UNION ALL SELECT 2, NULL) "
        "SELECT k, string_agg(v, '-') AS s, "
        "concat(k, '|', 'z') || '!' AS c, concat_ws('/', k, 'w') AS w, replace('aXa', 'X', 'yy') AS r "
        "FROM t GROUP BY k ORDER BY k"
    )
    result = await run_query(client, alice, sales, query)
    assert result.get("isError") is not True, result
    rows = [{k: v for k, v in row.items() if k != "__metadata"} for row in result["structuredContent"]["rows"]]
    assert rows == [
        {"k": 1, "s": "a-a", "c": "1|z!", "w": "1/w", "r": "ayya"},
        {"k": 2, "s": "c", "c": "2|z!", "w": "2/w", "r": "ayya"},
    ]


# --- a query the model writes ---


@pytest.mark.parametrize("levels", [500, 5_000])
async def test_a_model_query_past_the_nesting_limit_is_refused_with_its_message(
    client: httpx.AsyncClient, alice: Account, sales: str, chat_model: ScriptedChatModel, levels: int
) -> None:
    chat_model.script += [QueryDraft(query=deep(levels))] * 6  # every attempt and repair the model has
    arguments = {"namespace": sales, "question": "How many orders are there?"}
    response = await client.post(MCP, json=tool_call("ask_nl2ql", arguments), headers={**alice.headers, **MCP_HEADERS})
    assert response.status_code == 200
    result = mcp_result(response)
    assert result["isError"] is True
    assert result["_meta"]["errorCode"] == "QUERY_ERROR"
    assert f"the query nests {levels} levels deep" in result["content"][0]["text"]
    assert "DATAWELL_QUERY_MAX_NESTING" in result["content"][0]["text"]

    chat_model.script += [QueryDraft(query=deep(levels))] * 6
    message = wire_message("How many orders are there?", {"namespace": sales})
    response = await client.post(
        "/api/v1/a2a/nl2ql",
        json=rpc_body("SendMessage", {"message": message}),
        headers={**alice.headers, **A2A_HEADERS},
    )
    assert response.status_code == 200
    task = response.json()["result"]["task"]
    assert task["status"]["state"] == "TASK_STATE_FAILED"
    status = task["status"]["message"]
    assert status["metadata"]["errorCode"] == "QUERY_ERROR"
    assert f"the query nests {levels} levels deep" in status["parts"][0]["text"]


# --- NUL on every surface ---


async def test_nul_in_any_mcp_string_is_the_rest_refusal(client: httpx.AsyncClient, alice: Account, sales: str) -> None:
    listed = await client.post(
        MCP, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, headers={**alice.headers, **MCP_HEADERS}
    )
    tools = mcp_result(listed)["tools"]
    assert len(tools) == 7
    calls = [
        tool_call(tool["name"], {name: "sa\u0000les" for name in tool["inputSchema"]["properties"]}) for tool in tools
    ]
    calls.append({"jsonrpc": "2.0", "id": 9, "method": "resources/read", "params": {"uri": "datawell://sa\u0000les"}})
    for call in calls:
        response = await client.post(MCP, json=call, headers={**alice.headers, **MCP_HEADERS})
        assert response.status_code == 422, (call, response.text)
        body = response.json()
        assert body["error_code"] == "VALIDATION_ERROR"
        assert [s["code"] for s in body["sub_errors"]] == ["nul_character"]
        assert body["sub_errors"][0]["message"].startswith("params.")
        assert body["error"]["data"]["errorCode"] == "VALIDATION_ERROR"
        assert body["id"] == call["id"]


async def test_nul_in_any_a2a_call_is_a_params_error(client: httpx.AsyncClient, alice: Account, sales: str) -> None:
    calls = [
        rpc_body("SendMessage", {"message": wire_message("How many\u0000 orders?", {"namespace": sales})}),
        rpc_body("SendStreamingMessage", {"message": wire_message("How many orders?", {"namespace": "sa\u0000les"})}),
        rpc_body(
            "SendMessage", {"message": wire_message("How many orders?", {"namespace": sales}, contextId="c\u0000")}
        ),
        rpc_body("GetTask", {"id": "task\u0000"}),
        rpc_body("CancelTask", {"id": "task\u0000"}),
    ]
    for agent in ("nl2ql", "assistant"):
        for call in calls:
            response = await client.post(f"/api/v1/a2a/{agent}", json=call, headers={**alice.headers, **A2A_HEADERS})
            error = response.json()["error"]
            assert error["code"] == -32602, response.text
            info = error["data"][0]["metadata"]  # A2A 1.0 carries it as a google.rpc.ErrorInfo
            assert info["errorCode"] == "VALIDATION_ERROR"
            assert [s["code"] for s in info["subErrors"]] == ["nul_character"]
            assert info["subErrors"][0]["message"].startswith("params.")
            assert "SELECT" not in response.text and "asyncpg" not in response.text
