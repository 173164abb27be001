"""Issue 50: the nl2ql graph sends the query grammar to the embedded model when the switch is
on, and never otherwise; a fake llama.cpp server stands in for the model."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from typing import Any

import litellm
import pytest

from datawell.graphs.events import QueryGenerated
from datawell.graphs.nl2ql.state import QueryDraft
from datawell.graphs.structured import ask_structured
from datawell.llm import embedded
from datawell.llm.embedded import EmbeddedProvider
from datawell.llm.embedded_runtime import EMBEDDED_MODEL, EmbeddedRuntime
from datawell.llm.litellm_models import LiteLLMChatModel
from datawell.llm.models import FixedChatModels
from datawell.runs import AskRequest, Runs
from datawell.services import Services
from tests.graphs.conftest import Shop
from tests.graphs.fakes import FakeQueryTools
from tests.llm.test_embedded import FakeServer

OSLO = "SELECT name FROM customers WHERE city = 'Oslo'"


@pytest.fixture
def server(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeServer]:
    server = FakeServer([json.dumps({"query": OSLO})])
    runtime = EmbeddedRuntime(tmp_path / "models")
    runtime._server = server
    provider = EmbeddedProvider(runtime)
    monkeypatch.setattr(embedded, "_provider", provider)
    monkeypatch.setattr(litellm, "custom_provider_map", [{"provider": "embedded", "custom_handler": provider}])
    litellm.utils.custom_llm_setup()
    yield server


@pytest.fixture
def chat_models() -> FixedChatModels:
    return FixedChatModels(LiteLLMChatModel(model=EMBEDDED_MODEL, retry_backoff_seconds=0))


async def ask(services: Services, shop: Shop, grammar: bool, repairs: bool = False) -> list[Any]:
    settings = services.settings.model_copy(update={"query_grammar": grammar, "query_grammar_repairs": repairs})
    run = await Runs(dataclasses.replace(services, settings=settings)).start_nl2ql(
        AskRequest(shop.user, shop.namespace, "Who lives in Oslo?")
    )
    return [event async for event in run.events()]


async def test_the_embedded_model_writes_under_the_catalogs_grammar_when_the_switch_is_on(
    services: Services, shop: Shop, tools: FakeQueryTools, server: FakeServer
) -> None:
    tools.rows[OSLO] = [{"name": "Ann"}]
    events = await ask(services, shop, grammar=True)
    assert any(isinstance(e, QueryGenerated) and e.query == OSLO for e in events)
    [request] = server.requests
    assert "response_format" not in request  # llama.cpp takes a grammar or a schema, not both
    grammar = request["grammar"]
    assert "root ::=" in grammar and '"customers"' in grammar and '"customer_id"' in grammar


async def test_no_grammar_is_sent_when_the_switch_is_off(
    services: Services, shop: Shop, tools: FakeQueryTools, server: FakeServer
) -> None:
    tools.rows[OSLO] = [{"name": "Ann"}]
    await ask(services, shop, grammar=False)
    [request] = server.requests
    assert "grammar" not in request
    assert request["response_format"]["type"] == "json_schema"


async def test_with_the_repairs_switch_only_the_attempts_after_the_first_are_held_to_the_grammar(
    services: Services, shop: Shop, tools: FakeQueryTools, server: FakeServer
) -> None:
    tools.run_errors[OSLO] = "no such table: customers"  # every attempt fails: the graph asks again
    await ask(services, shop, grammar=False, repairs=True)
    first, *repairs = server.requests
    assert "grammar" not in first and first["response_format"]["type"] == "json_schema"
    assert repairs and all('"customers"' in r["grammar"] and "response_format" not in r for r in repairs)


async def test_a_hosted_model_is_never_sent_the_grammar(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[dict[str, Any]] = []
    guarded = litellm.acompletion

    def record(*args: Any, **kwargs: Any) -> Any:
        seen.append(kwargs)
        return guarded(*args, **kwargs)

    monkeypatch.setattr(litellm, "acompletion", record)
    hosted = LiteLLMChatModel(
        model="openai/gpt-4o-mini", model_kwargs={"mock_response": json.dumps({"query": OSLO})}, retry_backoff_seconds=0
    )
    reply = await ask_structured(hosted, QueryDraft, [], grammar='root ::= "x"')
    assert reply.parsed == QueryDraft(query=OSLO)
    assert "grammar" not in seen[0] and "grammar" not in json.dumps(seen[0].get("extra_body") or {})
    assert seen[0]["response_format"]["type"] == "json_schema"
