"""Chat models by litellm name: which model serves a stage, and what a caller gets back
(answers, tokens, structured output, errors). litellm answers from `mock_response=`; nothing
reaches a provider."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import litellm
import pytest
from langchain_core.callbacks import UsageMetadataCallbackHandler
from langchain_core.messages import HumanMessage
from pydantic import BaseModel, Field

from datawell.config import Settings
from datawell.errors import ModelError
from datawell.graphs.nl2ql.state import QueryDraft
from datawell.graphs.structured import MAX_NAMED_COLUMNS, ask_structured
from datawell.llm.embedded_runtime import EMBEDDED_MODEL
from datawell.llm.litellm_models import LiteLLMChatModel, LiteLLMChatModels
from datawell.llm.models import ModelChoice, StageChoices


class Query(BaseModel):
    sql: str
    explanation: str = ""


class Table(BaseModel):
    name: str
    columns: list[str] = []


class Plan(BaseModel):
    tables: list[Table]
    note: str = Field("", description="anything else")


def make_settings(tmp_path: Path, **values: Any) -> Settings:
    defaults: dict[str, Any] = {
        "model": None,
        "plan_model": None,
        "query_model": None,
        "answer_model": None,
        "embedded_model_enabled": True,
        "llm_max_retries": 2,
        "llm_timeout_seconds": 30.0,
    }
    return Settings(_env_file=None, data_dir=tmp_path / "data", **{**defaults, **values})  # type: ignore[call-arg]


@pytest.fixture(autouse=True)
def provider_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """Every litellm.acompletion call's arguments, on top of the no-network guard."""
    seen: list[dict[str, Any]] = []
    guarded = litellm.acompletion

    def record(*args: Any, **kwargs: Any) -> Any:
        seen.append(kwargs)
        return guarded(*args, **kwargs)

    monkeypatch.setattr(litellm, "acompletion", record)
    return seen


def mocked(name: str, response: Any, **values: Any) -> LiteLLMChatModel:
    return LiteLLMChatModel(model=name, model_kwargs={"mock_response": response}, retry_backoff_seconds=0, **values)


# Which model serves a stage


def test_request_per_stage_beats_request_default(tmp_path: Path) -> None:
    models = LiteLLMChatModels(make_settings(tmp_path, model="openai/gpt-4o", plan_model="openai/gpt-4.1"))
    choices = StageChoices(
        default=ModelChoice(model="gpt-4o-mini", provider="openai"),
        per_stage={"plan": ModelChoice(model="claude-3-5-haiku-latest", provider="anthropic")},
    )
    assert models.for_stage("plan", choices).model == "anthropic/claude-3-5-haiku-latest"  # type: ignore[attr-defined]
    assert models.for_stage("query", choices).model == "openai/gpt-4o-mini"  # type: ignore[attr-defined]


def test_settings_per_stage_beats_settings_model(tmp_path: Path) -> None:
    models = LiteLLMChatModels(make_settings(tmp_path, model="openai/gpt-4o", answer_model="anthropic/claude-sonnet-4"))
    assert models.model_name("answer") == "anthropic/claude-sonnet-4"
    assert models.model_name("query") == "openai/gpt-4o"
    assert models.model_name("curate", StageChoices()) == "openai/gpt-4o"


def test_request_choice_beats_settings(tmp_path: Path) -> None:
    models = LiteLLMChatModels(make_settings(tmp_path, model="openai/gpt-4o", query_model="openai/gpt-4.1"))
    choices = StageChoices(default=ModelChoice(model="anthropic/claude-3-5-haiku-latest"))
    assert models.model_name("query", choices) == "anthropic/claude-3-5-haiku-latest"


