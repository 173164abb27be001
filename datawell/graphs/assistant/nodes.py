"""Nodes of the assistant graph: plan, one step per planned query (run by the nl2ql graph),
answer. Budgets (steps, rows sent to the model per step, tokens per run) are enforced here,
and when one stops or trims a run the answer says so."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

from langgraph.graph.state import CompiledStateGraph
from langgraph.runtime import Runtime

from datawell.errors import ModelError, WebSearchError
from datawell.graphs import tokens
from datawell.graphs.assistant.agreement import agree_with_rows
from datawell.graphs.assistant.prompting import (
    render_background,
    render_history,
    render_result,
    stage_text,
    step_context,
)
from datawell.graphs.assistant.state import (
    AssistantContext,
    AssistantState,
    PlannedStep,
    PlanOutput,
    StepResult,
    Turn,
)
from datawell.graphs.events import AnswerDelta, AnswerReady, PlanReady, StepFinished, StepStarted, emit
from datawell.graphs.nl2ql.deps import QueryDeps
from datawell.graphs.nl2ql.nodes import uncovered
from datawell.graphs.nl2ql.state import QueryContext, QueryInput, QueryOutcome, QueryState
from datawell.graphs.prefix import stage_messages
from datawell.graphs.structured import ask_structured
from datawell.graphs.view import NO_LINKS, Described, helper_block
from datawell.tools.web import WebSearch

WEB_RULE = (
    "You may also search the web once: put the words to search for in web_search when the datasets "
    "cannot cover part of the question (for example recent public facts). Leave it empty otherwise."
)


@dataclass(frozen=True)
class Budgets:
    max_rows_per_step: int = 10
    max_tokens_per_run: int = 20000  # 0: no limit


@dataclass(frozen=True)
class AssistantDeps:
    query: QueryDeps
    budgets: Budgets = Budgets()
    web: WebSearch | None = None
    web_results: int = 5
    history_turns: int = 5  # earlier turns shown to the plan and answer stages


async def plan(state: AssistantState, runtime: Runtime[AssistantContext], deps: AssistantDeps) -> dict[str, Any]:
    context = runtime.context
    view = deps.query.view
    namespace = await view.describe(context.caller, context.namespace)
    # A question a user verified an answer to is planned as that answer's query, with no model
    # call (the query is still checked and run as the caller).
    verified = await view.verified_example(context.caller, context.namespace, state["question"])
    if verified is not None:
        step = PlannedStep(
            instruction=state["question"], kind="data", search="", query=verified.query.strip(), verified=True
        )
        return plan_update(namespace, None, [step], "A verified example answers the question.", "", 0)
    # --- issue 27: a question the catalog does not cover is refused before the plan (tools/coverage.py) ---
    if declined := await uncovered(deps.query, context, state["question"]):
        return plan_update(namespace, None, [], plan_summary([], declined), declined, 0)
    # --- end issue 27 ---
    examples = await view.examples_block(context.caller, context.namespace, state["question"])
    web = context.web_search and deps.web is not None
    messages = stage_messages(
        deps.query.prompts,
        "assistant_plan",
        namespace=str(context.namespace),
        dialect=deps.query.dialect,
        catalog=namespace.catalog,
        links=namespace.links,
        helper_prompt=helper_block(context.helper_prompt),
        web_search=f"\n{WEB_RULE}" if web else "",
        history=render_history(state.get("turns", []), deps.history_turns),
        background=render_background(context.caller_context),
        examples=examples,
        question=state["question"],
    )
    budget = deps.budgets.max_tokens_per_run
    if budget and (needed := tokens.prompt_tokens(messages)) > budget:
        refusal = (
            f"The question's prompt (about {needed:,} tokens) is larger than the run's token budget of {budget:,}."
        )
        return plan_update(namespace, examples, [], refusal, refusal, 0)
    columns = namespace.columns if deps.query.name_columns else []
    reply = await ask_structured(deps.query.models.for_stage("plan", context.choices), PlanOutput, messages, columns)
    output = reply.parsed
    if output is None:
        raise ModelError("the planning model did not return a plan", detail=reply.problem)
    steps = planned_steps(state["question"], output)
    if web and output.web_search.strip():
        words = output.web_search.strip()
        steps.append(
            PlannedStep(instruction=f"Search the web for: {words}", kind="web", search=words, query="", verified=False)
        )
    summary = plan_summary(steps, output.refusal)
    return plan_update(namespace, examples, steps, summary, output.refusal, reply.tokens)


def plan_update(
    namespace: Described,
    examples: str | None,
    steps: list[PlannedStep],
    summary: str,
    refusal: str,
    tokens: int,
) -> dict[str, Any]:
    """The plan announced and put in the state."""
    emit(PlanReady(text=summary, steps=[s["instruction"] for s in steps]))
    return {
        "catalog": namespace.catalog,
        "links": namespace.links,
        "columns": namespace.columns,
        "examples": examples,
        "summary": summary,
        "refusal": refusal.strip() if not steps else "",
        "plan": steps,
        "results": [],
        "notes": [],
        "tokens": tokens,
        "answer": "",
    }


def planned_steps(question: str, output: PlanOutput) -> list[PlannedStep]:
    """The plan's query is the one data step, asked as the question itself: a failed check
    or run sends the question and the failure to the query writer for a repair."""
    if not output.query.strip():
        return []
    return [PlannedStep(instruction=question, kind="data", search="", query=output.query.strip(), verified=False)]


def plan_summary(steps: list[PlannedStep], refusal: str) -> str:
    """The plan in a sentence, said by the service rather than written by the model."""
    if not steps:
        return f"The datasets cannot answer this: {refusal.strip()}" if refusal.strip() else "No query can answer this."
    kinds = {s["kind"] for s in steps}
    if kinds == {"data", "web"}:
        return "One query and a web search answer the question."
    return "A web search answers the question." if kinds == {"web"} else "One query answers the question."


async def steps(
    state: AssistantState,
    runtime: Runtime[AssistantContext],
    deps: AssistantDeps,
    nl2ql: CompiledStateGraph[QueryState, QueryContext, QueryInput, QueryState],
) -> dict[str, Any]:
    """The plan's steps in order (its query, then its web search); a spent token budget stops
    the rest, and the answer says so."""
    results: list[StepResult] = []
    spent = state.get("tokens", 0)
    budget = deps.budgets.max_tokens_per_run
    for index, planned in enumerate(state.get("plan", []), start=1):
        if budget and spent >= budget:
            break
        result, spent = await step(index, planned, spent, state, runtime, deps, nl2ql)
        results.append(result)
    return {"results": results, "tokens": spent}


async def step(
    index: int,
    planned: PlannedStep,
    spent: int,
    state: AssistantState,
    runtime: Runtime[AssistantContext],
    deps: AssistantDeps,
    nl2ql: CompiledStateGraph[QueryState, QueryContext, QueryInput, QueryState],
) -> tuple[StepResult, int]:
    emit(StepStarted(index=index, instruction=planned["instruction"]))
    written: tuple[str, list[dict[str, str]]] = ("", [])  # issue 47: the query as written, the rules' changes
    if planned["kind"] == "web":
        result = await web_step(index, planned, deps)
    else:
        budget = deps.budgets.max_tokens_per_run
        # The step's queries run as the run's caller in the run's namespace: the context is
        # passed on unchanged, whatever the caller context or the plan say.
        asked = QueryInput(
            question=planned["instruction"],
            context=step_context(state, planned["instruction"]),
            catalog=state["catalog"],
            links=state["links"],
            columns=state.get("columns", []),
            token_budget=max(budget - spent, 1) if budget else 0,
            proposed=planned["query"],
            verified=planned["query"] if planned["verified"] else "",
        )
        examples = state.get("examples")
        if examples is not None:  # the plan's few-shot text serves the step's repairs too
            asked["examples"] = examples
        final = await nl2ql.ainvoke(asked, context=runtime.context)
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
        written = (out.model_query, out.changes)
    emit(
        StepFinished(
            index=index,
            instruction=result["instruction"],
            query=result["query"],
            reasoning=result["reasoning"],
            rows=result["rows"],
            error=result["error"] or None,
            model_query=written[0],
            changes=written[1],
        )
    )
    return result, spent


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
    history = render_history(state.get("turns", []), deps.history_turns)
    messages = stage_messages(
        deps.query.prompts,
        "assistant_answer",
        namespace=str(context.namespace),
        dialect=deps.query.dialect,
        catalog=state.get("catalog", ""),
        links=state.get("links", NO_LINKS),
        helper_prompt=helper_block(context.helper_prompt),
        history=history,
        background=render_background(context.caller_context),
        question=state["question"],
        steps="\n\n".join(render_result(r, deps.budgets.max_rows_per_step) for r in results)
        or no_steps(state.get("refusal", "")),
        notes=("\nBudget notes:\n" + "\n".join(f"- {n}" for n in notes)) if notes else "",
    )
    # The answer's prompt is counted before the call, as the query writer's is: a run whose
    # budget cannot cover it stops here and says so.
    if budget and spent + tokens.prompt_tokens(messages) > budget:
        text = (
            f"I stopped before writing an answer: this run used its token budget of {budget} tokens. "
            "The results of the steps that ran are in the steps."
        )
        if notes:
            text += "\n\nNote: " + " ".join(notes)
        emit(AnswerReady(text=text))
        return {"answer": text, "notes": notes, "turns": [turn_of(state, text)]}
    model = deps.query.models.for_stage("answer", context.choices)
    parts: list[str] = []
    reported = 0
    # The model's pieces are held until the answer is checked (issue 50): none reaches the user first.
    async for chunk in model.astream(messages):
        piece = stage_text(chunk)
        if piece:
            parts.append(piece)
        if chunk.usage_metadata:
            reported += chunk.usage_metadata.get("total_tokens", 0)
    text = "".join(parts)
    if not text.strip():
        raise ModelError("the answering model returned an empty answer")
    used = reported or tokens.used(messages, None, reply_text=text)
    # --- issue 27: the answer's numbers agree with its rows (graphs/assistant/agreement.py) ---
    checked, extra, rewrite_tokens = await agree_with_rows(
        text, messages, model, results, state["question"], history, *(r["instruction"] for r in results)
    )
    notes.extend(extra)
    used += rewrite_tokens
    # --- end issue 27 ---
    # Streamed once checked: the model's own pieces when the check kept its answer, else the
    # checked answer whole.
    for piece in parts if checked == text else [checked]:
        emit(AnswerDelta(text=piece))
    text = checked
    if notes:
        # Said by the service, not left to the model, so a stopped run always says so; sent
        # as a delta too, so the deltas add up to the answer.
        note = "\n\nNote: " + " ".join(notes)
        emit(AnswerDelta(text=note))
        text += note
    emit(AnswerReady(text=text))
    return {"answer": text, "notes": notes, "tokens": spent + used, "turns": [turn_of(state, text)]}


def no_steps(refusal: str) -> str:
    return f"(no query ran; the planner said: {refusal})" if refusal else "(no query ran)"


def turn_of(state: AssistantState, text: str) -> Turn:
    steps = [f"{r['instruction']} -> {r['query'] or '(no query)'}" for r in state.get("results", [])]
    return Turn(question=state["question"], answer=text, steps=steps)
