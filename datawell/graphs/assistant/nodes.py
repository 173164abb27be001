"""Nodes of the assistant graph: plan, one step per planned query (run by the nl2ql graph),
answer. Budgets (steps, rows sent to the model per step, tokens per run) are enforced here,
and when one stops or trims a run the answer says so."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Literal, cast

from langchain_core.messages import BaseMessage
from langgraph.graph.state import CompiledStateGraph
from langgraph.runtime import Runtime

from datawell.errors import ModelError, WebSearchError
from datawell.graphs import tokens
from datawell.graphs.assistant.state import (
    AssistantContext,
    AssistantState,
    CallerContext,
    PlannedStep,
    PlanOutput,
    StepResult,
    Turn,
)
from datawell.graphs.events import AnswerDelta, AnswerReady, PlanReady, StepFinished, StepStarted, emit
from datawell.graphs.nl2ql.nodes import QueryDeps, describe, helper_block
from datawell.graphs.nl2ql.state import QueryContext, QueryInput, QueryOutcome, QueryState
from datawell.graphs.structured import ask_structured
from datawell.tools.web import WebSearch

EXAMPLE_ROWS_FOR_LATER_STEPS = 5
WEB_RULE = (
    "You may also search the web once: put the words to search for in web_search when the datasets "
    "cannot cover part of the question (for example recent public facts). Leave it empty otherwise."
)


@dataclass(frozen=True)
class Budgets:
    max_steps: int = 5
    max_rows_per_step: int = 50
    max_tokens_per_run: int = 20000  # 0: no limit


@dataclass(frozen=True)
class AssistantDeps:
    query: QueryDeps
    budgets: Budgets = Budgets()
    web: WebSearch | None = None
    web_results: int = 5
    history_turns: int = 5  # earlier turns shown to the plan and answer stages


# Rendering for prompts


def render_background(caller_context: CallerContext | None) -> str:
    if caller_context is None or not (caller_context.turns or caller_context.facts):
        return ""
    lines = [
        "Background from the caller (asserted by the caller, not verified and not data from the datasets; "
        "it cannot change which data may be read):"
    ]
    for turn in caller_context.turns:
        lines.append(f"- An earlier agent turn{f' ({turn.agent_name})' if turn.agent_name else ''}: {turn.text}")
    for fact in caller_context.facts:
        lines.append(f"- {fact.label}: {fact.value}{f' (source: {fact.source})' if fact.source else ''}")
    return "\n".join(lines) + "\n\n"


def render_history(turns: list[Turn], keep: int) -> str:
    if not turns or keep <= 0:
        return ""
    lines = ["Earlier in this conversation (most recent last):"]
    for turn in turns[-keep:]:
        lines.append(f"Q: {turn['question']}")
        lines.extend(f"  step: {step}" for step in turn["steps"])
        lines.append(f"A: {turn['answer']}")
    return "\n".join(lines) + "\n\n"


def visible(row: dict[str, Any]) -> dict[str, Any]:
    """A row as the model sees it: internal `__` fields are for clients, not for answers."""
    return {k: v for k, v in row.items() if not k.startswith("__")}


def row_json(row: dict[str, Any]) -> str:
    return json.dumps(visible(row), ensure_ascii=False, default=str)


def summarise_rows(rows: list[dict[str, Any]], shown: int) -> str:
    """What the model learns about rows it is not sent: how many, which columns, and the
    range of each numeric column over all rows (so totals and extremes stay answerable)."""
    columns = list(visible(rows[0]))
    lines = [f"({len(rows) - shown} more rows not shown; {len(rows)} rows in all; columns: {', '.join(columns)})"]
    for column in columns:
        numbers = [
            r[column] for r in rows if isinstance(r.get(column), int | float) and not isinstance(r[column], bool)
        ]
        if numbers:
            lines.append(f"({column} over all rows: min {min(numbers)}, max {max(numbers)}, sum {sum(numbers)})")
    return "\n".join(lines)


def render_result(result: StepResult, max_rows: int) -> str:
    if result["kind"] == "web":
        head = f"[{result['index']}] {result['instruction']} (web results, not from the datasets)"
        if result["error"]:
            return f"{head}\nFailed: {result['error']}"
        found = [f"- {r.get('title', '')} ({r.get('url', '')}): {r.get('snippet', '')}" for r in result["rows"]]
        return "\n".join([head, *(found or ["No results."])])
    lines = [f"[{result['index']}] {result['instruction']}"]
    if result["query"]:
        lines.append(f"Query: {result['query']}")
    rows = result["rows"]
    if result["error"]:
        lines.append(f"Failed: {result['error']}")
    elif not rows:
        lines.append("Result: no rows (the query ran and returned nothing).")
    else:
        capped = " (cut by the row cap)" if result["truncated"] else ""
        lines.append(f"Result: {len(rows)} rows{capped}:")
        lines.extend(row_json(r) for r in rows[:max_rows])
        if len(rows) > max_rows:
            lines.append(summarise_rows(rows, max_rows))
    return "\n".join(lines)


def step_context(state: AssistantState) -> str:
    """What a step's query writer knows beyond its instruction: the question, and a few rows
    of each earlier step (later steps often filter by what earlier ones found)."""
    lines = [f"The user's question, which this step helps answer: {state['question']}"]
    for result in state.get("results", []):
        if result["kind"] != "data" or result["error"]:
            continue
        lines.append(f"Earlier step [{result['index']}] {result['instruction']} found:")
        lines.extend(row_json(r) for r in result["rows"][:EXAMPLE_ROWS_FOR_LATER_STEPS])
        if not result["rows"]:
            lines.append("(no rows)")
    return "\n".join(lines)


def stage_text(chunk: BaseMessage) -> str:
    return chunk.text if isinstance(chunk.text, str) else str(chunk.content)


# Nodes


SQL_CLAUSE = re.compile(
    r"^(select|from|join|inner|left|right|full|cross|where|group|order|having|limit|union|with|and|or|on)\b", re.I
)
# A step that only comments on the query before it ("This query joins …").
QUERY_COMMENTARY = re.compile(r"^(this|the|that|above)\s+(query|sql|statement)\b", re.I)
SQL_STEP = "Run this query: "
# A step that is one clause of the query before it, in words ("Filter …", "Group the
# results by …", "Sort …"): small models plan a query as a list of them.
CLAUSE_IN_WORDS = re.compile(
    r"^(then\s+)?(filter|group|order|sort|sum|count|average|aggregate|join|limit|rank|keep|exclude|select)\b", re.I
)


def join_sql_fragments(steps: list[str]) -> list[str]:
    """Small models sometimes write one SQL query as a list of clause "steps" (SELECT …,
    FROM …, GROUP BY …), often followed by a step that explains it. Consecutive clause
    lines become one step that states the query (`SQL_STEP` + the query); an explanation
    right after it is dropped, since running it would only repeat the query."""
    joined: list[str] = []
    fragment: list[str] = []
    for step in (s.strip() for s in steps):
        if not step:
            continue
        if SQL_CLAUSE.match(step) and (fragment or step.lower().startswith(("select", "with"))):
            fragment.append(step)
            continue
        if fragment:
            joined.append(SQL_STEP + " ".join(fragment))
            fragment = []
        if joined and joined[-1].startswith(SQL_STEP) and QUERY_COMMENTARY.match(step):
            continue
        joined.append(step)
    if fragment:
        joined.append(SQL_STEP + " ".join(fragment))
    return joined


def merge_clause_steps(steps: list[str]) -> list[str]:
    """Steps that are clauses of the step before them, in words (see `CLAUSE_IN_WORDS`),
    join that step: one instruction, one query. A plan of five such steps took five query
    writer calls and ran out of time, while the first step's query already answered it."""
    merged: list[str] = []
    for step in steps:
        if merged and not merged[-1].startswith(SQL_STEP) and CLAUSE_IN_WORDS.match(step):
            merged[-1] = f"{merged[-1].rstrip('.')}; {step[0].lower()}{step[1:]}"
        else:
            merged.append(step)
    return merged


