"""Both agents through a2a-sdk's own client over httpx.ASGITransport: what an A2A client
written against the SDK sees."""

from __future__ import annotations

import pytest
from a2a.client.errors import A2AClientError
from a2a.types import GetExtendedAgentCardRequest, GetTaskRequest
from a2a.utils.errors import InvalidParamsError, TaskNotFoundError

from datawell.agents.registry import AGENTS
from datawell.llm.models import ModelChoice
from datawell.services import Services
from datawell.storage.access import Permission, set_grant
from tests.agents.a2a_client import Agent, context, message, sdk_client, send
from tests.conftest import Account
from tests.fake_runs import ANSWER, CHANGES, NL2QL_QUERY, PLAN, QUERIES, WRITTEN, FakeRuns


def kinds(events: list[dict]) -> list[str]:
    """One label per event: the wrapper key, plus the state or artifact name."""
    labels = []
    for event in events:
        [(key, body)] = event.items()
        if key in ("task", "statusUpdate"):
            labels.append(f"{key}:{body['status']['state']}")
        elif key == "artifactUpdate":
            labels.append(f"{key}:{body['artifact']['name']}")
        else:
            labels.append(key)
    return labels


def nl2ql_of(agents: dict[str, Agent]) -> Agent:
    """The agent whose skill is `nl2ql`, found from its card rather than by name."""
    return next(a for a in agents.values() if [s.id for s in a.card.skills] == ["nl2ql"])


def assistant_of(agents: dict[str, Agent]) -> Agent:
    return next(a for a in agents.values() if "rag" in a.card.skills[0].tags)


async def test_discovery_lists_every_registered_agent(agents: dict[str, Agent]) -> None:
    assert set(agents) == {spec.name for spec in AGENTS} == {"nl2ql", "assistant"}
    for agent in agents.values():
        assert agent.url == f"http://testserver/api/v1/a2a/{agent.name}"
        assert agent.card_url == agent.url + "/.well-known/agent-card.json"
        assert agent.card.supported_interfaces[0].url == agent.url


async def test_cards_say_what_spec_says(agents: dict[str, Agent]) -> None:
    for agent in agents.values():
        card = agent.card_json
        assert card["name"] == agent.name
        assert card["version"] == "1.0.0"
        assert card["capabilities"] == {
            "streaming": True,
            "pushNotifications": False,
            "extendedAgentCard": True,
            "extensions": [],
        }
        assert card["defaultInputModes"] == ["text"]
        assert card["defaultOutputModes"] == ["text", "data"]
        assert card["securitySchemes"] == {
            "bearer": {"httpAuthSecurityScheme": {"scheme": "bearer", "bearerFormat": "JWT", "description": ""}}
        }
        assert card["securityRequirements"] == [{"schemes": {"bearer": {"list": []}}}]
        assert card["supportedInterfaces"] == [
            {"protocolBinding": "JSONRPC", "url": agent.url, "protocolVersion": "1.0", "tenant": ""}
        ]
        assert card["preferredTransport"] == "JSONRPC"
        [skill] = card["skills"]
        assert skill["id"] == agent.name
        assert skill["name"] and skill["description"]
        assert skill["examples"] == []
    assert agents["assistant"].card_json["skills"][0]["tags"] == ["assistant", "rag", "query"]


async def test_nl2ql_streams_query_then_rows(client, alice: Account, sales: str, agents, fake: FakeRuns) -> None:
    async with await sdk_client(client, nl2ql_of(agents), alice.token) as a2a:
        events = await send(a2a, message("Orders over 100?", {"namespace": sales}))
    assert kinds(events) == [
        "statusUpdate:TASK_STATE_WORKING",
        "artifactUpdate:generated-query",
        "artifactUpdate:result-data",
        "statusUpdate:TASK_STATE_COMPLETED",
    ]
    assert events[1]["artifactUpdate"]["artifact"]["parts"] == [{"text": NL2QL_QUERY}]
    [rows_part] = events[2]["artifactUpdate"]["artifact"]["parts"]
    [row] = rows_part["data"]["rows"]
    assert row["customer"] == "alice"
    assert row["total"] == 120.0  # protobuf Values carry numbers as doubles
    assert row["__metadata"]["score"] == 0.8
    [asked] = fake.requests
    assert (str(asked.namespace), asked.question) == ("alice/sales", "Orders over 100?")


async def test_nl2ql_send_message_returns_the_final_task(client, alice: Account, sales: str, agents, fake) -> None:
    async with await sdk_client(client, nl2ql_of(agents), alice.token, streaming=False) as a2a:
        [event] = await send(a2a, message("Orders over 100?", {"namespace": sales}))
    task = event["task"]
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    assert [a["name"] for a in task["artifacts"]] == ["generated-query", "result-data"]
    assert task["artifacts"][1]["parts"][0]["data"]["rows"][0]["__metadata"]["score"] == 0.8
    assert task["history"][0]["parts"] == [{"text": "Orders over 100?"}]


