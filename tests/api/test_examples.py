from __future__ import annotations

from datawell.graphs.assistant.state import PlanOutput
from datawell.graphs.nl2ql.state import QueryDraft
from datawell.llm.scripted import ScriptedChatModel
from datawell.services import Services
from datawell.storage.access import Permission, set_grant
from tests.conftest import Account

EXAMPLES = "/api/v1/examples/alice/sales"
TOTALS = "SELECT customer, COUNT(*) AS orders FROM orders GROUP BY customer"
PAIR = {"question": "How many orders did each customer place?", "query": TOTALS}


async def grant(services: Services, user: str, permission: Permission) -> None:
    async with services.db.session() as session:
        await set_grant(session, "alice", "sales", user, permission)


async def test_add_list_delete(client, alice: Account, sales: str) -> None:
    added = await client.post(EXAMPLES, json=PAIR, headers=alice.headers)
    assert added.status_code == 201
    body = added.json()
    assert (body["owner"], body["namespace"], body["question"], body["query"]) == ("alice", "sales", *PAIR.values())
    assert (body["source"], body["createdBy"], body["conversationId"], body["step"]) == ("manual", "alice", None, None)

    listing = await client.get(EXAMPLES, headers=alice.headers)
    assert [e["id"] for e in listing.json()["data"]] == [body["id"]]

    deleted = await client.delete(f"{EXAMPLES}/{body['id']}", headers=alice.headers)
    assert deleted.status_code == 204
    assert (await client.get(EXAMPLES, headers=alice.headers)).json()["data"] == []
    assert (await client.delete(f"{EXAMPLES}/{body['id']}", headers=alice.headers)).status_code == 404


async def test_one_example_per_question_ignoring_case_and_punctuation(client, alice: Account, sales: str) -> None:
    assert (await client.post(EXAMPLES, json=PAIR, headers=alice.headers)).status_code == 201
    again = {"question": "  how many orders did each customer PLACE ", "query": "SELECT customer FROM orders"}
    response = await client.post(EXAMPLES, json=again, headers=alice.headers)
    assert response.status_code == 409
    assert "delete it first" in response.json()["message"]


async def test_a_query_the_caller_cannot_run_is_refused(client, alice: Account, sales: str) -> None:
    for query in ("SELECT shoe_size FROM orders", "DELETE FROM orders", "SELECT * FROM bob.private.secrets"):
        response = await client.post(EXAMPLES, json={"question": "q", "query": query}, headers=alice.headers)
        assert response.status_code == 422, query
        assert response.json()["error_code"] == "QUERY_ERROR"
    assert (await client.get(EXAMPLES, headers=alice.headers)).json()["data"] == []


async def test_access_follows_the_namespace(
    client, services: Services, alice: Account, bob: Account, sales: str
) -> None:
    added = (await client.post(EXAMPLES, json=PAIR, headers=alice.headers)).json()
    # No grant: bob can neither read nor write alice's examples.
    assert (await client.get(EXAMPLES, headers=bob.headers)).status_code == 403
    assert (await client.post(EXAMPLES, json=PAIR, headers=bob.headers)).status_code == 403
    assert (await client.delete(f"{EXAMPLES}/{added['id']}", headers=bob.headers)).status_code == 403
    assert (await client.get("/api/v1/examples/alice/nothing", headers=bob.headers)).status_code == 404
    # Read grant: bob lists them, but cannot add or delete.
    await grant(services, "bob", Permission.READ)
    assert [e["id"] for e in (await client.get(EXAMPLES, headers=bob.headers)).json()["data"]] == [added["id"]]
    other = {"question": "Who ordered?", "query": "SELECT customer FROM orders"}
    assert (await client.post(EXAMPLES, json=other, headers=bob.headers)).status_code == 403
    assert (await client.delete(f"{EXAMPLES}/{added['id']}", headers=bob.headers)).status_code == 403
    # Write grant: bob adds, as himself.
    await grant(services, "bob", Permission.WRITE)
    response = await client.post(EXAMPLES, json=other, headers=bob.headers)
    assert (response.status_code, response.json()["createdBy"]) == (201, "bob")


