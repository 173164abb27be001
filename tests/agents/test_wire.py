"""The A2A surface as raw HTTP: status codes, headers and the exact JSON on the wire, not only
what the SDK makes of it."""

from __future__ import annotations

import json
from pathlib import Path

from tests.agents.a2a_client import Agent, rpc_body, sse_data, wire_message
from tests.conftest import Account
from tests.fake_runs import (
    CHANGES,
    NL2QL_CHANGES,
    NL2QL_QUERY,
    NL2QL_ROWS,
    NL2QL_WRITTEN,
    PLAN,
    QUERIES,
    STEP_ROWS,
    WRITTEN,
    FakeRuns,
)

A2A = {"A2A-Version": "1.0"}
WRAPPERS = {"task", "statusUpdate", "artifactUpdate", "message"}


def headers(account: Account) -> dict[str, str]:
    return {**account.headers, **A2A}


async def stream(client, agent: Agent, account: Account, params: dict) -> list[dict]:
    response = await client.post(agent.url, json=rpc_body("SendStreamingMessage", params), headers=headers(account))
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/event-stream")
    events = sse_data(response.text)
    for event in events:
        assert event["jsonrpc"] == "2.0" and event["id"] == "req-1"
        assert len(event["result"]) == 1 and set(event["result"]) <= WRAPPERS
    return [event["result"] for event in events]


