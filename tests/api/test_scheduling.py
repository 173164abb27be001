"""The scheduler as clients see it (one slot, one place in the queue): a waiting run's stream
says it is queued and where; the next question gets 503 + Retry-After (REST), a BUSY JSON-RPC
error (A2A) or a BUSY tool error (MCP) at once, while the slot and the queue are still held; a
client that leaves frees its slot."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable
from typing import Any

import httpx
import pytest
from langchain_core.messages import BaseMessage

from datawell.config import Settings
from datawell.llm.scripted import ScriptedChatModel
from datawell.services import Services
from tests.agents.a2a_client import rpc_body, wire_message
from tests.conftest import Account, Running
from tests.fake_runs import FakeRuns

AUTORAG = "/api/v1/query/autorag"
STREAM = {"Accept": "text/event-stream"}


class SlowModel(ScriptedChatModel):
    """Answers nothing for a minute: a run calling it holds its slot until it is stopped."""

    async def _agenerate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> Any:
        await asyncio.sleep(60)
        raise AssertionError("the slow model was never meant to answer")


@pytest.fixture
def settings(settings: Settings) -> Settings:
    return settings.model_copy(update={"model_slots": 1, "model_queue": 1, "model_runs_per_user": 1})


@pytest.fixture
def chat_model() -> ScriptedChatModel:
    return SlowModel([])


async def until(check: Callable[[], bool], seconds: float = 5.0) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.01)


async def while_held(request: Awaitable[httpx.Response], held: tuple[asyncio.Task[Any], ...]) -> httpx.Response:
    """The response to `request`, which must come while every task in `held` still runs: a
    request that waited for a slot or a place in the queue would time out here instead."""
    response = await asyncio.wait_for(request, timeout=10)
    assert not any(task.done() for task in held), "a held run ended before the refusal came"
    return response


def question(namespace: str) -> dict[str, str]:
    return {"namespace": namespace, "query": "Who ordered most?"}


async def test_queued_then_busy_on_every_surface(
    client: httpx.AsyncClient, services: Services, alice: Account, sales: str, fake: FakeRuns
) -> None:
    fake.hold = asyncio.Event()
    view = services.scheduler.view
    headers = {**alice.headers, **STREAM}
    running = asyncio.create_task(client.post(AUTORAG, json=question(sales), headers=headers))
    await until(lambda: view().running == 1)
    waiting = asyncio.create_task(client.post(AUTORAG, json=question(sales), headers=headers))
    await until(lambda: view().waiting == 1)

    # Nothing frees the slot or the queue until `fake.hold` is set, so an answer that comes back
    # at all was refused without waiting for either (a timed bound was flaky under CI load).
    held = (running, waiting)
    refused = await while_held(client.post(AUTORAG, json=question(sales), headers=alice.headers), held)
    assert refused.status_code == 503
    assert int(refused.headers["retry-after"]) >= 1
    assert refused.json()["error_code"] == "BUSY"

    a2a = await while_held(
        client.post(
            "/api/v1/a2a/assistant",
            json=rpc_body("SendMessage", {"message": wire_message("Who?", {"namespace": sales})}),
            headers={**alice.headers, "A2A-Version": "1.0"},
        ),
        held,
    )
    error = a2a.json()["error"]
    assert error["data"][0]["metadata"]["errorCode"] == "BUSY"
    assert int(error["data"][0]["metadata"]["retryAfterSeconds"]) >= 1

    mcp = await while_held(
        client.post(
            "/api/v1/mcp",
            json={
                "jsonrpc": "2.0",
                "id": 1,
                "method": "tools/call",
                "params": {"name": "ask_assistant", "arguments": {"namespace": sales, "question": "Who?"}},
            },
            headers={
                **alice.headers,
                "Accept": "application/json, text/event-stream",
                "MCP-Protocol-Version": "2025-11-25",
            },
        ),
        held,
    )
    result = mcp_result(mcp)
    assert result["isError"] is True
    assert result["_meta"]["errorCode"] == "BUSY"
    assert result["_meta"]["retryAfterSeconds"] >= 1

    fake.hold.set()
    await running
    events = sse_names((await waiting).text)
    # The waiting run said so first; the run that got its slot at once did not.
    assert events[:2] == ["queued", "run-started"] and events[-1] == "run-finished"
    assert sse_names((await running).text)[0] == "run-started"
    assert view().running == 0 and view().refused == 3


async def test_a_client_that_leaves_frees_its_slot_within_a_second(
    service: Running, services: Services, alice: Account, sales: str
) -> None:
    """A real assistant run on a slow model: the client reads the first event, then hangs up
    while the plan model is still thinking; the slot is free again within a second, so a
    second question starts at once."""
    first = await stream_until(service.asgi, alice, sales, lambda text: "run-started" in text)
    assert services.scheduler.view().running == 1
    hung_up = time.monotonic()
    await first.disconnect()
    await until(lambda: services.scheduler.view().running == 0, seconds=1.0)
    assert time.monotonic() - hung_up < 1.0
    second = await stream_until(service.asgi, alice, sales, lambda text: "run-started" in text)
    assert "queued" not in second.text
    await second.disconnect()


class Streaming:
    """A request to the app in process whose client can hang up (ASGI `http.disconnect`)."""

    def __init__(self, task: asyncio.Task[None], gone: asyncio.Event, chunks: list[bytes]) -> None:
        self.task, self.gone, self.chunks = task, gone, chunks

    @property
    def text(self) -> str:
        return b"".join(self.chunks).decode()

    async def disconnect(self) -> None:
        self.gone.set()
        await asyncio.wait_for(self.task, 5)


async def stream_until(
    asgi: Callable[..., Awaitable[None]], account: Account, namespace: str, seen: Callable[[str], bool]
) -> Streaming:
    body = json.dumps(question(namespace)).encode()
    headers = [(b"content-type", b"application/json"), (b"accept", b"text/event-stream")]
    headers.append((b"authorization", account.headers["Authorization"].encode()))
    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST", "scheme": "http",
             "path": AUTORAG, "raw_path": AUTORAG.encode(), "query_string": b"", "headers": headers,
             "server": ("testserver", 80), "client": ("127.0.0.1", 1234), "root_path": ""}  # fmt: skip
    gone = asyncio.Event()
    chunks: list[bytes] = []
    sent = False

    async def receive() -> dict[str, Any]:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        await gone.wait()
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.body":
            chunks.append(message.get("body", b""))

    task = asyncio.create_task(asgi(scope, receive, send))
    streaming = Streaming(task, gone, chunks)
    await until(lambda: seen(streaming.text) or task.done())
    return streaming


def sse_names(text: str) -> list[str]:
    return [line.split(":", 1)[1].strip() for line in text.splitlines() if line.startswith("event:")]


def mcp_result(response: httpx.Response) -> dict[str, Any]:
    if response.headers["content-type"].startswith("text/event-stream"):
        data = [line[5:] for line in response.text.splitlines() if line.startswith("data:")]
        return dict(json.loads(data[-1])["result"])
    return dict(response.json()["result"])


async def test_a2a_status_updates_say_the_task_is_queued(
    client: httpx.AsyncClient, services: Services, alice: Account, sales: str, fake: FakeRuns
) -> None:
    fake.hold = asyncio.Event()
    view = services.scheduler.view
    running = asyncio.create_task(client.post(AUTORAG, json=question(sales), headers={**alice.headers, **STREAM}))
    await until(lambda: view().running == 1)
    streaming = asyncio.create_task(
        client.post(
            "/api/v1/a2a/assistant",
            json=rpc_body("SendStreamingMessage", {"message": wire_message("Who?", {"namespace": sales})}),
            headers={**alice.headers, "A2A-Version": "1.0"},
        )
    )
    await until(lambda: view().waiting == 1)
    fake.hold.set()
    await running
    events = [
        json.loads(line[5:])["result"] for line in (await streaming).text.splitlines() if line.startswith("data:")
    ]
    updates = [e["statusUpdate"]["status"] for e in events if "statusUpdate" in e]
    queued = [u["message"] for u in updates if u.get("message", {}).get("messageId", "").endswith("-queued-1")]
    assert queued and queued[0]["metadata"] == {"queuePosition": 1}
    assert queued[0]["parts"][0]["text"] == "waiting for the model: number 1 in the queue"
    messages = [u.get("message", {}).get("messageId", "") for u in updates]
    assert messages.index(queued[0]["messageId"]) < next(i for i, m in enumerate(messages) if m.endswith("-plan"))
    assert updates[-1]["state"] == "TASK_STATE_COMPLETED"
