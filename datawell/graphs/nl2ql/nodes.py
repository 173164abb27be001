"""Nodes of the nl2ql graph. Each is an async function of the state, the run's context and
the graph's dependencies, returning a partial state; routers return the next node's name."""

from __future__ import annotations

import asyncio
from typing import Any, Literal, cast

from langchain_core.messages import BaseMessage
from langgraph.graph import END
from langgraph.runtime import Runtime

from datawell.errors import QueryError
from datawell.graphs.events import QueryGenerated, RowsReady, emit
from datawell.graphs.nl2ql.deps import QueryDeps
from datawell.graphs.nl2ql.feedback import blind_feedback, doubt, failure_feedback
from datawell.graphs.nl2ql.mending import data_change, fitted, in_words, mended, unknown_names
from datawell.graphs.nl2ql.state import QueryContext, QueryDraft, QueryState, ResultRows
from datawell.graphs.nl2ql.voting import run_candidates, sampling, vote
from datawell.graphs.prefix import stage_messages
from datawell.graphs.structured import ask_structured
from datawell.graphs.tokens import prompt_tokens
from datawell.graphs.view import NO_LINKS, helper_block
from datawell.tools.checker.bounds import bound
from datawell.tools.coverage import coverage, held, nothing_like, subject
from datawell.tools.coverage import refusal as coverage_refusal
from datawell.tools.grammar import reply_grammar
from datawell.tools.literals import names_left_out, where_stored
from datawell.tools.names import NameTriage
from datawell.tools.names import refusal as names_refusal
from datawell.tools.ql import QueryResult
from datawell.tools.rewrite.drop_invented_filters import unsaid_filters

UNKNOWN_NAMES = {"unknown_column", "unknown_table"}  # the checker's codes for names not in the catalog
NOT_A_SELECT = "not_a_select"  # the checker's code for any statement but a query
DONE = cast(Literal["__end__"], END)


async def catalog(state: QueryState, runtime: Runtime[QueryContext], deps: QueryDeps) -> dict[str, Any]:
    if state.get("catalog"):
        return {}
    described = await deps.view.describe(runtime.context.caller, runtime.context.namespace, state["question"])
    return described.state()


async def recall(state: QueryState, runtime: Runtime[QueryContext], deps: QueryDeps) -> dict[str, Any]:
    """A question a user verified an answer to runs that answer's query, with no model call
    (it becomes the proposed query; if it is refused after all, the model repairs it)."""
    if state.get("proposed", "").strip():
        return {}
    example = await deps.view.verified_example(runtime.context.caller, runtime.context.namespace, state["question"])
    if example is None:
        return {}
    return {
        "proposed": example.query,
        "verified": example.query.strip(),
        "reasoning": f"the verified example {example.id} answers this question",
    }


