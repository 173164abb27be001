"""Checks mirroring the public A2A conformance kit's (a2aproject/a2a-tck) JSON-RPC checks:
card structure, method errors and codes, streaming format. Every check runs for every agent
the `/a2a` list names."""

from __future__ import annotations

import asyncio
import json

import pytest
from a2a.types import AgentCapabilities, AgentCard, AgentInterface, AgentSkill

from tests.agents.a2a_client import discover, rpc_body, sse_data, wire_message
from tests.conftest import Account
from tests.fake_runs import FakeRuns

A2A = {"A2A-Version": "1.0"}


def fields(message_type: type) -> set[str]:
    return {field.json_name for field in message_type.DESCRIPTOR.fields}


async def each_agent(client) -> list:
    return list((await discover(client)).values())


async def call(client, url: str, account: Account | None, method: str, params: dict, request_id: object = 1) -> dict:
    headers = {**A2A, **(account.headers if account else {})}
    body = rpc_body(method, params)
    body["id"] = request_id
    response = await client.post(url, json=body, headers=headers)
    assert response.status_code == 200
    return response.json()


async def test_card_structure(client) -> None:
    """CARD-STRUCT-001, CARD-PROTO-001/002: required fields, declared interfaces, and no
    properties the 1.0 AgentCard does not define (except SPEC's `preferredTransport`)."""
    for agent in await each_agent(client):
        card = agent.card_json
        assert set(card) <= fields(AgentCard) | {"preferredTransport"}
        for required in (
            "name",
            "description",
            "version",
            "supportedInterfaces",
            "capabilities",
            "skills",
            "defaultInputModes",
            "defaultOutputModes",
        ):
            assert card[required] not in ("", [], None), required
        for interface in card["supportedInterfaces"]:
            assert set(interface) <= fields(AgentInterface)
            assert interface["url"].startswith("http") and interface["protocolBinding"] and interface["protocolVersion"]
        assert set(card["capabilities"]) <= fields(AgentCapabilities)
        assert all(
            isinstance(card["capabilities"][k], bool) for k in ("streaming", "pushNotifications", "extendedAgentCard")
        )
        for skill in card["skills"]:
            assert set(skill) <= fields(AgentSkill)
            assert skill["id"] and skill["name"] and skill["description"] and skill["tags"]
        for requirement in card["securityRequirements"]:
            assert set(requirement["schemes"]) <= set(card["securitySchemes"])


async def test_parse_error(client, alice: Account) -> None:
    for agent in await each_agent(client):
        response = await client.post(
            agent.url, content=b"{not json", headers={**alice.headers, **A2A, "Content-Type": "application/json"}
        )
        body = response.json()
        assert body["error"]["code"] == -32700
        assert body["id"] is None