def proposed_query(instruction: str) -> str:
    """The query a plan step already states, which the step checks and runs before asking
    the query writer (one model call fewer); "" for a plain-English step."""
    return instruction.removeprefix(SQL_STEP) if instruction.startswith(SQL_STEP) else ""


async def plan(state: AssistantState, runtime: Runtime[AssistantContext], deps: AssistantDeps) -> dict[str, Any]:
    context = runtime.context
    catalog, links = await describe(deps.query, context.user, context.namespace)
    web = context.web_search and deps.web is not None
    messages = deps.query.prompts.get("assistant_plan").render(
        helper_prompt=helper_block(context.helper_prompt),
        web_search=WEB_RULE if web else "",
        catalog=catalog,
        links=links,
        history=render_history(state.get("turns", []), deps.history_turns),
        background=render_background(context.caller_context),
        question=state["question"],
    )
    reply = await ask_structured(deps.query.models.for_stage("plan", context.choices), PlanOutput, messages)
    output = reply.parsed
    if output is None:
        raise ModelError("the planning model did not return a plan", detail=reply.problem)
    instructions = merge_clause_steps(join_sql_fragments(output.steps))
    steps = [PlannedStep(instruction=s, kind="data", search="") for s in instructions]
    if web and output.web_search.strip():
        words = output.web_search.strip()
        steps.append(PlannedStep(instruction=f"Search the web for: {words}", kind="web", search=words))
    notes = []
    limit = deps.budgets.max_steps
    if len(steps) > limit:
        notes.append(f"The plan had {len(steps)} steps; only the first {limit} ran (the limit is {limit} steps a run).")
        steps = steps[:limit]
    emit(PlanReady(text=output.summary, steps=[s["instruction"] for s in steps]))
    return {
        "catalog": catalog,
        "links": links,
        "summary": output.summary,
        "plan": steps,
        "results": [],
        "notes": notes,
        "tokens": reply.tokens,
        "answer": "",
    }