async def generate(state: QueryState, runtime: Runtime[QueryContext], deps: QueryDeps) -> dict[str, Any]:
    spent = state.get("tokens", 0)
    budget = state.get("token_budget", 0)
    attempts = state.get("attempts", 0)
    if budget and spent >= budget:
        return settle(state, {"error": f"the token budget ran out after {attempts} attempt(s) to write the query"})
    feedback = state.get("feedback", "")
    # --- issue 27: a question the catalog does not cover is refused before any query (tools/coverage.py) ---
    if not attempts and not feedback and (declined := await uncovered(deps, runtime.context, state["question"])):
        return {"refusal": declined}
    # --- end issue 27 ---
    # Looked up once a run (the assistant passes its plan's): repairs show the same examples.
    examples = state.get("examples")
    if examples is None:
        examples = await deps.view.examples_block(runtime.context.caller, runtime.context.namespace, state["question"])
        examples += await deps.view.retrieved_block(
            runtime.context.caller, runtime.context.namespace, state["question"]
        )

    def prompt(told: str) -> list[BaseMessage]:
        return stage_messages(
            deps.prompts,
            "nl2ql_generate",
            namespace=str(runtime.context.namespace),
            dialect=deps.dialect,
            catalog=state.get("catalog", ""),
            links=state.get("links", NO_LINKS),
            helper_prompt=helper_block(runtime.context.helper_prompt),
            context=f"{state['context'].strip()}\n\n" if state.get("context", "").strip() else "",
            examples=examples,
            question=state["question"],
            feedback=f"\n{told}" if told else "",
        )

    messages = prompt(feedback)
    if budget and spent + (needed := prompt_tokens(messages)) > budget:
        return settle(
            state,
            {
                "error": f"the prompt (about {needed:,} tokens) would pass the run's token budget ({budget - spent:,} left)"
            },
        )
    columns = state.get("columns", []) if deps.name_columns else []
    # issue 50: the names the catalog shows, as a grammar the embedded model decodes under (or its repairs only)
    constrained = deps.query_grammar or (deps.query_grammar_repairs and bool(feedback))
    grammar = reply_grammar(state.get("columns", []), columns) if constrained else ""
    model = deps.models.for_stage("query", runtime.context.choices)
    # --- issue 27: k query candidates at once, run, and voted on by their results (nl2ql/voting.py) ---
    if deps.candidates > 1 and not attempts and not feedback:
        sampled = sampling(model, deps.candidate_temperature)
        replies = await asyncio.gather(
            ask_structured(model, QueryDraft, messages, columns, grammar),
            *(ask_structured(sampled, QueryDraft, messages, columns, grammar) for _ in range(deps.candidates - 1)),
        )
        voted = await vote_on_candidates(deps, runtime.context, state["question"], [r.parsed for r in replies])
        spent += sum(r.tokens for r in replies)
        if voted:
            return voted | {"attempts": 1, "tokens": spent, "examples": examples}
        reply = replies[0]  # no candidate ran: the first is repaired as one draft would be
    else:
        reply = await ask_structured(model, QueryDraft, messages, columns, grammar)
        spent += reply.tokens
    # --- end issue 27 ---
    # --- issue 27: a repair that sends the refused query back is asked again without it ---
    # (within the run's token budget, as every ask is)
    if (blind := state.get("blind_feedback")) and _same_query(reply.parsed, state.get("draft", "")):
        messages = prompt(blind)
        if not budget or spent + prompt_tokens(messages) <= budget:
            reply = await ask_structured(model, QueryDraft, messages, columns, grammar)
            spent += reply.tokens
    # --- end issue 27 ---
    attempts += 1
    update: dict[str, Any] = {"attempts": attempts, "tokens": spent, "examples": examples}
    draft = reply.parsed
    if draft is None or not (draft.query.strip() or draft.refusal.strip()):
        update["feedback"] = "Your previous reply did not follow the required format: give a query or a refusal."
        update["draft"] = update["blind_feedback"] = ""
        return settle(state, update | _give_up_if_spent(attempts, deps, update["feedback"]))
    if not draft.query.strip():
        return settle(state, update | {"refusal": draft.refusal.strip()})
    return update | {
        "draft": draft.query.strip(),
        "reasoning": "written by the query model",
        "feedback": "",
        "blind_feedback": "",
    }


def _same_query(draft: QueryDraft | None, refused: str) -> bool:
    """Whether a reply's query is the refused one again (spaces and a final semicolon aside)."""

    def plain(query: str) -> str:
        return " ".join(query.split()).rstrip(";").strip()

    return draft is not None and bool(refused.strip()) and plain(draft.query) == plain(refused)


async def vote_on_candidates(
    deps: QueryDeps, context: QueryContext, question: str, drafts: list[QueryDraft | None]
) -> dict[str, Any]:
    """The voted result of the candidates that ran, announced as the run's query; {} when
    none ran."""
    queries = [d.query.strip() for d in drafts if d is not None and d.query.strip()]

    changed: dict[str, list[dict[str, str]]] = {}  # each candidate's changes: the winner's are kept

    async def run_one(query: str) -> QueryResult:
        bound(query, deps.caps)  # issue 51: before any rule parses it
        written = query
        query, changes = await fitted(deps, context, question, query)
        changed[written] = [c.as_dict() for c in changes]
        prepared = await deps.tools.prepare(context.caller, context.namespace, query)  # as the check node does
        return await deps.tools.run(context.caller, context.namespace, prepared)

    ran = await run_candidates(queries, run_one)
    if not ran:
        return {}
    winner, agreeing = vote(ran)
    written = queries[winner.rank]
    found = ResultRows(
        query=winner.result.query,
        rows=winner.result.rows,
        truncated=winner.result.truncated,
        model_query=written,
        changes=changed.get(written, []),
    )
    reasoning = f"written by the query model; {agreeing} of {len(drafts)} candidates agree on this result"
    return finish(found, reasoning, 1) | {"reasoning": reasoning, "draft": winner.result.query}


async def uncovered(deps: QueryDeps, context: QueryContext, question: str) -> str:
    """The refusal of a question the namespace's catalog cannot answer, else "": its subject
    is no word the catalog holds, or (refusal by coverage on) too few of its words are covered."""
    asks_for = subject(question) if deps.refuse_unheld_subject else []
    if not asks_for and deps.coverage is None:
        return ""
    catalog = await deps.tools.catalog(context.caller, context.namespace)
    if asks_for and not held(asks_for, catalog):
        return nothing_like(" ".join(asks_for), catalog)
    if deps.coverage is None:
        return ""
    found = await coverage(question, catalog, deps.coverage)
    return "" if found.covered else coverage_refusal(found, catalog)


