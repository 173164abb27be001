"""The scripted oracle fills whatever structured output a graph asks for with the gold values."""

from __future__ import annotations

from typing import Literal

import pytest
from langchain_core.messages import HumanMessage, SystemMessage
from pydantic import BaseModel

from datawell.evals.oracle import REFUSAL_ANSWER, Gold, OracleChatModel, OracleError
from datawell.evals.suites import GoldStep, load_suite


class GeneratedQuery(BaseModel):
    reasoning: str
    query: str | None = None
    refusal: str | None = None


class Step(BaseModel):
    instruction: str
    reasoning: str = ""


class Plan(BaseModel):
    steps: list[Step]


class Success(BaseModel):
    sql: str
    explanation: str


class InvalidRequest(BaseModel):
    error_message: str


class Output(BaseModel):
    result: Success | InvalidRequest
    status: Literal["ok", "refused"]


GOLD = [
    Gold(question="How many orders?", query="SELECT COUNT(*) FROM orders", answer="There are 90 orders."),
    Gold(question="Delete all orders.", refuse=True),
    Gold(
        question="Fees and who paid most?",
        steps=[
            GoldStep(instruction="Total of all late fees", query="SELECT SUM(late_fee) FROM loans"),
            GoldStep(instruction="The member who paid most", query="SELECT member FROM loans LIMIT 1"),
        ],
        answer="81.50 euros; Grace Liu.",
    ),
]


def prompt(question: str, last: str = "") -> list:
    return [SystemMessage("You write queries."), HumanMessage(f"Question: {question}\n{last}")]


@pytest.fixture
def oracle() -> OracleChatModel:
    return OracleChatModel(answers=GOLD)


async def test_query_field_gets_the_gold_query(oracle: OracleChatModel) -> None:
    result = await oracle.with_structured_output(GeneratedQuery).ainvoke(prompt("How many orders?"))
    assert result == GeneratedQuery(reasoning=result.reasoning, query="SELECT COUNT(*) FROM orders", refusal=None)


async def test_refusal_fills_the_refusal_field(oracle: OracleChatModel) -> None:
    result = await oracle.with_structured_output(GeneratedQuery).ainvoke(prompt("Delete all orders."))
    assert result.query is None and result.refusal == REFUSAL_ANSWER


async def test_union_and_literal_pick_the_refusal_variant(oracle: OracleChatModel) -> None:
    ok = await oracle.with_structured_output(Output).ainvoke(prompt("How many orders?"))
    assert isinstance(ok.result, Success) and ok.result.sql == "SELECT COUNT(*) FROM orders" and ok.status == "ok"
    refused = await oracle.with_structured_output(Output).ainvoke(prompt("Delete all orders."))
    assert isinstance(refused.result, InvalidRequest) and refused.status == "refused"


async def test_plan_and_the_step_named_in_the_last_message(oracle: OracleChatModel) -> None:
    plan = await oracle.with_structured_output(Plan).ainvoke(prompt("Fees and who paid most?"))
    assert [s.instruction for s in plan.steps] == ["Total of all late fees", "The member who paid most"]
    second = await oracle.with_structured_output(GeneratedQuery).ainvoke(
        prompt("Fees and who paid most?", "Step 2: The member who paid most")
    )
    assert second.query == "SELECT member FROM loans LIMIT 1"


async def test_plain_text_is_the_gold_answer_and_unknown_questions_fail(oracle: OracleChatModel) -> None:
    assert (await oracle.ainvoke(prompt("Fees and who paid most?"))).content == "81.50 euros; Grace Liu."
    assert (await oracle.ainvoke(prompt("Delete all orders."))).content == REFUSAL_ANSWER
    with pytest.raises(OracleError, match="no suite question"):
        await oracle.ainvoke(prompt("Something else entirely?"))


def test_the_longest_matching_question_wins() -> None:
    oracle = OracleChatModel(
        answers=[Gold(question="orders?", query="A"), Gold(question="How many orders?", query="B")]
    )
    assert oracle.find(prompt("How many orders?")).query == "B"


def test_oracle_covers_every_bundled_question() -> None:
    from datawell.evals.oracle import oracle_for

    suite = load_suite("nl2ql")
    oracle = oracle_for(suite)
    for case in suite.cases:
        assert oracle.find(prompt(case.vars.question)).question == case.vars.question


class ChosenLink(BaseModel):
    id: str
    reason: str


class LinkSelection(BaseModel):
    selected: list[ChosenLink] = []


async def test_curator_selection_picks_the_candidates_that_are_gold_links() -> None:
    suite = load_suite("curator")
    from datawell.evals.oracle import oracle_for

    oracle = oracle_for(suite)
    candidates = (
        "Namespace: evals/retail\n\nCandidates:\n"
        "L1 [ExactMatch] retail/products.sku -> retail/orders.sku (hits 16, score 1.00)\n  evidence: all\n"
        "L2 [ExactMatch] retail/orders.order_id -> retail/products.price (hits 2, score 0.10)\n  evidence: few\n"
        "L3 [ExactMatch] retail/orders.customer_ref -> retail/customers.customer_code (hits 18, score 1.00)\n"
    )
    chosen = await oracle.with_structured_output(LinkSelection).ainvoke([HumanMessage(candidates)])
    assert sorted(c.id for c in chosen.selected) == ["L1", "L3"]


def test_the_question_asked_last_wins_over_an_example_shown_before_it() -> None:
    """Examples retrieved from other databases (issue 50) come before the question asked."""
    oracle = OracleChatModel(
        answers=[
            Gold(question="How many orders are there?", query="A"),
            Gold(question="Which doctor is busiest?", query="B"),
        ]
    )
    shown = prompt("Which doctor is busiest?")
    shown[1] = HumanMessage(f"Question: How many orders are there?\nQuery: A\n\n{shown[1].content}")
    assert oracle.find(shown).query == "B"