async def test_assistant_streams_plan_steps_answer(client, alice: Account, sales: str, agents, fake) -> None:
    async with await sdk_client(client, assistant_of(agents), alice.token) as a2a:
        events = await send(a2a, message("Who orders most?", {"namespace": sales}))
    assert kinds(events) == [
        "task:TASK_STATE_SUBMITTED",
        "statusUpdate:TASK_STATE_WORKING",
        "statusUpdate:TASK_STATE_WORKING",
        "statusUpdate:TASK_STATE_WORKING",
        "artifactUpdate:step-1",
        "statusUpdate:TASK_STATE_WORKING",
        "artifactUpdate:step-2",
        "artifactUpdate:answer",
        "statusUpdate:TASK_STATE_COMPLETED",
    ]
    task_id = events[0]["task"]["id"]
    plan = events[2]["statusUpdate"]["status"]["message"]
    assert plan["messageId"] == f"{task_id}-plan"
    assert plan["parts"] == [{"text": "Two steps: count, then rank."}, {"data": {"steps": PLAN}}]
    step = events[3]["statusUpdate"]["status"]["message"]
    assert step["messageId"] == f"{task_id}-step-1"
    assert step["parts"] == [{"text": PLAN[0]}]
    artifact = events[4]["artifactUpdate"]["artifact"]
    assert artifact["metadata"] == {
        "index": 1.0,
        "instruction": PLAN[0],
        "reasoning": "reasoning 1",
        "modelQuery": WRITTEN,
        "changes": CHANGES,
    }
    assert artifact["parts"][0] == {"text": QUERIES[0]}
    assert artifact["parts"][1]["data"]["rows"][0]["__metadata"]["score"] == 0.91
    assert events[7]["artifactUpdate"]["artifact"]["parts"] == [{"text": ANSWER}]
    # The conversation of a new message is the task's context.
    assert fake.requests[0].new_conversation_id == events[0]["task"]["contextId"]


async def test_assistant_send_message_has_the_same_artifacts(client, alice: Account, sales: str, agents, fake) -> None:
    async with await sdk_client(client, assistant_of(agents), alice.token, streaming=False) as a2a:
        [event] = await send(a2a, message("Who orders most?", {"namespace": sales}))
    task = event["task"]
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    assert [a["name"] for a in task["artifacts"]] == ["step-1", "step-2", "answer"]
    assert task["artifacts"][2]["parts"] == [{"text": ANSWER}]


async def test_context_id_continues_the_conversation(client, alice: Account, sales: str, agents, fake) -> None:
    async with await sdk_client(client, assistant_of(agents), alice.token) as a2a:
        first = await send(a2a, message("Who orders most?", {"namespace": sales}))
        context_id = first[0]["task"]["contextId"]
        second = await send(a2a, message("And second?", {"namespace": sales}, context_id=context_id))
    assert second[0]["task"]["contextId"] == context_id
    assert second[0]["task"]["id"] != first[0]["task"]["id"]
    assert fake.requests[1].conversation_id == context_id
    answer = next(e for e in second if e.get("artifactUpdate", {}).get("artifact", {}).get("name") == "answer")
    assert answer["artifactUpdate"]["artifact"]["parts"][0]["text"].endswith("(after: Who orders most?)")


async def test_rest_conversation_continues_over_a2a(client, alice: Account, sales: str, agents, fake) -> None:
    started = await client.post(
        "/api/v1/query/autorag", json={"namespace": sales, "query": "Who?"}, headers=alice.headers
    )
    conversation_id = started.json()["conversationId"]
    async with await sdk_client(client, assistant_of(agents), alice.token) as a2a:
        events = await send(a2a, message("And then?", {"namespace": sales}, context_id=conversation_id))
    assert events[0]["task"]["contextId"] == conversation_id
    assert kinds(events)[-1] == "statusUpdate:TASK_STATE_COMPLETED"


async def test_someone_elses_context_is_refused(client, services: Services, alice, bob, sales, agents, fake) -> None:
    async with await sdk_client(client, assistant_of(agents), alice.token) as a2a:
        context_id = (await send(a2a, message("Who?", {"namespace": sales})))[0]["task"]["contextId"]
    async with services.db.session() as session:
        await set_grant(session, "alice", sales, "bob", Permission.READ)
    async with await sdk_client(client, assistant_of(agents), bob.token) as a2a:
        with pytest.raises(InvalidParamsError) as raised:
            await send(a2a, message("Who?", {"namespace": "alice/sales"}, context_id=context_id))
    assert "does not exist" in raised.value.message
    assert raised.value.data == {"errorCode": "NOT_FOUND"}


async def test_text_only_clients_get_rows_as_text(client, alice: Account, sales: str, agents, fake) -> None:
    async with await sdk_client(client, nl2ql_of(agents), alice.token) as a2a:
        events = await send(a2a, message("Orders?", {"namespace": sales}, output_modes=("text",)))
    [part] = events[2]["artifactUpdate"]["artifact"]["parts"]
    lines = part["text"].splitlines()
    assert lines[0] == "1 row"
    assert '"__metadata": {"score": 0.8' in lines[1]
    async with await sdk_client(client, assistant_of(agents), alice.token) as a2a:
        events = await send(a2a, message("Who?", {"namespace": sales}, output_modes=("text/plain",)))
    plan = events[2]["statusUpdate"]["status"]["message"]["parts"]
    assert [list(p) for p in plan] == [["text"]]
    assert f"1. {PLAN[0]}" in plan[0]["text"]
    step = events[4]["artifactUpdate"]["artifact"]["parts"]
    assert [list(p) for p in step] == [["text"], ["text"]]


