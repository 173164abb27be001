"""Issue 50: the answer the user sees is the checked one. The real assistant graph with a
scripted model that states a number the rows do not hold ("There was 1 order" over a count
of 0): the REST SSE stream, the A2A stream and the console's stream carry only the checked
answer, never the model's number first (`datawell ask`: tests/cli/test_ask_checked.py)."""

from __future__ import annotations

import json
from typing import Any

from datawell.graphs.assistant.state import PlanOutput
from datawell.llm.scripted import ScriptedChatModel
from tests.agents.a2a_client import discover, rpc_body, sse_data, wire_message
from tests.api.test_autorag import SSE, URL, events_of
from tests.conftest import Account

COUNT = "SELECT COUNT(*) AS orders FROM orders"
QUESTION = "How many orders were placed?"
WRONG = "There was 1 order placed."
CHECKED = "There were no orders (0) placed."


def wrong_twice(chat_model: ScriptedChatModel) -> None:
    """The plan counts the (empty) orders; the answer and its one rewrite both say 1."""
    chat_model.script += [PlanOutput(query=COUNT), WRONG, WRONG]


async def sse_run(client: Any, alice: Account, sales: str) -> str:
    body = {"namespace": sales, "query": QUESTION}
    response = await client.post(URL, json=body, headers={**alice.headers, **SSE})
    assert response.status_code == 200, response.text
    return str(response.text)


async def test_the_sse_stream_sends_only_the_checked_answer(
    client, alice: Account, sales: str, chat_model: ScriptedChatModel
) -> None:
    wrong_twice(chat_model)

    events = events_of(await sse_run(client, alice, sales))

    names = [name for name, _ in events]
    deltas = [data["text"] for name, data in events if name == "answer-delta"]
    assert names[:3] == ["run-started", "plan", "step"] and deltas
    assert names[3:] == ["answer-delta"] * len(deltas) + ["answer", "run-finished"]
    assert events[2][1]["data"][0]["orders"] == 0
    [answer] = [data["text"] for name, data in events if name == "answer"]
    assert answer.startswith(CHECKED)
    assert "".join(deltas) == answer
    assert "1 order" not in "".join(deltas) + json.dumps(events)  # the model's number is never sent
    assert len(chat_model.calls) == 3  # plan, answer, the one rewrite


async def test_an_answer_the_check_keeps_is_streamed_as_the_model_wrote_it(
    client, alice: Account, sales: str, chat_model: ScriptedChatModel
) -> None:
    chat_model.script += [PlanOutput(query=COUNT), "No orders were placed [1]."]

    events = events_of(await sse_run(client, alice, sales))

    assert "".join(data["text"] for name, data in events if name == "answer-delta") == "No orders were placed [1]."
    assert len(chat_model.calls) == 2  # no rewrite


async def test_the_a2a_stream_carries_only_the_checked_answer(
    client, alice: Account, sales: str, chat_model: ScriptedChatModel
) -> None:
    wrong_twice(chat_model)
    agents = await discover(client)
    params = {"message": wire_message(QUESTION, {"namespace": sales})}
    response = await client.post(
        agents["assistant"].url,
        json=rpc_body("SendStreamingMessage", params),
        headers={**alice.headers, "A2A-Version": "1.0"},
    )
    assert response.status_code == 200

    results = [event["result"] for event in sse_data(response.text)]

    answers = [
        r["artifactUpdate"]["artifact"]
        for r in results
        if "artifactUpdate" in r and r["artifactUpdate"]["artifact"]["artifactId"] == "answer"
    ]
    assert len(answers) == 1 and answers[0]["parts"][0]["text"].startswith(CHECKED)
    assert results[-1]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"
    assert "1 order" not in json.dumps(results)


async def test_the_console_streams_only_the_checked_answer(
    client, alice: Account, sales: str, chat_model: ScriptedChatModel
) -> None:
    from html import unescape

    from tests.console.test_pages import sign_in

    wrong_twice(chat_model)
    csrf = await sign_in(client, alice)
    turn = await client.post(f"/ask/alice/{sales}", data={"csrf": csrf, "question": QUESTION})
    assert turn.status_code == 200, turn.text
    stream = unescape(turn.text.split('sse-connect="', 1)[1].split('"', 1)[0])

    body = (await client.get(stream)).text

    blocks = [block.split("\n") for block in body.replace("\r\n", "\n").split("\n\n") if block.strip()]
    events = [(b[0].removeprefix("event: "), "\n".join(x.removeprefix("data: ") for x in b[1:])) for b in blocks]
    names = [name for name, _ in events]
    assert "answer-delta" in names and names.index("answer-delta") < names.index("answer")
    shown = unescape("".join(data for name, data in events if name == "answer-delta"))
    assert shown.startswith(CHECKED)
    assert "1 order" not in shown
