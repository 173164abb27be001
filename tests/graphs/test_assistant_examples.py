"""The assistant and verified examples: an exact match skips the plan call; the most similar
examples are shown to the plan and query stages as few-shot text."""

from __future__ import annotations

from datawell.graphs.assistant.state import PlanOutput
from datawell.graphs.events import GraphEvent, PlanReady, StepFinished
from datawell.graphs.nl2ql.state import QueryDraft
from datawell.llm.scripted import ScriptedChatModel
from datawell.runs import AskRequest, Runs
from datawell.services import Services
from tests.graphs.conftest import Shop, verify
from tests.graphs.fakes import FakeQueryTools

OSLO = "SELECT name FROM customers WHERE city = 'Oslo'"
BERGEN = "SELECT name FROM customers WHERE city = 'Bergen'"
AMOUNTS = "SELECT SUM(amount) AS total FROM orders"


async def ask(services: Services, request: AskRequest) -> list[GraphEvent]:
    run = await Runs(services).start_assistant(request)
    return [event async for event in run.events()]


async def test_a_verified_question_is_answered_with_one_model_call(
    services: Services, shop: Shop, tools: FakeQueryTools, chat_model: ScriptedChatModel
) -> None:
    await verify(services, shop, "Who lives in Oslo?", OSLO)
    chat_model.script.append("Nobody lives in Oslo.")  # the answer: the only model call

    events = await ask(services, AskRequest(shop.user, shop.namespace, "who lives in oslo"))

    assert len(chat_model.calls) == 1
    plan = next(e for e in events if isinstance(e, PlanReady))
    assert plan.text == "A verified example answers the question."
    step = next(e for e in events if isinstance(e, StepFinished))
    # The verified query's empty result stands: no repair is asked for.
    assert (step.query, step.rows, step.reasoning) == (OSLO, [], "a verified example answers this question")


async def test_similar_examples_reach_the_plan_and_the_query_writer(
    services: Services, shop: Shop, tools: FakeQueryTools, chat_model: ScriptedChatModel
) -> None:
    await verify(services, shop, "Who lives in Oslo?", OSLO)
    await verify(services, shop, "What is the total of all orders?", AMOUNTS)
    await verify(services, shop, "Who lives in Tromso?", "SELECT name FROM customers WHERE town = 'Tromso'")
    bad = "SELECT name FROM customers WHERE town = 'Bergen'"
    chat_model.script += [PlanOutput(query=bad), QueryDraft(query=BERGEN), "Ole lives in Bergen."]
    tools.rows[BERGEN] = [{"name": "Ole"}]

    await ask(services, AskRequest(shop.user, shop.namespace, "Who lives in Bergen?"))

    plan_prompt, repair_prompt = chat_model.prompts()[:2]
    for prompt in (plan_prompt, repair_prompt):
        shots = prompt.split("Verified examples of this namespace:\n", 1)[1].split(
            "\n\nQuestion: Who lives in Bergen?"
        )[0]
        # The most similar first; an example whose query no longer checks is never shown.
        assert shots == (
            f"Question: Who lives in Oslo?\nQuery: {OSLO}\n\nQuestion: What is the total of all orders?\nQuery: {AMOUNTS}"
        )


async def test_without_examples_the_prompts_have_no_examples_block(
    services: Services, shop: Shop, tools: FakeQueryTools, chat_model: ScriptedChatModel
) -> None:
    chat_model.script += [PlanOutput(query=OSLO), "Ann."]
    tools.rows[OSLO] = [{"name": "Ann"}]

    await ask(services, AskRequest(shop.user, shop.namespace, "Who lives in Oslo?"))

    assert "Verified examples" not in chat_model.prompts()[0]
