from __future__ import annotations

import asyncio
import json
from typing import Any

from datawell.llm.models import ModelChoice
from datawell.services import Services
from datawell.storage.access import Permission, set_grant
from tests.conftest import Account
from tests.fake_runs import ANSWER, CHANGES, PLAN, QUERIES, STEP_ROWS, WRITTEN, FakeRuns

URL = "/api/v1/query/autorag"
SSE = {"Accept": "text/event-stream"}


def events_of(body: str) -> list[tuple[str, dict[str, Any]]]:
    """(event name, data) per SSE event, in order; comments (pings) skipped."""
    found = []
    for block in body.replace("\r\n", "\n").split("\n\n"):
        lines = [line for line in block.split("\n") if line and not line.startswith(":")]
        if not lines:
            continue
        name = next(line[len("event: ") :] for line in lines if line.startswith("event: "))
        data = "\n".join(line[len("data: ") :] for line in lines if line.startswith("data: "))
        found.append((name, json.loads(data)))
    return found


async def test_json_answer_with_steps_and_conversation_id(client, alice: Account, sales: str, fake: FakeRuns) -> None:
    response = await client.post(URL, json={"namespace": sales, "query": "Who orders most?"}, headers=alice.headers)
    assert response.status_code == 200
    body = response.json()
    assert set(body) == {"response", "steps", "conversationId"}
    assert body["response"] == ANSWER
    assert fake.conversations[body["conversationId"]][0] == "alice"
    # SPEC's fields, and beside them the query as written and the service's changes of it (issue 47)
    assert [set(step) for step in body["steps"]] == [
        {"instruction", "query", "reasoning", "data", "modelQuery", "changes"}
    ] * 2
    assert [(s["modelQuery"], s["changes"]) for s in body["steps"]] == [(WRITTEN, CHANGES), (QUERIES[1], [])]
    assert [step["instruction"] for step in body["steps"]] == PLAN
    assert [step["query"] for step in body["steps"]] == QUERIES
    assert body["steps"][0]["data"] == STEP_ROWS[0]
    assert body["steps"][0]["data"][0]["__metadata"]["score"] == 0.91
    [asked] = fake.requests
    assert (asked.namespace.owner, asked.namespace.name, asked.question) == ("alice", "sales", "Who orders most?")
    assert asked.conversation_id is None


async def test_request_fields_reach_the_run(client, alice: Account, sales: str, fake: FakeRuns) -> None:
    body = {
        "username": "alice",
        "namespace": sales,
        "query": "Who orders most?",
        "helperPrompt": "Answer in one sentence.",
        "model": "gpt-4o-mini",
        "provider": "openai",
        "models": {"answer": {"model": "claude-haiku", "provider": "anthropic"}},
        "webSearch": False,
        "callerContext": {
            "turns": [{"text": "We look at 2024 only.", "agentName": "planner"}],
            "facts": [{"label": "fiscal year", "value": "2024", "source": "crm"}],
        },
    }
    assert (await client.post(URL, json=body, headers=alice.headers)).status_code == 200
    [asked] = fake.requests
    assert asked.helper_prompt == "Answer in one sentence."
    assert asked.web_search is False
    assert asked.choices.for_stage("plan") == ModelChoice("gpt-4o-mini", "openai")
    assert asked.choices.for_stage("query") == ModelChoice("gpt-4o-mini", "openai")
    assert asked.choices.for_stage("answer") == ModelChoice("claude-haiku", "anthropic")
    assert asked.caller_context is not None
    assert asked.caller_context.turns[0].agent_name == "planner"
    assert asked.caller_context.facts[0].value == "2024"


async def test_the_datalinks_sdks_caller_context_is_taken_beside_specs(
    client, alice: Account, sales: str, fake: FakeRuns
) -> None:
    """The SDK's own `AutoRagRequest` (turns with `role`, `agentName` optional), as it sends it."""
    from datalinks._client import serialise_body
    from datalinks._generated.models import AutoRagRequest as SdkRequest
    from datalinks._generated.models import CallerContext, CallerContextFact, CallerContextTurn

    context = CallerContext(
        turns=[
            CallerContextTurn(role="user", text="hi"),
            CallerContextTurn(role="agent", text="2024", agent_name="crm"),
        ],
        facts=[CallerContextFact(label="fiscal year", value="2024")],
    )
    sent = serialise_body(
        SdkRequest(username="self", namespace=sales, query="Who orders most?", caller_context=context)
    )
    assert sent["callerContext"]["turns"][0] == {"role": "user", "text": "hi"}
    assert (await client.post(URL, json=sent, headers=alice.headers)).status_code == 200
    [asked] = fake.requests
    assert asked.caller_context is not None
    assert [(t.role, t.text, t.agent_name) for t in asked.caller_context.turns] == [
        ("user", "hi", ""),
        ("agent", "2024", "crm"),
    ]
    assert [(f.label, f.value, f.source) for f in asked.caller_context.facts] == [("fiscal year", "2024", "")]