def _give_up_if_spent(attempts: int, deps: QueryDeps, feedback: str) -> dict[str, Any]:
    if attempts < deps.max_attempts:
        return {}
    return {"error": f"no valid query after {attempts} attempt(s); the last problem: {feedback}"}


def settle(state: QueryState, update: dict[str, Any]) -> dict[str, Any]:
    """After a result was doubted (see `doubt`), the one repair it gets either gives a
    result or the doubted result stands: a repair never loses rows a query already found."""
    doubted = state.get("doubted")
    if doubted is None or not (update.get("error") or update.get("refusal") or update.get("feedback")):
        return update
    return finish(doubted, state.get("reasoning", ""), state.get("attempts", 1)) | {
        k: v for k, v in update.items() if k in ("attempts", "tokens")
    }


def finish(result: ResultRows, reasoning: str, attempts: int) -> dict[str, Any]:
    # Announced once the query has run, so a repaired run-time failure never announces
    # two queries: consumers see exactly one QueryGenerated before its RowsReady.
    model_query, changes = result.get("model_query", result["query"]), result.get("changes", [])
    emit(
        QueryGenerated(
            query=result["query"], reasoning=reasoning, attempts=attempts, model_query=model_query, changes=changes
        )
    )
    emit(RowsReady(query=result["query"], rows=result["rows"], truncated=result["truncated"]))
    return {**result, "feedback": "", "error": "", "refusal": ""}


async def check(state: QueryState, runtime: Runtime[QueryContext], deps: QueryDeps) -> dict[str, Any]:
    context = runtime.context
    try:
        bound(state["draft"], deps.caps)  # issue 51: measured before any rule below parses it
    except QueryError as exc:  # told without the query: it may be as long as the limit allows
        told = {"feedback": blind_feedback(exc), "blind_feedback": blind_feedback(exc)}
        return settle(state, told | _give_up_if_spent(state.get("attempts", 0), deps, _summary(exc)))
    update: dict[str, Any] = {"model_query": state["draft"], "changes": []}  # issue 47: this attempt's
    # --- issue 27: the query fitted to the question and the data before it is prepared ---
    if state["draft"].strip() != state.get("verified"):  # a verified example's query runs as it was verified
        query, changes = await fitted(deps, context, state["question"], state["draft"])
        if changes:
            reasoning = f"{state.get('reasoning', '')}; {'; '.join(in_words(changes))}"
            update |= {"draft": query, "reasoning": reasoning.lstrip("; "), "changes": [c.as_dict() for c in changes]}
    # --- end issue 27 ---
    query = update.get("draft", state["draft"])
    try:
        prepared = await deps.tools.prepare(context.caller, context.namespace, query)
    except QueryError as exc:
        codes = {s.code for s in exc.sub_errors}
        change = data_change(state["draft"]) if NOT_A_SELECT in codes else ""
        if change:
            # The question asked to change data: no repair can make that a read, so the
            # service declines it rather than let the model try again.
            return settle(state, {"refusal": f"the question asks to change data ({change}); queries here only read it"})
        written = not state.get("proposed", "").strip()  # a caller's own query runs as written or not at all
        catalog = None  # read once for the mend and the unknown names
        if written and (deps.mend or UNKNOWN_NAMES & codes):
            catalog = await deps.tools.catalog(context.caller, context.namespace)
        # The query as written is mended, then fitted afresh: a rule that fitted the refused
        # query may no longer hold once a mend drops the join it answered (advising-29).
        reasoning = state.get("reasoning", "")
        if catalog is not None and (
            repaired := await mended(deps, context, catalog, state["question"], state["draft"], reasoning)
        ):
            return repaired  # a slip with one sensible reading, mended without the model (tools/rewrite/on_refusal.py)
        # --- issue 27: an unknown name is looked up in the whole catalog (tools/names.py) ---
        hints: list[str] = []
        missing: list[str] = []
        found: NameTriage | None = None
        if UNKNOWN_NAMES & codes and catalog is not None:
            found = unknown_names(catalog, state["question"], state["draft"], exc)
            if found.absent and state.get("missing"):
                return settle(state, {"refusal": names_refusal(found, catalog)})
            hints, missing = found.hints(), found.absent
            if missing:
                hints.append(
                    f"no column of any dataset is like {', '.join(repr(n) for n in missing)}: use only the columns "
                    "listed, and if none of them can answer the question, give a refusal instead of a query"
                )
        # --- end issue 27 ---
        feedback = failure_feedback(state["draft"], exc, hints=hints)
        update = {"feedback": feedback, "blind_feedback": blind_feedback(exc, hints=hints), "missing": missing}
        if given_up := _give_up_if_spent(state.get("attempts", 0), deps, _summary(exc)):
            # the last attempt still needs a name no column is called like: the data cannot answer
            if found is not None and catalog is not None and found.unplaced:
                return settle(state, {"refusal": names_refusal(found, catalog, unplaced=True)})
            update |= given_up
        if state.get("pruned") and UNKNOWN_NAMES & codes:
            # The pruned catalog may have left out what the query needs: the next attempt sees it all.
            update |= (await deps.view.describe(context.caller, context.namespace)).state()
        return settle(state, update)
    return update | {"prepared": prepared}