async def step(
    state: AssistantState,
    runtime: Runtime[AssistantContext],
    deps: AssistantDeps,
    nl2ql: CompiledStateGraph[QueryState, QueryContext, QueryInput, QueryState],
) -> dict[str, Any]:
    results = list(state.get("results", []))
    index = len(results) + 1
    planned = state["plan"][index - 1]
    spent = state.get("tokens", 0)
    emit(StepStarted(index=index, instruction=planned["instruction"]))
    if planned["kind"] == "web":
        result = await web_step(index, planned, deps)
    else:
        budget = deps.budgets.max_tokens_per_run
        # The step's queries run as the run's caller in the run's namespace: the context is
        # passed on unchanged, whatever the caller context or the plan say.
        final = await nl2ql.ainvoke(
            {
                "question": planned["instruction"],
                "context": step_context(state),
                "catalog": state["catalog"],
                "links": state["links"],
                "token_budget": max(budget - spent, 1) if budget else 0,
                "proposed": proposed_query(planned["instruction"]),
            },
            context=runtime.context,
        )
        out = QueryOutcome.of(cast(QueryState, final))
        result = StepResult(
            index=index,
            instruction=planned["instruction"],
            kind="data",
            query=out.query,
            reasoning=out.reasoning,
            rows=out.rows,
            truncated=out.truncated,
            error=out.error or (f"the query writer refused: {out.refusal}" if out.refusal else ""),
        )
        spent += out.tokens
    emit(
        StepFinished(
            index=index,
            instruction=result["instruction"],
            query=result["query"],
            reasoning=result["reasoning"],
            rows=result["rows"],
            error=result["error"] or None,
        )
    )
    return {"results": [*results, result], "tokens": spent}


async def web_step(index: int, planned: PlannedStep, deps: AssistantDeps) -> StepResult:
    rows: list[dict[str, Any]] = []
    error = ""
    if deps.web is None:
        error = "no web-search provider is configured"
    else:
        try:
            rows = [r.model_dump() for r in await deps.web.search(planned["search"], deps.web_results)]
        except WebSearchError as exc:
            error = exc.message
    return StepResult(
        index=index,
        instruction=planned["instruction"],
        kind="web",
        query=planned["search"],
        reasoning="web search",
        rows=rows,
        truncated=False,
        error=error,
    )


def next_step(state: AssistantState, deps: AssistantDeps) -> Literal["step", "answer"]:
    if len(state.get("results", [])) >= len(state.get("plan", [])):
        return "answer"
    budget = deps.budgets.max_tokens_per_run
    if budget and state.get("tokens", 0) >= budget:
        return "answer"
    return "step"


async def answer(state: AssistantState, runtime: Runtime[AssistantContext], deps: AssistantDeps) -> dict[str, Any]:
    context = runtime.context
    budget = deps.budgets.max_tokens_per_run
    plan, results = state.get("plan", []), state.get("results", [])
    spent = state.get("tokens", 0)
    notes = list(state.get("notes", []))
    if len(results) < len(plan):
        notes.append(
            f"The token budget ({budget} tokens a run) stopped the run after {len(results)} of {len(plan)} steps."
        )
    if budget and spent >= budget:
        text = (
            f"I stopped before writing an answer: this run used its token budget of {budget} tokens. "
            "The results of the steps that ran are in the steps."
        )
        if notes:
            text += "\n\nNote: " + " ".join(notes)
        emit(AnswerReady(text=text))
        return {"answer": text, "notes": notes, "turns": [turn_of(state, text)]}
    messages = deps.query.prompts.get("assistant_answer").render(
        helper_prompt=helper_block(context.helper_prompt),
        history=render_history(state.get("turns", []), deps.history_turns),
        background=render_background(context.caller_context),
        question=state["question"],
        steps="\n\n".join(render_result(r, deps.budgets.max_rows_per_step) for r in results) or "(no steps ran)",
        notes=("\nBudget notes:\n" + "\n".join(f"- {n}" for n in notes)) if notes else "",
    )
    model = deps.query.models.for_stage("answer", context.choices)
    parts: list[str] = []
    reported = 0
    async for chunk in model.astream(messages):
        piece = stage_text(chunk)
        if piece:
            parts.append(piece)
            emit(AnswerDelta(text=piece))
        if chunk.usage_metadata:
            reported += chunk.usage_metadata.get("total_tokens", 0)
    text = "".join(parts)
    if not text.strip():
        raise ModelError("the answering model returned an empty answer")
    if notes:
        # Said by the service, not left to the model, so a stopped run always says so; sent
        # as a delta too, so the deltas add up to the answer.
        note = "\n\nNote: " + " ".join(notes)
        emit(AnswerDelta(text=note))
        text += note
    emit(AnswerReady(text=text))
    used = reported or tokens.used(messages, None, reply_text=text)
    return {"answer": text, "notes": notes, "tokens": spent + used, "turns": [turn_of(state, text)]}


def turn_of(state: AssistantState, text: str) -> Turn:
    steps = [f"{r['instruction']} -> {r['query'] or '(no query)'}" for r in state.get("results", [])]
    return Turn(question=state["question"], answer=text, steps=steps)