async def test_a_caller_context_turn_still_refuses_what_neither_shape_has(
    client, alice: Account, sales: str, fake: FakeRuns
) -> None:
    for turn, field in [
        ({"text": "hi", "speaker": "user"}, "callerContext.turns.0.speaker"),
        ({"text": "hi", "role": "system"}, "callerContext.turns.0.role"),
        ({"role": "user"}, "callerContext.turns.0.text"),
    ]:
        body = {"namespace": sales, "query": "q", "callerContext": {"turns": [turn]}}
        response = await client.post(URL, json=body, headers=alice.headers)
        assert response.status_code == 422, turn
        assert [sub["message"].split(":")[0] for sub in response.json()["sub_errors"]] == [field]
    assert fake.requests == []


async def test_sse_stream_event_order(client, alice: Account, sales: str, fake: FakeRuns) -> None:
    response = await client.post(
        URL, json={"namespace": sales, "query": "Who orders most?"}, headers={**alice.headers, **SSE}
    )
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/event-stream")
    events = events_of(response.text)
    names = [name for name, _ in events]
    deltas = [i for i, name in enumerate(names) if name == "answer-delta"]
    assert names[:4] == ["run-started", "plan", "step", "step"]
    assert deltas == list(range(4, 4 + len(deltas))) and deltas
    assert names[4 + len(deltas) :] == ["answer", "run-finished"]
    started, plan = events[0][1], events[1][1]
    assert fake.conversations[started["conversationId"]] == ("alice", ["Who orders most?"])
    assert plan == {"text": "Two steps: count, then rank.", "steps": PLAN}
    first_step = events[2][1]
    assert first_step["index"] == 1
    assert first_step["query"] == QUERIES[0]
    assert first_step["data"] == STEP_ROWS[0]
    assert (first_step["modelQuery"], first_step["changes"]) == (WRITTEN, CHANGES)
    assert [c["rule"] for c in first_step["changes"]] == ["drop_unasked_limit"]
    assert "".join(data["text"] for name, data in events if name == "answer-delta").strip() == ANSWER
    assert events[-2][1] == {"text": ANSWER}
    assert events[-1][1] == {"conversationId": started["conversationId"]}


async def test_conversation_continues_with_its_id(client, alice: Account, sales: str, fake: FakeRuns) -> None:
    first = (
        await client.post(URL, json={"namespace": sales, "query": "Who orders most?"}, headers=alice.headers)
    ).json()
    again = {"namespace": sales, "query": "And second?", "conversationId": first["conversationId"]}
    response = await client.post(URL, json=again, headers={**alice.headers, **SSE})
    events = events_of(response.text)
    assert events[0] == ("run-started", {"conversationId": first["conversationId"]})
    assert fake.requests[1].conversation_id == first["conversationId"]
    assert dict(events)["answer"]["text"].endswith("(after: Who orders most?)")


async def test_missing_token_is_401(client, sales: str, fake: FakeRuns) -> None:
    response = await client.post(URL, json={"namespace": sales, "query": "q"})
    assert response.status_code == 401
    assert response.json()["error_code"] == "UNAUTHORIZED"
    assert response.headers["www-authenticate"] == "Bearer"
    assert fake.requests == []


async def test_namespace_without_read_access_is_403(client, bob: Account, sales: str, fake: FakeRuns) -> None:
    for headers in (bob.headers, {**bob.headers, **SSE}):
        response = await client.post(URL, json={"username": "alice", "namespace": sales, "query": "q"}, headers=headers)
        assert response.status_code == 403
        assert response.headers["content-type"] == "application/json"
        assert response.json()["error_code"] == "FORBIDDEN"
    assert fake.requests == []


async def test_a_read_grant_opens_the_namespace(
    client, services: Services, bob: Account, sales: str, fake: FakeRuns
) -> None:
    async with services.db.session() as session:
        await set_grant(session, "alice", sales, "bob", Permission.READ)
    response = await client.post(URL, json={"username": "alice", "namespace": sales, "query": "q"}, headers=bob.headers)
    assert response.status_code == 200
    assert str(fake.requests[0].namespace) == "alice/sales"


async def test_unknown_namespace_is_404(client, alice: Account, fake: FakeRuns) -> None:
    response = await client.post(URL, json={"namespace": "nowhere", "query": "q"}, headers=alice.headers)
    assert response.status_code == 404
    assert "alice/nowhere" in response.json()["message"]


