"""nl2ql and verified examples: a question a user verified runs its query with no model call."""

from __future__ import annotations

from datawell.graphs.events import GraphEvent, QueryGenerated, RowsReady
from datawell.graphs.nl2ql.graph import build_graph
from datawell.graphs.nl2ql.state import QueryContext, QueryDraft
from datawell.llm.scripted import ScriptedChatModel
from datawell.runs import AskRequest, Runs, query_deps
from datawell.services import Services
from tests.graphs.conftest import Shop, verify
from tests.graphs.fakes import FakeQueryTools

OSLO = "SELECT name FROM customers WHERE city = 'Oslo'"


async def ask(services: Services, request: AskRequest) -> list[GraphEvent]:
    run = await Runs(services).start_nl2ql(request)
    return [event async for event in run.events()]


async def test_a_verified_question_runs_its_query_with_no_model_call(
    services: Services, shop: Shop, tools: FakeQueryTools, chat_model: ScriptedChatModel
) -> None:
    example = await verify(services, shop, "Who lives in Oslo?", OSLO)
    tools.rows[OSLO] = [{"name": "Ann"}]

    # The scripted model has no replies: any model call would fail the run.
    events = await ask(services, AskRequest(shop.user, shop.namespace, "who lives in  OSLO"))

    assert events == [
        QueryGenerated(
            query=OSLO, reasoning=f"the verified example {example} answers this question", attempts=1, model_query=OSLO
        ),
        RowsReady(query=OSLO, rows=[{"name": "Ann"}]),
    ]
    assert chat_model.calls == []


async def test_an_empty_result_of_a_verified_query_gets_no_repair(
    services: Services, shop: Shop, tools: FakeQueryTools, chat_model: ScriptedChatModel
) -> None:
    """An empty result is doubted and repaired by the model, unless a user verified the query."""
    await verify(services, shop, "Who lives in Oslo?", OSLO)

    events = await ask(services, AskRequest(shop.user, shop.namespace, "Who lives in Oslo?"))

    assert [e.type for e in events] == ["query", "rows"]
    assert isinstance(events[1], RowsReady) and events[1].rows == []
    assert chat_model.calls == []


async def test_a_verified_query_that_no_longer_checks_leaves_the_question_to_the_model(
    services: Services, shop: Shop, tools: FakeQueryTools, chat_model: ScriptedChatModel
) -> None:
    await verify(services, shop, "Who lives in Oslo?", "SELECT name FROM customers WHERE town = 'Oslo'")
    chat_model.script.append(QueryDraft(query=OSLO))
    tools.rows[OSLO] = [{"name": "Ann"}]

    events = await ask(services, AskRequest(shop.user, shop.namespace, "Who lives in Oslo?"))

    assert [e.type for e in events] == ["query", "rows"]
    assert isinstance(events[0], QueryGenerated) and events[0].reasoning == "written by the query model"
    assert len(chat_model.calls) == 1


async def test_a_caller_that_found_the_example_passes_it_as_proposed_and_verified(
    services: Services, shop: Shop, chat_model: ScriptedChatModel
) -> None:
    """How the assistant's plan stage hands over an exact match: its empty result stands."""
    graph = build_graph(query_deps(services))
    context = QueryContext(caller=shop.caller, namespace=shop.namespace)

    out = await graph.ainvoke({"question": "Who lives in Oslo?", "proposed": OSLO, "verified": OSLO}, context=context)

    assert (out["query"], out["rows"], out["attempts"]) == (OSLO, [], 1)
    assert chat_model.calls == []