async def test_invalid_requests(client, alice: Account) -> None:
    for agent in await each_agent(client):
        for bad in (
            {"jsonrpc": "1.0", "id": 1, "method": "GetTask", "params": {"id": "x"}},
            {"jsonrpc": "2.0", "id": 1, "params": {"id": "x"}},
            [{"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "x"}}],
        ):
            response = await client.post(agent.url, json=bad, headers={**alice.headers, **A2A})
            assert response.json()["error"]["code"] == -32600


async def test_method_not_found(client, alice: Account) -> None:
    for agent in await each_agent(client):
        for method in ("message/send", "tasks/get", "NoSuchMethod"):
            assert (await call(client, agent.url, alice, method, {}))["error"]["code"] == -32601


async def test_invalid_params(client, alice: Account) -> None:
    for agent in await each_agent(client):
        body = await call(client, agent.url, alice, "SendMessage", {"message": "not an object"})
        assert body["error"]["code"] == -32602


async def test_task_errors(client, alice: Account) -> None:
    """GetTask, CancelTask and SubscribeToTask of a task that does not exist: -32001 (the
    kit accepts -32001 or -32002 for CancelTask)."""
    for agent in await each_agent(client):
        for method in ("GetTask", "CancelTask"):
            body = await call(client, agent.url, alice, method, {"id": "tck-nonexistent"}, request_id="t-1")
            assert body["error"]["code"] == -32001
            assert body["id"] == "t-1"
        subscribe = await client.post(
            agent.url, json=rpc_body("SubscribeToTask", {"id": "tck-nonexistent"}), headers={**alice.headers, **A2A}
        )
        assert subscribe.json()["error"]["code"] == -32001


async def test_push_notifications_not_supported(client, alice: Account) -> None:
    for agent in await each_agent(client):
        params = {"taskId": "tck-error-code-003", "url": "https://example.com/hook"}
        body = await call(client, agent.url, alice, "CreateTaskPushNotificationConfig", params)
        assert body["error"]["code"] == -32003


async def test_unsupported_version(client, alice: Account) -> None:
    for agent in await each_agent(client):
        response = await client.post(
            agent.url,
            json=rpc_body("SendMessage", {"message": wire_message("q", {"namespace": "sales"})}),
            headers={**alice.headers, "A2A-Version": "99.0"},
        )
        assert response.json()["error"]["code"] == -32009


async def test_error_codes_are_in_range(client, alice: Account) -> None:
    for agent in await each_agent(client):
        for method, params in (("GetTask", {"id": "x"}), ("CancelTask", {"id": "x"}), ("SendMessage", {"message": {}})):
            code = (await call(client, agent.url, alice, method, params))["error"]["code"]
            assert -32099 <= code <= -32001 or -32700 <= code <= -32600


async def test_streaming_format(client, alice: Account, sales: str, fake: FakeRuns) -> None:
    """JSONRPC-SSE-001: every SSE event is a JSON-RPC response whose result holds exactly one
    StreamResponse member; the stream ends in a terminal state."""
    for agent in await each_agent(client):
        response = await client.post(
            agent.url,
            json=rpc_body(
                "SendStreamingMessage", {"message": wire_message("TCK streaming test", {"namespace": sales})}, 42
            ),
            headers={**alice.headers, **A2A},
        )
        assert response.headers["content-type"].startswith("text/event-stream")
        events = sse_data(response.text)
        assert events
        for event in events:
            assert event["jsonrpc"] == "2.0" and event["id"] == 42
            assert len(event["result"]) == 1
            assert set(event["result"]) <= {"task", "message", "statusUpdate", "artifactUpdate"}
        assert events[-1]["result"]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"


async def test_extended_card_requires_auth_and_is_served(client, alice: Account) -> None:
    for agent in await each_agent(client):
        unauthenticated = await client.post(agent.url, json=rpc_body("GetExtendedAgentCard", {}), headers=A2A)
        assert unauthenticated.status_code == 401
        card = (await call(client, agent.url, alice, "GetExtendedAgentCard", {}))["result"]
        assert card["name"] == agent.name
        assert card["skills"][0]["examples"]


async def test_running_task_can_be_read_and_canceled(client, alice: Account, sales: str, fake: FakeRuns) -> None:
    """A running task can be read; CancelTask ends it CANCELED and stops its run within a
    second (issue 29; SPEC had -32004); once finished it is not found."""
    fake.hold = asyncio.Event()
    assistant = next(a for a in await each_agent(client) if "rag" in a.card.skills[0].tags)
    streaming = asyncio.create_task(
        client.post(
            assistant.url,
            json=rpc_body("SendStreamingMessage", {"message": wire_message("q", {"namespace": sales})}),
            headers={**alice.headers, **A2A},
        )
    )
    for _ in range(200):
        listed = (await call(client, assistant.url, alice, "ListTasks", {}))["result"]
        if listed["tasks"]:
            break
        await asyncio.sleep(0.02)
    [task] = listed["tasks"]
    read = (await call(client, assistant.url, alice, "GetTask", {"id": task["id"]}))["result"]
    assert read["status"]["state"] == "TASK_STATE_WORKING"
    canceled = (await call(client, assistant.url, alice, "CancelTask", {"id": task["id"]}))["result"]
    assert canceled["status"]["state"] == "TASK_STATE_CANCELED"
    await asyncio.wait_for(fake.closed.wait(), timeout=1)  # the run stopped, holding nothing
    response = await asyncio.wait_for(streaming, timeout=10)
    assert sse_data(response.text)[-1]["result"]["statusUpdate"]["status"]["state"] == "TASK_STATE_CANCELED"
    assert (await call(client, assistant.url, alice, "GetTask", {"id": task["id"]}))["error"]["code"] == -32001
    assert (await call(client, assistant.url, alice, "CancelTask", {"id": task["id"]}))["error"]["code"] == -32001


async def test_tasks_are_per_user(client, alice: Account, bob: Account, sales: str, fake: FakeRuns) -> None:
    fake.hold = asyncio.Event()
    assistant = next(a for a in await each_agent(client) if "rag" in a.card.skills[0].tags)
    streaming = asyncio.create_task(
        client.post(
            assistant.url,
            json=rpc_body("SendStreamingMessage", {"message": wire_message("q", {"namespace": sales})}),
            headers={**alice.headers, **A2A},
        )
    )
    for _ in range(200):
        tasks = (await call(client, assistant.url, alice, "ListTasks", {}))["result"]["tasks"]
        if tasks:
            break
        await asyncio.sleep(0.02)
    assert (await call(client, assistant.url, bob, "ListTasks", {}))["result"]["tasks"] == []
    assert (await call(client, assistant.url, bob, "GetTask", {"id": tasks[0]["id"]}))["error"]["code"] == -32001
    fake.hold.set()
    await asyncio.wait_for(streaming, timeout=10)


@pytest.mark.parametrize("request_id", [7, "abc"])
async def test_ids_are_echoed(client, alice: Account, request_id: object) -> None:
    for agent in await each_agent(client):
        body = await call(client, agent.url, alice, "GetTask", {"id": "x"}, request_id=request_id)
        assert body["id"] == request_id
        assert json.dumps(body).count('"jsonrpc": "2.0"') == 1