async def test_another_users_conversation_is_404(
    client, services: Services, alice: Account, bob: Account, sales: str, fake: FakeRuns
) -> None:
    started = (await client.post(URL, json={"namespace": sales, "query": "q"}, headers=alice.headers)).json()
    async with services.db.session() as session:
        await set_grant(session, "alice", sales, "bob", Permission.READ)
    body = {"username": "alice", "namespace": sales, "query": "q", "conversationId": started["conversationId"]}
    for headers in (bob.headers, {**bob.headers, **SSE}):
        response = await client.post(URL, json=body, headers=headers)
        assert response.status_code == 404
        assert response.headers["content-type"] == "application/json"
        assert response.json()["error_code"] == "NOT_FOUND"


async def test_unknown_models_keys_are_422_and_named(client, alice: Account, sales: str, fake: FakeRuns) -> None:
    body = {"namespace": sales, "query": "q", "models": {"plan": {"model": "m"}, "rerank": {"model": "m"}, "judge": {}}}
    response = await client.post(URL, json=body, headers=alice.headers)
    assert response.status_code == 422
    messages = [sub["message"] for sub in response.json()["sub_errors"]]
    assert len(messages) == 2
    assert any(m.startswith("models.rerank:") for m in messages)
    assert any(m.startswith("models.judge:") for m in messages)
    assert fake.requests == []


async def test_missing_query_and_bad_types_are_422(client, alice: Account, sales: str, fake: FakeRuns) -> None:
    response = await client.post(URL, json={"namespace": sales, "webSearch": "maybe"}, headers=alice.headers)
    assert response.status_code == 422
    messages = [sub["message"] for sub in response.json()["sub_errors"]]
    assert any(m.startswith("query:") for m in messages)
    assert any(m.startswith("webSearch:") for m in messages)


async def test_run_failure_json_is_an_error_response(client, alice: Account, sales: str, fake: FakeRuns) -> None:
    fake.fail = "event"
    response = await client.post(URL, json={"namespace": sales, "query": "q"}, headers=alice.headers)
    assert response.status_code == 502
    assert response.json()["error_code"] == "MODEL_ERROR"


async def test_run_failure_sse_ends_with_error_event(client, alice: Account, sales: str, fake: FakeRuns) -> None:
    for fail, code in (("event", "MODEL_ERROR"), ("raise", "MODEL_ERROR")):
        fake.fail = fail
        response = await client.post(URL, json={"namespace": sales, "query": "q"}, headers={**alice.headers, **SSE})
        assert response.status_code == 200
        events = events_of(response.text)
        assert events[0][0] == "run-started"
        assert events[-1][0] == "error"
        assert events[-1][1]["error_code"] == code
        assert "run-finished" not in [name for name, _ in events]


async def test_client_disconnect_cancels_the_run(service, alice: Account, sales: str, fake: FakeRuns) -> None:
    fake.hold = asyncio.Event()  # never set: the run waits after its plan until cancelled
    body = json.dumps({"namespace": sales, "query": "q"}).encode()
    disconnected = asyncio.Event()
    sent: list[bytes] = []
    unread = [{"type": "http.request", "body": body, "more_body": False}]

    async def receive() -> dict[str, Any]:
        if unread:
            return unread.pop()
        await disconnected.wait()
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.body":
            sent.append(message.get("body", b""))
            if b"event: plan" in b"".join(sent):
                disconnected.set()

    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": URL,
        "raw_path": URL.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": [
            (b"host", b"testserver"),
            (b"content-type", b"application/json"),
            (b"accept", b"text/event-stream"),
            (b"authorization", alice.headers["Authorization"].encode()),
        ],
        "client": ("127.0.0.1", 50000),
        "server": ("testserver", 80),
    }
    await asyncio.wait_for(service.asgi(scope, receive, send), timeout=10)
    await asyncio.wait_for(fake.closed.wait(), timeout=5)
    assert b"event: run-started" in b"".join(sent)
    assert b"event: step" not in b"".join(sent)


async def test_openapi_documents_the_stream(client) -> None:
    doc = (await client.get("/api/v1/openapi.json")).json()
    operation = doc["paths"][URL]["post"]
    success = operation["responses"]["200"]["content"]
    assert set(success) == {"application/json", "text/event-stream"}
    described = success["text/event-stream"]["schema"]["description"]
    for name in ("run-started", "plan", "step", "answer-delta", "answer", "run-finished", "error"):
        assert f"`{name}`" in described
    assert {"401", "403", "404", "422"} <= set(operation["responses"])
    schema = doc["components"]["schemas"]["AutoRagRequest"]
    assert {"namespace", "query", "models", "conversationId", "callerContext", "webSearch"} <= set(schema["properties"])