async def run(state: QueryState, runtime: Runtime[QueryContext], deps: QueryDeps) -> dict[str, Any]:
    context = runtime.context
    query = state["draft"]
    reasoning = state.get("reasoning", "")
    try:
        result = await deps.tools.run(context.caller, context.namespace, state["prepared"])
    except QueryError as exc:
        # Run-time failures (a type mismatch the checker could not see, the time limit)
        # get the same bounded repair as refusals.
        feedback = failure_feedback(query, exc, "failed when it ran")
        update = {"feedback": feedback, "blind_feedback": blind_feedback(exc, "failed when it ran")}
        return settle(state, update | _give_up_if_spent(state.get("attempts", 0), deps, _summary(exc)))
    found = ResultRows(
        query=result.query,
        rows=result.rows,
        truncated=result.truncated,
        model_query=state.get("model_query", query),
        changes=state.get("changes", []),
    )
    doubted = state.get("doubted")
    if doubted is not None and doubted["rows"] and not found["rows"]:
        return finish(doubted, reasoning, state.get("attempts", 1))  # a repair never loses rows found
    problem = doubt(state["question"], result.query, result.rows)
    vouched = query == state.get("verified")
    may_doubt = not vouched and doubted is None and state.get("attempts", 1) < deps.max_attempts
    # issue 27: where the texts are stored, and the question's names the query leaves out
    if (
        may_doubt
        and deps.match_literals
        and (said := await _where_the_texts_are(deps, context, state, query, result.rows))
    ):
        problem = problem or "It ran, but it leaves out what the question names:"
        problem = "\n".join([problem, *(f"- {line}" for line in said)])
    if problem and may_doubt:
        feedback = (
            f"Your previous query was:\n{query}\n{problem}\nWrite a corrected query, or the same one if it is right."
        )
        return {"feedback": feedback, "blind_feedback": "", "doubted": found, "reasoning": reasoning}
    return finish(found, reasoning, state.get("attempts", 1))


async def _where_the_texts_are(
    deps: QueryDeps, context: QueryContext, state: QueryState, query: str, rows: list[dict[str, Any]]
) -> list[str]:
    """Issue 27: what the repair of a doubted result is told of its texts: for an empty result,
    where the filters' texts are stored and which of them the question never says; for any,
    the names the question gives that the query leaves out (which alone doubt a result)."""
    question = state["question"]
    said = []
    if not rows:
        said += await where_stored(deps.tools, context.caller, context.namespace, query)
        said += [
            f"the question never mentions the text of {f}: keep only the filters it asks for"
            for f in unsaid_filters(query, question)
        ]
    return said + await names_left_out(deps.tools, context.caller, context.namespace, question, query)


def _summary(exc: QueryError) -> str:
    return "; ".join([exc.message, *(s.message for s in exc.sub_errors)])


def adopt(state: QueryState) -> dict[str, Any]:
    """The proposed query is the first attempt; no model wrote it."""
    verified = state["proposed"].strip() == state.get("verified")
    reasoning = state.get("reasoning") or (
        "a verified example answers this question" if verified else "the query proposed with the question"
    )
    return {"draft": state["proposed"].strip(), "attempts": 1, "reasoning": reasoning}


def after_catalog(state: QueryState) -> Literal["adopt", "generate"]:
    return "adopt" if state.get("proposed", "").strip() else "generate"


def after_generate(state: QueryState) -> Literal["check", "generate", "__end__"]:
    if state.get("error") or state.get("refusal") or state.get("query"):
        return DONE
    return "check" if state.get("draft") else "generate"


def after_check(state: QueryState) -> Literal["run", "generate", "__end__"]:
    # Gave up, declined, or the doubted result stands.
    if state.get("error") or state.get("refusal") or state.get("query"):
        return DONE
    return "generate" if state.get("feedback") else "run"


def after_run(state: QueryState) -> Literal["generate", "__end__"]:
    if state.get("error") or not state.get("feedback"):
        return DONE
    return "generate"
