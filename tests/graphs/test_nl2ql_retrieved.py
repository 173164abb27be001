"""nl2ql and examples retrieved from other databases (issue 50): off, the prompt is as before;
on, it shows that many examples, never one of the namespace's own database in evals."""

from __future__ import annotations

import dataclasses

from datawell.graphs.nl2ql.graph import build_graph
from datawell.graphs.nl2ql.state import QueryContext, QueryDraft
from datawell.graphs.view import NamespaceView
from datawell.llm.scripted import ScriptedChatModel
from datawell.runs import AskRequest, Runs, query_deps
from datawell.services import Services
from datawell.storage.access import Caller, NamespaceRef
from datawell.tools.retrieved_examples import bundled_corpus
from tests.graphs.conftest import Shop
from tests.graphs.fakes import FakeQueryTools, table

QUERY = "SELECT COUNT(*) FROM orders"
QUESTION = "How many orders are there in each month?"


async def first_prompt(services: Services, shop: Shop, chat_model: ScriptedChatModel, retrieved: int) -> str:
    chat_model.script.append(QueryDraft(query=QUERY))
    switched = dataclasses.replace(
        services, settings=services.settings.model_copy(update={"retrieved_examples": retrieved})
    )
    run = await Runs(switched).start_nl2ql(AskRequest(shop.user, shop.namespace, QUESTION))
    [event async for event in run.events()]
    prompt = chat_model.prompts()[-1]
    chat_model.calls.clear()
    return prompt


async def test_with_the_switch_at_0_the_prompt_is_the_one_without_retrieval(
    services: Services, shop: Shop, tools: FakeQueryTools, chat_model: ScriptedChatModel
) -> None:
    tools.rows[QUERY] = [{"count": 3}]
    graph_without = build_graph(query_deps(services))
    chat_model.script.append(QueryDraft(query=QUERY))
    await graph_without.ainvoke(
        {"question": QUESTION}, context=QueryContext(caller=shop.caller, namespace=shop.namespace)
    )
    before = chat_model.prompts()[-1]
    chat_model.calls.clear()
    # The retriever present but asked for none: nothing of it reaches the prompt.
    deps = query_deps(services)
    view = dataclasses.replace(deps.view, retrieved=bundled_corpus(), retrieved_count=0)
    chat_model.script.append(QueryDraft(query=QUERY))
    await build_graph(dataclasses.replace(deps, view=view)).ainvoke(
        {"question": QUESTION}, context=QueryContext(caller=shop.caller, namespace=shop.namespace)
    )

    assert chat_model.prompts()[-1] == before == await first_prompt(services, shop, chat_model, 0)
    assert "Examples from other databases" not in before


async def test_with_the_switch_at_3_the_prompt_shows_3_examples(
    services: Services, shop: Shop, tools: FakeQueryTools, chat_model: ScriptedChatModel
) -> None:
    tools.rows[QUERY] = [{"count": 3}]

    prompt = await first_prompt(services, shop, chat_model, 3)

    block = prompt.split("Examples from other databases", 1)[1].split(f"Question: {QUESTION}", 1)[0]
    assert block.count("\nTables: ") == 3 and block.count("\nQuestion: ") == 3 and block.count("\nQuery: ") == 3
    assert prompt.index("Examples from other databases") < prompt.index(f"Question: {QUESTION}")


async def test_in_evals_a_namespace_never_sees_its_own_database_s_pairs(tools: FakeQueryTools) -> None:
    academic = NamespaceRef("ns-academic", "evals", "academic")
    tools.tables += [
        table(academic, "author", {"aid": "integer", "name": "text"}),
        table(academic, "writes", {"aid": "integer", "pid": "integer"}),
    ]
    corpus = bundled_corpus()
    question = next(e.question for e in corpus.entries if e.database == "academic")
    evals = NamespaceView(tools, retrieved=corpus, retrieved_count=4, leave_own_out=True)
    service = dataclasses.replace(evals, leave_own_out=False)

    caller = Caller("user-evals", "evals", (academic,))

    shown = await evals.retrieved_block(caller, academic, question)
    unguarded = await service.retrieved_block(caller, academic, question)

    academic_queries = {e.query for e in corpus.entries if e.database == "academic"}
    assert shown.count("\nQuery: ") == 4 and not any(q in shown for q in academic_queries)
    assert any(q in unguarded for q in academic_queries)  # its own question is the closest: the guard does the work