def test_embedded_model_when_nothing_is_configured(tmp_path: Path) -> None:
    models = LiteLLMChatModels(make_settings(tmp_path))
    model = models.for_stage("plan")
    assert model.model == EMBEDDED_MODEL == "embedded/qwen2.5-coder-1.5b"  # type: ignore[attr-defined]
    assert models.for_stage("plan") is model  # built once per name and stage
    answer = models.for_stage("answer")
    assert answer.model == model.model  # type: ignore[attr-defined]
    # The stage rides on the model as its tag: the run recorder counts its calls under it.
    assert (model.tags, answer.tags) == (["stage:plan"], ["stage:answer"])


def test_no_model_at_all_says_how_to_configure_one(tmp_path: Path) -> None:
    models = LiteLLMChatModels(make_settings(tmp_path, embedded_model_enabled=False))
    with pytest.raises(ModelError, match="DATAWELL_MODEL"):
        models.for_stage("query")
    with pytest.raises(ModelError, match="turned off"):
        models.for_stage("query", StageChoices(default=ModelChoice(model=EMBEDDED_MODEL)))


def test_unknown_model_and_missing_key_are_refused_before_any_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    models = LiteLLMChatModels(make_settings(tmp_path))
    with pytest.raises(ModelError, match="unknown model 'gpt-nonsense'"):
        models.for_stage("query", StageChoices(default=ModelChoice(model="gpt-nonsense")))
    with pytest.raises(ModelError, match="embedded provider serves"):
        models.for_stage("query", StageChoices(default=ModelChoice(model="other", provider="embedded")))
    monkeypatch.delenv("OPENAI_API_KEY")
    with pytest.raises(ModelError, match="no API key is configured for openai/gpt-4o-mini: set OPENAI_API_KEY"):
        models.for_stage("query", StageChoices(default=ModelChoice(model="gpt-4o-mini", provider="openai")))


def test_settings_reach_the_model(tmp_path: Path) -> None:
    models = LiteLLMChatModels(make_settings(tmp_path, model="openai/gpt-4o", llm_timeout_seconds=7, llm_max_retries=4))
    model = models.for_stage("query")
    assert (model.request_timeout, model.max_retries) == (7, 4)  # type: ignore[attr-defined]


# What a caller gets back


async def test_answer_carries_token_usage_and_run_usage_adds_it_up() -> None:
    model = mocked("openai/gpt-4o-mini", "SELECT 1")
    usage = UsageMetadataCallbackHandler()
    first = await model.ainvoke("question one", config={"callbacks": [usage]})
    await model.ainvoke("question two", config={"callbacks": [usage]})
    assert first.content == "SELECT 1"
    assert first.usage_metadata is not None and first.usage_metadata["total_tokens"] > 0
    [(name, used)] = usage.usage_metadata.items()
    assert name == "openai/gpt-4o-mini"
    assert used["total_tokens"] == 2 * first.usage_metadata["total_tokens"]
    assert used["input_tokens"] == 2 * first.usage_metadata["input_tokens"]


async def test_streaming_yields_tokens_then_usage() -> None:
    model = mocked("openai/gpt-4o-mini", "the answer is forty two")
    usage = UsageMetadataCallbackHandler()
    chunks = [chunk async for chunk in model.astream("question", config={"callbacks": [usage]})]
    texts = [str(c.content) for c in chunks if c.content]
    assert len(texts) > 3
    assert "".join(texts) == "the answer is forty two"
    [used] = usage.usage_metadata.values()  # one call, counted once
    assert [c.usage_metadata["total_tokens"] for c in chunks if c.usage_metadata] == [used["total_tokens"]]
    assert used["total_tokens"] > 0


async def test_structured_output_by_json_schema(calls: list[dict[str, Any]]) -> None:
    answer = {"sql": "SELECT count(*) FROM orders", "explanation": "counts the orders"}
    model = mocked("openai/gpt-4o-mini", json.dumps(answer))
    result = await model.with_structured_output(Query).ainvoke("how many orders?")
    assert result == Query(**answer)
    response_format = calls[0]["response_format"]
    assert response_format["type"] == "json_schema"
    assert response_format["json_schema"]["schema"]["required"] == ["sql", "explanation"]
    assert "tools" not in calls[0]


