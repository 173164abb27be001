"""State of the assistant graph. The state is plain data because it is checkpointed: a
conversation's turns accumulate in it across runs (thread id = conversation id). The caller,
namespace, model choices, helper prompt and caller context are the run's context, so they
never persist and apply only to the turn they were sent with."""

from __future__ import annotations

import operator
from dataclasses import dataclass
from typing import Annotated, Any, Literal, TypedDict

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from datawell.graphs.nl2ql.state import QueryContext


class _Wire(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")


class CallerTurn(_Wire):
    """SPEC's turn is `{text, agentName}`; the DataLinks SDK's `CallerContextTurn` adds who
    spoke, `role`, and may leave out `agentName`: both are taken."""

    text: str
    agent_name: str = ""
    role: Literal["user", "agent"] = Field(
        "agent", description="Who spoke: `user` or `agent` (the default); `agentName` is shown in its place"
    )


class CallerFact(_Wire):
    label: str
    value: str
    source: str = ""


class CallerContext(_Wire):
    """Background a caller established elsewhere; rendered into prompts, never widens access."""

    turns: list[CallerTurn] = Field(default_factory=list)
    facts: list[CallerFact] = Field(default_factory=list)


@dataclass(frozen=True)
class AssistantContext(QueryContext):
    caller_context: CallerContext | None = None
    web_search: bool = False  # a provider is configured and the request did not turn it off


class PlannedStep(TypedDict):
    instruction: str
    kind: Literal["data", "web"]
    search: str  # the web search's words (web steps only)
    query: str  # the query the plan wrote for this step, run before asking the query writer
    verified: bool  # the query is a verified example's, for exactly this question


class StepResult(TypedDict):
    index: int  # 1-based
    instruction: str
    kind: Literal["data", "web"]
    query: str
    reasoning: str
    rows: list[dict[str, Any]]
    truncated: bool
    error: str


class Turn(TypedDict):
    """One question and answer of the conversation, kept for the following turns."""

    question: str
    answer: str
    steps: list[str]  # instruction and query of each step, as text


class AssistantInput(TypedDict):
    question: str


class AssistantState(TypedDict, total=False):
    question: str
    catalog: str
    links: str
    columns: list[str]  # the `table.column` names the catalog shows
    examples: str | None  # the plan's few-shot text of verified examples; None: not looked up
    summary: str  # the plan in a sentence, said by the service
    refusal: str  # why the plan wrote no query, when it wrote none
    plan: list[PlannedStep]
    results: list[StepResult]
    notes: list[str]  # budgets that stopped or trimmed this turn; the answer says so
    tokens: int
    answer: str
    turns: Annotated[list[Turn], operator.add]


class PlanOutput(BaseModel):
    """The query that answers the question.

    The plan writes the query itself, so a question is one model call for plan and query
    together. One query a question: a part that needs another part's rows is a subquery or
    a WITH clause of the same query. There is no summary, reasoning or list of steps before
    the query: the small model decodes about 25 tokens a second, and given a list of steps
    it filled it with sentences about its own query (the demo question: six steps, five of
    them restating the first, 195 s)."""

    query: str = Field("", description="One SELECT statement that answers the question.")
    refusal: str = Field("", description="Why the datasets cannot answer the question; empty when giving a query.")
    web_search: str = Field("", description="Words to search the web for, when allowed and needed; else empty.")