async def test_model_and_provider_overrides(client, alice: Account, sales: str, agents, fake) -> None:
    metadata = {"namespace": sales, "model": "gpt-4o-mini", "provider": "openai"}
    for agent in agents.values():
        async with await sdk_client(client, agent, alice.token) as a2a:
            await send(a2a, message("Who?", metadata))
    for asked in fake.requests:
        for stage in ("plan", "query", "answer"):
            assert asked.choices.for_stage(stage) == ModelChoice("gpt-4o-mini", "openai")


async def test_missing_namespace_is_invalid_params(client, alice: Account, agents, fake) -> None:
    for agent in agents.values():
        for streaming in (True, False):
            async with await sdk_client(client, agent, alice.token, streaming=streaming) as a2a:
                with pytest.raises(InvalidParamsError) as raised:
                    await send(a2a, message("Who?"))
            assert "params.message.metadata.namespace is required" in raised.value.message
    assert fake.requests == []


async def test_namespace_without_access_is_invalid_params(client, services, bob: Account, sales, agents, fake) -> None:
    for agent in agents.values():
        async with await sdk_client(client, agent, bob.token) as a2a:
            with pytest.raises(InvalidParamsError) as raised:
                await send(a2a, message("Who?", {"namespace": "alice/sales"}))
        assert raised.value.data == {"errorCode": "FORBIDDEN"}
        assert "no read access to namespace alice/sales" in raised.value.message
    async with services.db.session() as session:
        await set_grant(session, "alice", sales, "bob", Permission.READ)
    async with await sdk_client(client, nl2ql_of(agents), bob.token) as a2a:
        events = await send(a2a, message("Who?", {"namespace": "alice/sales"}))
    assert kinds(events)[-1] == "statusUpdate:TASK_STATE_COMPLETED"


async def test_graph_failures_end_failed_with_a_message(client, alice: Account, sales: str, agents, fake) -> None:
    expected = {"event": {"nl2ql": "QUERY_ERROR", "assistant": "MODEL_ERROR"}, "raise": {"nl2ql": "INTERNAL_ERROR"}}
    expected["raise"]["assistant"] = "MODEL_ERROR"
    for fail, codes in expected.items():
        fake.fail = fail
        for agent in agents.values():
            async with await sdk_client(client, agent, alice.token) as a2a:
                events = await send(a2a, message("Who?", {"namespace": sales}))
            final = events[-1]["statusUpdate"]["status"]
            assert final["state"] == "TASK_STATE_FAILED"
            assert final["message"]["metadata"] == {"errorCode": codes[agent.name]}
            assert final["message"]["parts"][0]["text"]
            assert "Traceback" not in final["message"]["parts"][0]["text"]
    # An unexpected exception never reaches the client verbatim.
    fake.fail = "raise"
    async with await sdk_client(client, nl2ql_of(agents), alice.token) as a2a:
        events = await send(a2a, message("Who?", {"namespace": sales}))
    assert "connection reset" not in str(events)


async def test_extended_card_adds_examples(client, alice: Account, agents) -> None:
    for agent in agents.values():
        async with await sdk_client(client, agent, alice.token) as a2a:
            card = await a2a.get_extended_agent_card(GetExtendedAgentCardRequest(), context=context())
        assert card.name == agent.name
        assert list(card.skills[0].examples)
        assert "metadata.namespace" in card.skills[0].description


async def test_finished_tasks_are_not_kept(client, alice: Account, sales: str, agents, fake) -> None:
    for agent in agents.values():
        async with await sdk_client(client, agent, alice.token) as a2a:
            events = await send(a2a, message("Who?", {"namespace": sales}))
            task_id = next(iter(events[-1].values()))["taskId"]
            with pytest.raises(TaskNotFoundError):
                await a2a.get_task(GetTaskRequest(id=task_id), context=context())


async def test_without_a_token_the_client_gets_401(client, agents, fake) -> None:
    for agent in agents.values():
        async with await sdk_client(client, agent, None) as a2a:
            with pytest.raises(A2AClientError) as raised:
                await send(a2a, message("Who?", {"namespace": "sales"}))
        assert "401" in str(raised.value)


async def test_a_run_that_ignores_the_context_id_fails_loudly(
    client, alice: Account, sales: str, agents, fake: FakeRuns
) -> None:
    """If a runner started the conversation under an id of its own, the contextId handed to the
    client could not be continued: the task fails instead."""

    fake.ignore_new_conversation_id = True
    async with await sdk_client(client, assistant_of(agents), alice.token) as a2a:
        events = await send(a2a, message("Who?", {"namespace": sales}))
    final = events[-1]["statusUpdate"]["status"]
    assert final["state"] == "TASK_STATE_FAILED"
    assert final["message"]["metadata"] == {"errorCode": "INTERNAL_ERROR"}