async def test_json_schemas_are_sent_in_strict_form(calls: list[dict[str, Any]]) -> None:
    """Every property required, no defaults, no extra properties: OpenAI's strict mode refuses
    anything else, and a grammar-constrained model then writes every field."""
    model = mocked("openai/gpt-4o-mini", '{"tables": [{"name": "orders", "columns": ["id"]}], "note": ""}')
    reply = await model.with_structured_output(Plan, include_raw=True).ainvoke("q")
    assert reply["parsed"] == Plan(tables=[Table(name="orders", columns=["id"])])  # type: ignore[index]
    assert reply["parsing_error"] is None  # type: ignore[index]
    sent = calls[0]["response_format"]["json_schema"]
    assert sent["strict"] is True and sent["name"] == "Plan"
    assert sent["schema"]["required"] == ["tables", "note"]
    assert sent["schema"]["additionalProperties"] is False
    table = sent["schema"]["properties"]["tables"]["items"]
    assert (table["required"], table["additionalProperties"]) == (["name", "columns"], False)
    assert "default" not in json.dumps(sent["schema"])


async def test_an_answer_that_does_not_fit_the_schema_is_reported_with_include_raw() -> None:
    model = mocked("openai/gpt-4o-mini", '{"tables": "orders"}')
    reply = await model.with_structured_output(Plan, include_raw=True).ainvoke("q")
    assert reply["parsed"] is None and reply["parsing_error"] is not None  # type: ignore[index]
    assert reply["raw"].content == '{"tables": "orders"}'  # type: ignore[index]


async def test_structured_output_by_tool_call_where_schemas_are_unsupported(calls: list[dict[str, Any]]) -> None:
    answer = {"sql": "SELECT 1", "explanation": "one"}
    tool_call = {"id": "call_1", "type": "function", "function": {"name": "Query", "arguments": json.dumps(answer)}}
    model = LiteLLMChatModel(
        model="ollama/llama3", model_kwargs={"mock_response": "", "mock_tool_calls": [tool_call]}, max_retries=0
    )
    assert not model.supports_json_schema()
    assert await model.with_structured_output(Query).ainvoke("q") == Query(**answer)
    assert calls[0]["tools"][0]["function"]["name"] == "Query"
    assert "response_format" not in calls[0]


# Errors


async def test_timeouts_are_retried_then_reported(calls: list[dict[str, Any]]) -> None:
    timeout = litellm.Timeout(message="read timed out", model="openai/gpt-4o-mini", llm_provider="openai")
    model = mocked("openai/gpt-4o-mini", timeout, request_timeout=5.0, max_retries=2)
    with pytest.raises(ModelError, match=r"did not answer within 5 s \(3 attempts\)") as raised:
        await model.ainvoke("q")
    assert len(calls) == 3
    assert raised.value.mapping.http_status == 502 and "read timed out" in raised.value.detail


