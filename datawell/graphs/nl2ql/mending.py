"""What the service does to a query without the model (issue 27): before the checker sees it
(its shape fitted, crossed keys joined through their link, its literals matched), and after
the checker refused it (slips mended, unknown names looked up in the whole catalog, a
statement that changes data named)."""

from __future__ import annotations

import logging
from typing import Any

import sqlglot
from sqlglot import exp

from datawell.errors import QueryError
from datawell.graphs.nl2ql.deps import QueryDeps
from datawell.graphs.nl2ql.state import QueryContext
from datawell.observability import recorder as recording
from datawell.tools.catalog import Catalog
from datawell.tools.literals import Matched, match_literals
from datawell.tools.names import NameTriage, flagged, query_names, triage
from datawell.tools.rewrite.change import Change, Context
from datawell.tools.rewrite.driver import Rewritten, rewrite
from datawell.tools.rewrite.registry import BEFORE_RUN, LITERAL_RULES, MEND_RULES, ON_REFUSAL, SHAPE_RULES, active

log = logging.getLogger(__name__)


def switched_off(deps: QueryDeps) -> frozenset[str]:
    """The rules a run does not apply: those named off, and the groups of the coarse switches."""
    off = set(deps.rules_off)
    for on, group in ((deps.fit_shape, SHAPE_RULES), (deps.match_literals, LITERAL_RULES), (deps.mend, MEND_RULES)):
        off |= set() if on else group
    return frozenset(off)


def _context(deps: QueryDeps, context: QueryContext, question: str, catalog: Catalog | None) -> Context:
    async def read_catalog() -> Catalog:
        return await deps.tools.catalog(context.caller, context.namespace)

    async def match_values(query: str, rules: frozenset[str], held: Catalog | None) -> Matched:
        return await match_literals(deps.tools, context.caller, context.namespace, query, rules, held)

    return Context(question, deps.show_measure, catalog, read_catalog, match_values)


async def fitted(
    deps: QueryDeps, context: QueryContext, question: str, query: str, catalog: Catalog | None = None
) -> tuple[str, list[Change]]:
    """The query with the before-run rules applied (tools/rewrite/registry.BEFORE_RUN: its
    shape fitted to the question, its joins rerouted, its literals matched to stored values),
    but those switched off, and the changes they made. The catalog is read only when an active
    rule reads it, unless the caller, which holds it already, passes it as `catalog`.

    The text is bounded before any rule runs (`checker.bounds`, issue 51), so a RecursionError
    here is a rule's own: the query then goes on as written to the checker, which reads every
    query iteratively and says what is wrong with it."""
    rules = active(BEFORE_RUN, switched_off(deps))
    try:
        done = await rewrite(rules, query, _context(deps, context, question, catalog))
    except RecursionError:
        log.warning("a rewrite rule could not read a query of %d characters; it runs as written", len(query))
        return query, []
    recorded(done.changes)
    return done.query, done.changes


def recorded(changes: list[Change]) -> None:
    """The changes on the run's record and trace (one span event a rule), when a run records."""
    if (recorder := recording.current()) is not None:
        for change in changes:
            recorder.rewrote(change.rule, change.before, change.after, change.reason)


def in_words(changes: list[Change]) -> list[str]:
    """The changes as the run's reasoning says them: one item a rule, the literals' in one."""
    words = [c.reason for c in changes if c.rule not in LITERAL_RULES]
    if matched := [c.reason for c in changes if c.rule in LITERAL_RULES]:
        words.append(f"literals matched to the data: {'; '.join(matched)}")
    return words


def unknown_names(catalog: Catalog, question: str, query: str, exc: QueryError) -> NameTriage:
    """Where the names the checker called unknown are in the namespace, and which ones the
    question asks for that no dataset holds."""
    named = flagged(query, [exc.message, *(s.message for s in exc.sub_errors)])
    return triage(named, catalog, question, used=query_names(query))


# Statements that change data or tables, by the keyword a refusal names them with.
CHANGES: dict[type[exp.Expr], str] = {
    exp.Delete: "DELETE",
    exp.Update: "UPDATE",
    exp.Insert: "INSERT",
    exp.Merge: "MERGE",
    exp.Drop: "DROP",
    exp.TruncateTable: "TRUNCATE",
    exp.Alter: "ALTER",
    exp.Create: "CREATE",
}


def data_change(query: str) -> str:
    """The keyword of a statement that changes data ("DELETE", "DROP", ...), else ""."""
    try:
        tree = sqlglot.parse_one(query)
    except (sqlglot.errors.SqlglotError, RecursionError):
        return ""
    return next((word for kind, word in CHANGES.items() if isinstance(tree, kind)), "")


async def mended(
    deps: QueryDeps, context: QueryContext, catalog: Catalog, question: str, query: str, reasoning: str
) -> dict[str, Any]:
    """The state update that runs the refused `query`, as the model wrote it, mended (the
    on-refusal rules, tools/rewrite/registry.ON_REFUSAL) and then fitted as a written query is
    (`fitted`: a rule of its may apply only once the names are right, and one that fitted the
    refused query may no longer hold), when a mend rule changes it and the checker accepts the
    result; else {}. The update carries every change, the mends' first."""
    rules = active(ON_REFUSAL, switched_off(deps))
    if not rules:
        return {}
    written = query
    try:
        found: Rewritten = await rewrite(rules, query, _context(deps, context, question, catalog))
    except RecursionError:  # see `fitted`
        return {}
    if not found.changes:
        return {}
    recorded(found.changes)  # applied, whether or not the checker then accepts the mended query
    query, fits = await fitted(deps, context, question, found.query, catalog)
    try:
        prepared = await deps.tools.prepare(context.caller, context.namespace, query)
    except QueryError:
        return {}
    reasoning = f"{reasoning}; mended: {'; '.join([*found.reasons, *in_words(fits)])}".lstrip("; ")
    changes = [c.as_dict() for c in [*found.changes, *fits]]
    return {"draft": query, "prepared": prepared, "reasoning": reasoning, "model_query": written, "changes": changes}
