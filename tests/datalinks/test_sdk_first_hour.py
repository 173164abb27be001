"""What a DataLinks user meets in the first hour, with the SDK unchanged against a real server:
`DL_HOST` as the README's bare origin or with `/api/v1`, the SDK's own `AutoRagRequest` with a
`callerContext`, and `wait_for_ingestion` on the attempt a JSON ingestion made (after an
upload: test_sdk.py's multipart tests)."""

from __future__ import annotations

import contextlib
import io
import re
import textwrap
import uuid

import httpx
from datalinks import _operations as ops
from datalinks._client import call_operation
from datalinks._generated.models import AutoRagRequest, CallerContext, CallerContextFact, CallerContextTurn

from tests.client.conftest import REPO
from tests.datalinks.conftest import Server
from tests.datalinks.test_sdk import PRODUCTS, fresh
from tests.fake_runs import ANSWER


def test_the_bare_origin_and_the_api_v1_host_reach_the_same_data(server: Server) -> None:
    name = "d" + uuid.uuid4().hex[:8]
    bare, prefixed = server.api("hour", name), server.api("hour", name, host=server.prefixed)
    bare.create_space(data_description="Shaving products")
    prefixed.create_space()  # exists (409), which the SDK takes as success
    assert bare.ingest(data=PRODUCTS).failed == []
    assert prefixed.get_dataset_info().metadata.row_count == bare.get_dataset_info().metadata.row_count == 4
    assert sorted(row["price"] for row in bare.query_data()) == [90, 120, 180, 250]
    assert server.api("hour", name, token=server.bob).get_dataset_info() is None  # alice's, not bob's
    assert server.api(token="not-a-token").get_current_user() is None  # 401
    bob = {"Authorization": f"Bearer {server.bob}"}
    refused = [httpx.get(f"{host}/data/alice/hour/{name}", headers=bob) for host in (server.host, server.prefixed)]
    assert [r.status_code for r in refused] == [403, 403]  # alice's namespace, bob has no grant
    assert refused[0].json() == refused[1].json() and refused[0].json()["error_code"] == "FORBIDDEN"


def test_the_readmes_sdk_example_runs_as_written(server: Server) -> None:
    readme = (REPO / "README.md").read_text()
    found = re.search(r"\*\*DataLinks SDK\*\*.*?```python\n(.*?)```", readme, re.DOTALL)
    assert found, "README.md shows the SDK's configuration in a python block"
    code = textwrap.dedent(found.group(1)).replace("http://127.0.0.1:8000", server.host)
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(code, {"token": server.alice})
    assert printed.getvalue() == "[{'brand': 'Braun', 'price': 90}]\n"


def test_autorag_with_the_sdks_request_model_and_specs_shape(server: Server) -> None:
    """The facade's `autorag()` has no caller-context argument: a user builds the SDK's own
    `AutoRagRequest` and sends it through the SDK's client, as the facade would."""
    _, api = fresh(server, PRODUCTS)
    context = CallerContext(
        turns=[CallerContextTurn(role="user", text="hi"), CallerContextTurn(role="agent", text="Q3", agent_name="crm")],
        facts=[CallerContextFact(label="fiscal year", value="2024", source="crm")],
    )
    request = AutoRagRequest(username="self", namespace="shop", query="Who ordered most?", caller_context=context)
    response = call_operation(api._client, ops.AUTORAG, body=request)
    assert response is not None and response.status_code == 200, response and response.text
    assert response.json()["response"] == ANSWER
    spec = {
        "namespace": "shop",
        "query": "Who ordered most?",
        "callerContext": {"turns": [{"text": "Q3", "agentName": "crm"}], "facts": [{"label": "a", "value": "b"}]},
    }
    response = call_operation(api._client, ops.AUTORAG, body=spec)
    assert response is not None and response.status_code == 200 and response.json()["response"] == ANSWER


def test_wait_for_ingestion_ends_on_the_attempt_a_json_ingestion_made(server: Server) -> None:
    _, api = fresh(server, PRODUCTS)
    [attempt] = api.list_ingestions()
    assert attempt.attributes.name == "rows.jsonl"
    final = api.wait_for_ingestion(str(attempt.id), poll_interval=1, timeout=60)
    assert (final.status, final.processed_rows) == ("SUCCEEDED", 4)
    assert api.ingest(data=PRODUCTS[:1]).failed == []
    newest, oldest = api.list_ingestions()
    assert str(oldest.id) == str(attempt.id) and newest.processed_rows == 1
    assert api.wait_for_ingestion(str(newest.id), poll_interval=1, timeout=60).status == "SUCCEEDED"