async def test_a_bad_example_id_is_422(client, alice: Account, sales: str) -> None:
    response = await client.delete(f"{EXAMPLES}/not-a-uuid", headers=alice.headers)
    assert response.status_code == 422
    assert response.json()["sub_errors"][0]["message"].startswith("exampleId:")


async def ask(client, account: Account, question: str) -> str:
    body = {"username": "alice", "namespace": "sales", "query": question}
    response = await client.post("/api/v1/query/autorag", json=body, headers=account.headers)
    assert response.status_code == 200, response.text
    return response.json()["conversationId"]


def one_step_turn(query: str) -> list[object]:
    """The plan writes the query; its empty result gets one repair, which keeps it; the answer."""
    return [PlanOutput(query=query), QueryDraft(query=query), "No orders yet."]


async def test_marking_a_step_good_stores_it_and_bad_removes_it(
    client, alice: Account, sales: str, chat_model: ScriptedChatModel
) -> None:
    chat_model.script += one_step_turn(TOTALS)
    conversation = await ask(client, alice, "How many orders did each customer place?")
    marks = "/api/v1/examples/marks"

    good = await client.post(
        marks, json={"conversationId": conversation, "step": 1, "verdict": "good"}, headers=alice.headers
    )
    assert good.status_code == 200, good.text
    example = good.json()["example"]
    assert (example["question"], example["query"]) == ("How many orders did each customer place?", TOTALS)
    assert (example["source"], example["conversationId"], example["step"]) == ("conversation", conversation, 1)
    listed = (await client.get(EXAMPLES, headers=alice.headers)).json()["data"]
    assert [e["id"] for e in listed] == [example["id"]]
    # Marking it good again answers the stored example.
    again = await client.post(
        marks, json={"conversationId": conversation, "step": 1, "verdict": "good"}, headers=alice.headers
    )
    assert again.json()["example"]["id"] == example["id"]

    bad = await client.post(
        marks, json={"conversationId": conversation, "step": 1, "verdict": "bad"}, headers=alice.headers
    )
    assert (bad.status_code, bad.json()["removed"], bad.json()["example"]) == (200, 1, None)
    assert (await client.get(EXAMPLES, headers=alice.headers)).json()["data"] == []


async def test_marks_name_the_callers_own_conversation_and_a_step_that_ran(
    client, services: Services, alice: Account, bob: Account, sales: str, chat_model: ScriptedChatModel
) -> None:
    chat_model.script += one_step_turn(TOTALS)
    conversation = await ask(client, alice, "How many orders did each customer place?")
    marks = "/api/v1/examples/marks"
    mark = {"conversationId": conversation, "step": 1, "verdict": "good"}
    assert (await client.post(marks, json={**mark, "step": 2}, headers=alice.headers)).status_code == 404
    assert (await client.post(marks, json={**mark, "turn": 2}, headers=alice.headers)).status_code == 404
    unknown = {**mark, "conversationId": "no-such-conversation"}
    assert (await client.post(marks, json=unknown, headers=alice.headers)).status_code == 404
    # bob may write alice's namespace, but the conversation is alice's.
    await grant(services, "bob", Permission.WRITE)
    assert (await client.post(marks, json=mark, headers=bob.headers)).status_code == 404


async def test_marking_needs_write_access_to_the_conversations_namespace(
    client, services: Services, alice: Account, bob: Account, sales: str, chat_model: ScriptedChatModel
) -> None:
    await grant(services, "bob", Permission.READ)
    chat_model.script += one_step_turn(TOTALS)
    conversation = await ask(client, bob, "How many orders did each customer place?")
    mark = {"conversationId": conversation, "step": 1, "verdict": "good"}
    assert (await client.post("/api/v1/examples/marks", json=mark, headers=bob.headers)).status_code == 403
    await grant(services, "bob", Permission.WRITE)
    marked = await client.post("/api/v1/examples/marks", json=mark, headers=bob.headers)
    assert (marked.status_code, marked.json()["example"]["createdBy"]) == (200, "bob")
    assert (marked.json()["example"]["owner"], marked.json()["example"]["namespace"]) == ("alice", "sales")
