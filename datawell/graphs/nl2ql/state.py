"""State of the nl2ql graph: a narrow input, a richer internal state, and what the model
returns. The state is plain data but for the prepared query (the graph keeps no checkpoint); the caller,
namespace and model choices arrive as the run's context."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NotRequired, TypedDict

from pydantic import BaseModel, Field

from datawell.llm.models import StageChoices
from datawell.storage.access import Caller, NamespaceRef
from datawell.tools.checker import CompiledQuery


@dataclass(frozen=True)
class QueryContext:
    """Who asks, where, with which models: the data access of every query is the caller's,
    read once when the run started."""

    caller: Caller
    namespace: NamespaceRef
    choices: StageChoices = field(default_factory=StageChoices)
    helper_prompt: str = ""


class QueryInput(TypedDict, total=False):
    question: str
    # Background for the question: for an assistant step, the user's question and what
    # earlier steps found.
    context: str
    # The catalog and joins as prompt text; the catalog node fills them when not given.
    catalog: str
    links: str
    # The `table.column` names the catalog shows (what a query may name).
    columns: list[str]
    # The catalog shows only the tables relevant to the question (schema pruning); a query
    # naming an unknown table or column widens it to the whole catalog.
    pruned: bool
    # The verified examples most like the question, as few-shot text ("" for none); looked up
    # by the first generate when not given.
    examples: str
    # Tokens this run may still spend; 0 means no limit.
    token_budget: int
    # A query the caller already has (an assistant plan that wrote SQL): it is checked and
    # run as the first attempt, with no model call; if refused, the model repairs it.
    proposed: str
    # The query of the verified example that answers the question exactly (found by `recall`,
    # or given with `proposed` by a caller that looked it up): a user vouched for its result,
    # so an empty one is not doubted.
    verified: str


class ResultRows(TypedDict):
    query: str
    rows: list[dict[str, Any]]
    truncated: bool
    # issue 47: the query as the model (or caller) wrote it, and the rules that made `query` of it
    model_query: NotRequired[str]
    changes: NotRequired[list[dict[str, str]]]


class QueryState(QueryInput, total=False):
    attempts: int
    draft: str  # the query of the latest attempt
    # The draft as `check` prepared it, which is what `run` executes. The nl2ql graph keeps
    # no checkpoint (`checkpointer=False`), so this never has to be plain data.
    prepared: CompiledQuery
    reasoning: str
    feedback: str  # why the latest attempt failed, for the next one
    blind_feedback: str  # the same without the failed query: asked again when a repair repeats it
    query: str  # the query that ran
    # issue 47: the latest attempt's query as written, and each rule's change of it
    # ({rule, before, after, reason}: tools/rewrite/change.Change)
    model_query: str
    changes: list[dict[str, str]]
    rows: list[dict[str, Any]]
    truncated: bool
    refusal: str  # the model's reason the datasets cannot answer
    error: str  # why the run gave up
    tokens: int
    # A result that ran but looked wrong (no rows, only NULLs, unordered "top" rows): it gets
    # one repair, and stands when the repair does not give a result.
    doubted: ResultRows
    # Names the latest failed attempt asked for that no dataset holds (tools/names.py): a
    # second attempt that asks for such names again is declined.
    missing: list[str]


@dataclass(frozen=True)
class QueryOutcome:
    """What an nl2ql run ended with: the query that ran and its rows, or why there are none."""

    query: str  # the query that ran, else the last one tried
    reasoning: str
    rows: list[dict[str, Any]]
    truncated: bool
    tokens: int
    refusal: str  # the model's reason the datasets cannot answer
    error: str  # why the run gave up
    model_query: str = ""  # the query as written, before the service's rules changed it
    changes: list[dict[str, str]] = field(default_factory=list)  # {rule, before, after, reason}

    @classmethod
    def of(cls, state: QueryState) -> QueryOutcome:
        return cls(
            query=state.get("query") or state.get("draft", ""),
            reasoning=state.get("reasoning", ""),
            rows=state.get("rows", []),
            truncated=state.get("truncated", False),
            tokens=state.get("tokens", 0),
            refusal=state.get("refusal", ""),
            error=state.get("error", ""),
            model_query=state.get("model_query", ""),
            changes=state.get("changes", []),
        )


class QueryDraft(BaseModel):
    """Answer the question with one query, or refuse when the datasets cannot answer it.

    No free-text reasoning before the query: the small model decodes about 25 tokens a
    second, and the sentence it wrote first cost seconds without making queries righter."""

    query: str = Field("", description="Exactly one SELECT statement; empty when refusing.")
    refusal: str = Field("", description="Why the datasets cannot answer the question; empty when giving a query.")