async def test_a_transient_error_then_success_is_an_answer(
    calls: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    recorded = litellm.acompletion
    answers = [litellm.RateLimitError(message="slow down", model="m", llm_provider="openai"), "fine"]

    def flaky(*args: Any, **kwargs: Any) -> Any:
        return recorded(*args, **{**kwargs, "mock_response": answers.pop(0)})

    monkeypatch.setattr(litellm, "acompletion", flaky)
    model = LiteLLMChatModel(model="openai/gpt-4o-mini", retry_backoff_seconds=0, max_retries=1)
    assert (await model.ainvoke("q")).content == "fine"
    assert len(calls) == 2


async def test_a_rejected_key_is_not_retried(calls: list[dict[str, Any]]) -> None:
    refused = litellm.AuthenticationError(message="invalid x-api-key", model="m", llm_provider="anthropic")
    model = mocked("anthropic/claude-3-5-haiku-latest", refused, max_retries=3)
    with pytest.raises(ModelError, match="refused its API key"):
        await model.ainvoke("q")
    assert len(calls) == 1


def test_sync_calls_follow_the_same_rules() -> None:
    assert mocked("openai/gpt-4o-mini", "sync answer").invoke("q").content == "sync answer"
    refused = litellm.NotFoundError(message="no such model", model="m", llm_provider="openai")
    with pytest.raises(ModelError, match="does not know the model openai/gpt-5-nope"):
        mocked("openai/gpt-5-nope", refused).invoke("q")


async def test_the_test_guard_refuses_real_provider_calls() -> None:
    with pytest.raises(AssertionError, match="real model 'openai/gpt-4o-mini'"):
        await litellm.acompletion(model="openai/gpt-4o-mini", messages=[{"role": "user", "content": "hi"}])
    with pytest.raises(AssertionError, match="real model"):
        litellm.completion(
            model="embedded/qwen2.5-coder-1.5b",
            custom_llm_provider="openai",
            messages=[{"role": "user", "content": "hi"}],
        )


@pytest.mark.parametrize(
    ("configured", "loads"),
    [({}, True), ({"model": "openai/gpt-4o-mini"}, False), ({"answer_model": "openai/gpt-4o-mini"}, True)],
)
async def test_the_embedded_model_preloads_only_when_a_question_would_use_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, configured: dict[str, Any], loads: bool
) -> None:
    from datawell.llm import embedded

    models = LiteLLMChatModels(make_settings(tmp_path, **configured))
    loaded: list[bool] = []
    monkeypatch.setattr(embedded.runtime(), "load", lambda: loaded.append(True))

    await models.preload()

    assert loaded == ([True] if loads else [])


async def test_a_model_that_cannot_preload_is_left_for_the_first_question(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from datawell.llm import embedded

    models = LiteLLMChatModels(make_settings(tmp_path))

    def fail() -> None:
        raise ModelError("the embedded model's runtime (xllamacpp) is not installed")

    monkeypatch.setattr(embedded.runtime(), "load", fail)
    await models.preload()
    assert "was not preloaded: the embedded model's runtime (xllamacpp) is not installed" in caplog.text


async def test_naming_columns_first_constrains_them_to_the_catalog(calls: list[dict[str, Any]]) -> None:
    """With columns, the schema sent asks first for the columns the query uses, each one of the
    catalog's names (a grammar on the embedded model); the caller gets its own schema back."""
    reply = {"columns": ["orders.total"], "query": "SELECT SUM(total) FROM orders", "refusal": ""}
    model = mocked("openai/gpt-4o-mini", json.dumps(reply))
    answer = await ask_structured(model, QueryDraft, [HumanMessage("total?")], ["orders.total", "customers.name"])
    assert answer.parsed == QueryDraft(query="SELECT SUM(total) FROM orders")
    schema = calls[0]["response_format"]["json_schema"]["schema"]
    assert next(iter(schema["properties"])) == "columns"
    assert schema["properties"]["columns"]["items"]["enum"] == ["orders.total", "customers.name"]
    assert schema["properties"]["columns"]["maxItems"] == MAX_NAMED_COLUMNS


async def test_a_column_outside_the_catalog_does_not_parse(calls: list[dict[str, Any]]) -> None:
    reply = {"columns": ["orders.shoe_size"], "query": "SELECT shoe_size FROM orders", "refusal": ""}
    model = mocked("openai/gpt-4o-mini", json.dumps(reply))
    answer = await ask_structured(model, QueryDraft, [HumanMessage("sizes?")], ["orders.total"])
    assert answer.parsed is None and "orders.shoe_size" in answer.problem


def test_a_hosted_choice_is_told_from_the_embedded_model() -> None:
    """The scheduler keeps a run's prompt prefix only for the embedded model (issue 52)."""
    assert ModelChoice(model="gpt-4o-mini", provider="openai").is_hosted()
    assert not ModelChoice(model="qwen2.5-coder-1.5b", provider="embedded").is_hosted()
    assert not ModelChoice(model=EMBEDDED_MODEL).is_hosted()
    assert not ModelChoice().is_hosted()