async def test_nl2ql_stream_on_the_wire(client, alice: Account, sales: str, agents, fake: FakeRuns) -> None:
    events = await stream(
        client, agents["nl2ql"], alice, {"message": wire_message("Big orders?", {"namespace": sales})}
    )
    working, query, rows, completed = events
    task_id, context_id = working["statusUpdate"]["taskId"], working["statusUpdate"]["contextId"]
    assert working["statusUpdate"]["status"]["state"] == "TASK_STATE_WORKING"
    assert "message" not in working["statusUpdate"]["status"]
    assert query == {
        "artifactUpdate": {
            "taskId": task_id,
            "contextId": context_id,
            "artifact": {
                "artifactId": "generated-query",
                "name": "generated-query",
                "parts": [{"text": NL2QL_QUERY}],
                # issue 47, beside SPEC's fields: the query as written and the rules that changed it
                "metadata": {"modelQuery": NL2QL_WRITTEN, "changes": NL2QL_CHANGES},
            },
        }
    }
    assert [c["rule"] for c in query["artifactUpdate"]["artifact"]["metadata"]["changes"]] == ["drop_unasked_limit"]
    assert rows["artifactUpdate"]["artifact"]["parts"] == [{"data": {"rows": json.loads(json.dumps(NL2QL_ROWS))}}]
    assert completed["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"
    assert completed["statusUpdate"]["taskId"] == task_id


async def test_assistant_stream_on_the_wire(client, alice: Account, sales: str, agents, fake: FakeRuns) -> None:
    events = await stream(client, agents["assistant"], alice, {"message": wire_message("Who?", {"namespace": sales})})
    task = events[0]["task"]
    assert task["status"]["state"] == "TASK_STATE_SUBMITTED"
    # SPEC.md: the stream starts with a task with empty artifacts and history (proto3 JSON omits
    # empty lists, and a client reads a missing one as empty).
    assert "artifacts" not in task and "history" not in task
    assert events[1]["statusUpdate"]["status"] == {
        "state": "TASK_STATE_WORKING",
        "timestamp": events[1]["statusUpdate"]["status"]["timestamp"],
    }
    plan = events[2]["statusUpdate"]["status"]["message"]
    assert plan["messageId"].endswith("-plan") and plan["role"] == "ROLE_AGENT"
    assert plan["parts"] == [{"text": "Two steps: count, then rank."}, {"data": {"steps": PLAN}}]
    for n in (1, 2):
        status = events[1 + 2 * n]["statusUpdate"]["status"]
        assert status["state"] == "TASK_STATE_WORKING"
        assert status["message"]["messageId"] == f"{task['id']}-step-{n}"
        assert status["message"]["parts"] == [{"text": PLAN[n - 1]}]
        artifact = events[2 + 2 * n]["artifactUpdate"]["artifact"]
        assert artifact["artifactId"] == artifact["name"] == f"step-{n}"
        assert artifact["parts"] == [
            {"text": QUERIES[n - 1]},
            {"data": {"rows": json.loads(json.dumps(STEP_ROWS[n - 1]))}},
        ]
        assert artifact["metadata"] == {
            "index": n,
            "instruction": PLAN[n - 1],
            "reasoning": f"reasoning {n}",
            "modelQuery": WRITTEN if n == 1 else QUERIES[n - 1],
            "changes": CHANGES if n == 1 else [],
        }
    assert events[7]["artifactUpdate"]["artifact"]["name"] == "answer"
    assert events[8]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"
    assert len(events) == 9
    assert {next(iter(e.values())).get("contextId") for e in events} == {task["contextId"]}
    # No `kind` discriminators anywhere: parts are proto3 JSON.
    assert '"kind"' not in json.dumps(events)


async def test_send_message_on_the_wire(client, alice: Account, sales: str, agents, fake: FakeRuns) -> None:
    for agent in agents.values():
        params = {"message": wire_message("Who?", {"namespace": sales})}
        response = await client.post(agent.url, json=rpc_body("SendMessage", params), headers=headers(alice))
        body = response.json()
        assert response.status_code == 200 and body["jsonrpc"] == "2.0" and body["id"] == "req-1"
        task = body["result"]["task"]
        assert task["status"]["state"] == "TASK_STATE_COMPLETED"
        assert task["artifacts"]


async def test_failure_on_the_wire(client, alice: Account, sales: str, agents, fake: FakeRuns) -> None:
    fake.fail = "raise"
    for agent in agents.values():
        events = await stream(client, agent, alice, {"message": wire_message("Who?", {"namespace": sales})})
        status = events[-1]["statusUpdate"]["status"]
        assert status["state"] == "TASK_STATE_FAILED"
        assert status["message"]["role"] == "ROLE_AGENT"
        assert status["message"]["parts"][0]["text"] in (
            "the answer model timed out",
            "the run failed; it has been logged",
        )


async def test_no_token_is_401_with_error_response(client, agents, fake: FakeRuns) -> None:
    for agent in agents.values():
        for auth in ({}, {"Authorization": "Bearer not-a-jwt"}, {"Authorization": "Basic YTpi"}):
            response = await client.post(
                agent.url,
                json=rpc_body("SendMessage", {"message": wire_message("q", {"namespace": "x"})}),
                headers={**A2A, **auth},
            )
            assert response.status_code == 401
            assert response.headers["www-authenticate"] == "Bearer"
            assert response.json()["error_code"] == "UNAUTHORIZED"
    assert fake.requests == []


async def test_revoked_token_is_401(client, services, alice: Account, agents) -> None:
    async with services.db.session() as session:
        from datawell.storage.users import revoke_token

        await revoke_token(session, alice.token_id)
    response = await client.post(agents["nl2ql"].url, json=rpc_body("GetTask", {"id": "x"}), headers=headers(alice))
    assert response.status_code == 401


async def test_wrong_content_type_is_32005(client, alice: Account, agents, fake: FakeRuns) -> None:
    payload = json.dumps(rpc_body("SendMessage", {"message": wire_message("q", {"namespace": "sales"})}, "ct-1"))
    for agent in agents.values():
        for content_type in ("text/plain", "application/x-www-form-urlencoded", None):
            extra = {"Content-Type": content_type} if content_type else {}
            response = await client.post(agent.url, content=payload.encode(), headers={**headers(alice), **extra})
            assert response.status_code == 200
            body = response.json()
            assert body["error"]["code"] == -32005
            assert body["id"] == "ct-1"
    assert fake.requests == []


async def test_bad_or_deeply_nested_json_is_32700(client, alice: Account, agents, fake: FakeRuns) -> None:
    deep = "[" * 1100 + "]" * 1100
    for agent in agents.values():
        for body, content_type in ((deep, "application/json"), ('{"jsonrpc": "2.0", "id": ', "application/json")):
            response = await client.post(
                agent.url, content=body.encode(), headers={**headers(alice), "Content-Type": content_type}
            )
            assert response.status_code == 200
            error = response.json()["error"]
            assert error["code"] == -32700, (agent.name, error)
            assert "not valid JSON" in error["message"]
        # With another content type the deep body is still no server error: -32005, id unknown.
        response = await client.post(
            agent.url, content=deep.encode(), headers={**headers(alice), "Content-Type": "text/plain"}
        )
        assert response.json()["error"]["code"] == -32005
    assert fake.requests == []


async def test_missing_a2a_version_is_32009(client, alice: Account, sales: str, agents, fake: FakeRuns) -> None:
    for agent in agents.values():
        for method in ("SendMessage", "SendStreamingMessage"):
            params = {"message": wire_message("q", {"namespace": sales})}
            response = await client.post(agent.url, json=rpc_body(method, params), headers=alice.headers)
            assert response.json()["error"]["code"] == -32009
    assert fake.requests == []


async def test_missing_namespace_on_the_wire(client, alice: Account, agents, fake: FakeRuns) -> None:
    for agent in agents.values():
        for method in ("SendMessage", "SendStreamingMessage"):
            for metadata in (None, {}, {"namespace": ""}, {"namespace": 7}):
                params = {"message": wire_message("q", metadata)}
                response = await client.post(agent.url, json=rpc_body(method, params), headers=headers(alice))
                assert response.headers["content-type"] == "application/json"
                error = response.json()["error"]
                assert error["code"] == -32602
                assert "params.message.metadata.namespace is required" in error["message"]


async def test_bad_namespace_forms(client, alice: Account, sales: str, agents, fake: FakeRuns) -> None:
    for namespace, code in (("a/b/c", None), ("/sales", None), ("alice/", None), ("alice/nowhere", "NOT_FOUND")):
        params = {"message": wire_message("q", {"namespace": namespace})}
        error = (
            await client.post(agents["nl2ql"].url, json=rpc_body("SendMessage", params), headers=headers(alice))
        ).json()["error"]
        assert error["code"] == -32602
        if code:
            assert error["data"][0]["metadata"] == {"errorCode": code}
    params = {"message": wire_message("q", {"namespace": "alice/sales"})}
    body = (await client.post(agents["nl2ql"].url, json=rpc_body("SendMessage", params), headers=headers(alice))).json()
    assert body["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED"


async def test_unknown_context_is_refused_before_any_task(client, alice: Account, sales: str, agents, fake) -> None:
    params = {"message": wire_message("q", {"namespace": sales}, contextId="no-such-conversation")}
    for method in ("SendMessage", "SendStreamingMessage"):
        response = await client.post(agents["assistant"].url, json=rpc_body(method, params), headers=headers(alice))
        error = response.json()["error"]
        assert error["code"] == -32602
        assert error["data"][0]["metadata"] == {"errorCode": "NOT_FOUND"}


async def test_nl2ql_ignores_context_ids(client, alice: Account, sales: str, agents, fake: FakeRuns) -> None:
    params = {"message": wire_message("q", {"namespace": sales}, contextId="my-own-context")}
    body = (await client.post(agents["nl2ql"].url, json=rpc_body("SendMessage", params), headers=headers(alice))).json()
    assert body["result"]["task"]["contextId"] == "my-own-context"
    assert fake.requests[0].conversation_id is None


async def test_card_route_caching_and_unknown_agents(client, agents) -> None:
    agent = agents["nl2ql"]
    response = await client.get(agent.card_url)
    assert response.headers["cache-control"].startswith("public, max-age=")
    assert response.headers["last-modified"].endswith(" GMT")
    etag = response.headers["etag"]
    assert (await client.get(agent.card_url, headers={"If-None-Match": etag})).status_code == 304
    missing = await client.get("/api/v1/a2a/nobody/.well-known/agent-card.json")
    assert missing.status_code == 404 and missing.json()["error_code"] == "NOT_FOUND"


async def test_unknown_agent_post_is_404(client, alice: Account) -> None:
    response = await client.post("/api/v1/a2a/nobody", json=rpc_body("GetTask", {"id": "x"}), headers=headers(alice))
    assert response.status_code == 404
    assert response.json()["error_code"] == "NOT_FOUND"


async def test_public_base_url_makes_absolute_urls(settings, chat_models) -> None:
    import httpx

    from datawell.app import create_app
    from datawell.llm.embeddings import HashingEmbedder
    from datawell.services import Overrides
    from tests.conftest import served

    custom = settings.model_copy(update={"public_base_url": "https://data.example.org/"})
    async with served(create_app(custom, Overrides(models=chat_models, embedder=HashingEmbedder()))) as running:
        transport = httpx.ASGITransport(app=running.asgi)
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as http:
            [first, *_] = (await http.get("/api/v1/a2a")).json()
            card = (await http.get(f"/api/v1/a2a/{first['name']}/.well-known/agent-card.json")).json()
    assert first["url"] == f"https://data.example.org/api/v1/a2a/{first['name']}"
    assert first["agentCard"] == first["url"] + "/.well-known/agent-card.json"
    assert card["supportedInterfaces"][0]["url"] == first["url"]


async def test_a_message_without_text_is_32005(client, alice: Account, sales: str, agents, fake: FakeRuns) -> None:
    parts = (
        {"raw": "iVBORw0KGgo=", "mediaType": "image/png", "filename": "chart.png"},
        {"url": "https://example.com/report.pdf", "mediaType": "application/pdf"},
        {"data": {"question": "Who?"}, "mediaType": "application/json"},
    )
    for agent in agents.values():
        for method in ("SendMessage", "SendStreamingMessage"):
            for part in parts:
                message = {**wire_message("", {"namespace": sales}), "parts": [part]}
                response = await client.post(
                    agent.url, json=rpc_body(method, {"message": message}), headers=headers(alice)
                )
                error = response.json()["error"]
                assert error["code"] == -32005, (agent.name, part)
                assert "text" in error["message"]
    assert fake.requests == []


async def test_the_final_task_history(client, alice: Account, sales: str, agents, fake) -> None:
    """nl2ql's task starts from the user's message; the assistant's task starts empty (SPEC.md's
    first `task` event) and its history is what the agent said: the plan and the steps."""
    message = wire_message("Who orders most?", {"namespace": sales})
    histories = {}
    for name, agent in agents.items():
        body = (
            await client.post(agent.url, json=rpc_body("SendMessage", {"message": message}), headers=headers(alice))
        ).json()
        histories[name] = body["result"]["task"].get("history", [])
    [asked] = histories["nl2ql"]
    assert asked["messageId"] == message["messageId"] and asked["role"] == "ROLE_USER"
    assert asked["parts"] == [{"text": "Who orders most?"}]
    assert [m["role"] for m in histories["assistant"]] == ["ROLE_AGENT"] * 3
    assert [m["messageId"].rsplit("-", 1)[-1] for m in histories["assistant"]] == ["plan", "1", "2"]


async def test_trailing_slashes_are_served_like_the_paths_without(client, alice: Account, sales: str, agents,
                                                                   fake: FakeRuns) -> None:  # fmt: skip
    listing = await client.get("/api/v1/a2a/")
    assert listing.status_code == 200 and listing.json() == (await client.get("/api/v1/a2a")).json()
    for agent in agents.values():
        card = await client.get(agent.card_url + "/")
        assert card.status_code == 200 and card.json() == agent.card_json
        params = {"message": wire_message("Who?", {"namespace": sales})}
        response = await client.post(agent.url + "/", json=rpc_body("SendMessage", params), headers=headers(alice))
        assert response.status_code == 200
        assert response.json()["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED"


async def test_the_nl2ql_stream_keeps_specs_order_and_the_docs_say_so(client, alice: Account, sales: str, agents,
                                                                      fake: FakeRuns) -> None:  # fmt: skip
    """SPEC.md starts the nl2ql stream with a statusUpdate where A2A 1.0 starts every stream
    with a task; the order stays, and docs/a2a.md lists it among the departures."""
    events = await stream(client, agents["nl2ql"], alice, {"message": wire_message("Who?", {"namespace": sales})})
    assert list(events[0]) == ["statusUpdate"]
    docs = (Path(__file__).parents[2] / "docs" / "a2a.md").read_text()
    departures = docs.split("## Where Datawell departs from A2A 1.0", 1)[1].split("\n## ", 1)[0]
    assert (
        "| How the `nl2ql` stream starts | A stream starts with a `task` | `statusUpdate` WORKING first" in departures
    )
