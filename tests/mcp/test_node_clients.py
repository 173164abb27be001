"""Third-party MCP clients against a real server process (uvicorn with the graph runs faked, as
in test_server_process.py): the official TypeScript client (`@modelcontextprotocol/sdk`) and
the MCP Inspector's CLI, each calling every tool and every error case. Both check a result's
structured content against the tool's output schema, errors included, which the Python SDK
does not: an error result that failed that check reached the model as a -32602 instead of its
code and message (issue 26).

The Node packages are pinned in tests/mcp/node/package-lock.json; `npm ci` installs them
(scripts/setup.sh, or this module's fixture when they are missing)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.agents.test_server_process import server, server_env, token, user_with_token  # noqa: F401  (fixtures)
from tests.mcp.conftest import MCP_PATH, TOOL_NAMES

NODE_DIR = Path(__file__).parent / "node"
NODE = shutil.which("node")
NPM = shutil.which("npm")
INSPECTOR = NODE_DIR / "node_modules" / "@modelcontextprotocol" / "inspector-cli" / "build" / "index.js"

pytestmark = pytest.mark.skipif(NODE is None or NPM is None, reason="needs node and npm (.ci/run installs them)")

FORBIDDEN = "FORBIDDEN: user 'alice' has no read access to namespace bob/crm"
NOT_FOUND = "NOT_FOUND: namespace alice/nobody does not exist"
MISSING = "VALIDATION_ERROR: the tool arguments are invalid\n- namespace: Field required"

# Every tool: a call that works, then one per error a caller meets (the namespace of another
# user, one that does not exist, a missing argument), and the checker's refusal of a query.
ARGUMENTS: dict[str, dict[str, Any]] = {
    "list_datasets": {},
    "describe_dataset": {"dataset": "orders"},
    "run_query": {"query": "SELECT customer FROM orders"},
    "semantic_search": {"dataset": "orders", "text": "big"},
    "list_links": {},
    "ask_nl2ql": {"question": "Big orders?"},
    "ask_assistant": {"question": "Who orders most?"},
}
CALLS: list[tuple[dict[str, Any], str | None]] = [
    *(({"name": name, "arguments": {"namespace": "sales", **arguments}}, None) for name, arguments in ARGUMENTS.items()),
    *(({"name": name, "arguments": {"namespace": "bob/crm", **arguments}}, FORBIDDEN) for name, arguments in ARGUMENTS.items()),
    *(({"name": name, "arguments": {"namespace": "nobody", **arguments}}, NOT_FOUND) for name, arguments in ARGUMENTS.items()),
    *(({"name": name, "arguments": arguments}, MISSING) for name, arguments in ARGUMENTS.items() if name != "list_datasets"),
    ({"name": "list_datasets", "arguments": {"namespace": "a/b/c"}},
     "VALIDATION_ERROR: the namespace is malformed\n- namespace: 'a/b/c' must be `name` or `owner/name`"),
    ({"name": "run_query", "arguments": {"namespace": "sales", "query": "SELECT totl FROM orders"}}, "QUERY_ERROR: "),
    ({"name": "run_query", "arguments": {"namespace": "sales", "query": "DELETE FROM orders"}}, "QUERY_ERROR: "),
]  # fmt: skip


@pytest.fixture(scope="module")
def node_packages() -> Path:
    if not INSPECTOR.exists():
        subprocess.run([str(NPM), "ci", "--no-audit", "--no-fund"], cwd=NODE_DIR, check=True, timeout=600)
    return NODE_DIR


@pytest.fixture
async def bob(server_env: dict[str, str]) -> str:  # noqa: F811
    """bob's token; made before the server starts (the server then holds the vector store)."""
    return await user_with_token(server_env, "bob")


@pytest.fixture
async def shop(bob: str, server: httpx.AsyncClient, token: str) -> dict[str, str]:  # noqa: F811
    """alice's sales/orders and bob's crm/orders; returns the endpoint and alice's token."""
    for key, namespace in ((token, "sales"), (bob, "crm")):
        created = await server.post(
            f"/api/v1/ingest/new/{namespace}/orders",
            json={"schemaDefinition": {"customer": "Customer", "total": "EUR"}},
            headers={"Authorization": f"Bearer {key}"},
        )
        assert created.status_code == 201, created.text
    return {"url": str(server.base_url).rstrip("/") + MCP_PATH, "token": token}


def check(name: str, arguments: dict[str, Any], expected: str | None, texts: list[str], is_error: bool) -> None:
    if expected is None:
        assert not is_error, (name, arguments, texts)
    else:
        assert is_error and texts[0].startswith(expected), (name, arguments, texts)


async def test_typescript_sdk_client_sees_every_result_and_error(node_packages: Path, shop: dict[str, str]) -> None:
    calls = [call for call, _ in CALLS]
    run = subprocess.run(
        [str(NODE), "sdk_calls.mjs", shop["url"], shop["token"], json.dumps(calls)],
        cwd=node_packages,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr
    seen = json.loads(run.stdout)
    assert set(seen["tools"]) == TOOL_NAMES
    assert [c for c in seen["calls"] if "thrown" in c] == []
    assert len(seen["calls"]) == len(CALLS) == 30
    for (call, expected), result in zip(CALLS, seen["calls"], strict=True):
        check(call["name"], call["arguments"], expected, result["texts"], result["isError"])
        assert (result["structuredContent"] is None) == (expected is not None)
    answer = seen["calls"][6]
    assert answer["texts"][0] == "Alice placed the most orders (2)."


async def test_inspector_cli_sees_every_result_and_error(node_packages: Path, shop: dict[str, str]) -> None:
    """The MCP Inspector's CLI (v1, `@modelcontextprotocol/inspector-cli`): one process per call,
    as a user runs it; it exits 1 with the message when its client throws."""
    outcomes = []
    for call, expected in CALLS[:7] + CALLS[7:10] + CALLS[14:16] + CALLS[21:23] + CALLS[-3:]:
        command = [str(NODE), str(INSPECTOR), shop["url"], "--transport", "http", "--method", "tools/call",
                   "--header", f"Authorization: Bearer {shop['token']}", "--tool-name", call["name"]]  # fmt: skip
        for key, value in call["arguments"].items():
            command += ["--tool-arg", f"{key}={value}"]
        # It finds its own package.json relative to the working folder (`../package.json`).
        run = subprocess.run(command, cwd=INSPECTOR.parent, capture_output=True, text=True, timeout=120)
        assert run.returncode == 0, (call, run.stderr)
        result = json.loads(run.stdout)
        texts = [block["text"] for block in result["content"] if block["type"] == "text"]
        check(call["name"], call["arguments"], expected, texts, result.get("isError", False))
        outcomes.append(expected)
    assert len(outcomes) == 17 and outcomes.count(None) == 7
