"""What the service does to a query without the model (issue 27): before the checker sees it
(its shape fitted, crossed keys joined through their link, its literals matched), and after
the checker refused it (slips mended, unknown names looked up in the whole catalog, a
statement that changes data named)."""

from __future__ import annotations

import logging
import re
from typing import Any

import sqlglot
from sqlglot import exp

from datawell.errors import QueryError
from datawell.graphs.nl2ql.deps import QueryDeps
from datawell.graphs.nl2ql.state import QueryContext
from datawell.tools.catalog import Catalog
from datawell.tools.literals import match_literals
from datawell.tools.mend import mend, reroute_joins
from datawell.tools.names import NameTriage, flagged, query_names, triage
from datawell.tools.shape import (
    DIRECTED,
    asked_per,
    compute_the_ratio_asked,
    count_the_things_asked,
    filter_the_end_asked,
    fit_shape,
    group_per_asked,
    label_rows,
)

log = logging.getLogger(__name__)

JOIN = re.compile(r"\bjoin\b", re.IGNORECASE)
# A query that may aggregate: one that does not lists rows, which may need their names.
AGGREGATES = re.compile(r"\b(?:group\s+by|count|sum|avg|min|max)\b", re.IGNORECASE)
COUNTS = re.compile(r"\bcount\s*\(\s*(?!\*|distinct\b)", re.IGNORECASE)  # a COUNT of a column


async def fitted(
    deps: QueryDeps, context: QueryContext, question: str, query: str, catalog: Catalog | None = None
) -> tuple[str, list[str]]:
    """`_fitted`, or the query as written when a rule cannot read it: the text is bounded before
    any rule runs (`checker.bounds`), so a RecursionError here is a rule's own recursion, and
    the checker, which reads every query iteratively, says what is wrong with the query."""
    try:
        return await _fitted(deps, context, question, query, catalog)
    except RecursionError:
        log.warning("a rewrite rule could not read a query of %d characters; it runs as written", len(query))
        return query, []


async def _fitted(
    deps: QueryDeps, context: QueryContext, question: str, query: str, catalog: Catalog | None = None
) -> tuple[str, list[str]]:
    """The query with its shape fitted to the question (tools/shape.py), a filter on one end of
    a move read on the end the question puts its value at (tools/shape.filter_the_end_asked),
    a join of two different tables' keys read through the dataset linking them and a join of a
    number with a text read on the text table's key (tools/mend.reroute_joins), listed values
    given their rows' names (tools/shape.label_rows), another table's key counted once per
    thing (tools/shape.count_the_things_asked), the ratio asked for computed from the two
    numbers selected (tools/shape.compute_the_ratio_asked), and its text literals matched to stored values
    (tools/literals.py), and what changed, in words. A caller that holds the namespace's
    `catalog` already passes it."""
    changes: list[str] = []
    if deps.fit_shape:
        shaped = fit_shape(query, question, show_measure=deps.show_measure)
        query = shaped.query
        changes += shaped.changes
        per = asked_per(question)
        # The catalog's rules run only when one may apply: a join to reroute, "per X" to group
        # by, rows to name, or a column at one end of a move; only then is the catalog read,
        # if the caller has not.
        if not (
            per or JOIN.search(query) or not AGGREGATES.search(query) or DIRECTED.search(query) or COUNTS.search(query)
        ):
            catalog = None
        elif catalog is None:
            catalog = await deps.tools.catalog(context.caller, context.namespace)
        if catalog is not None:
            ends = filter_the_end_asked(query, question, catalog)
            query = ends.query
            changes += ends.changes
            rerouted = reroute_joins(query, catalog)
            query = rerouted.query
            changes += rerouted.changes
            if per:
                grouped = group_per_asked(query, question, {t.name: t.columns for t in catalog.tables})
                query = grouped.query
                changes += grouped.changes
            labelled = label_rows(query, question, catalog)
            query = labelled.query
            changes += labelled.changes
            counted = count_the_things_asked(query, question, catalog)
            query = counted.query
            changes += counted.changes
        ratio = compute_the_ratio_asked(query, question)  # after the counts: it divides them as they count
        query = ratio.query
        changes += ratio.changes
    if deps.match_literals:
        matched = await match_literals(deps.tools, context.caller, context.namespace, query)
        if matched.changes:
            query = matched.query
            changes.append(f"literals matched to the data: {'; '.join(matched.changes)}")
    return query, changes


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
    """The state update that runs the refused `query`, as the model wrote it, mended
    (tools/mend.py) and then fitted as a written query is (`fitted`: a rule of its may apply
    only once the names are right, and one that fitted the refused query may no longer hold),
    when a mend rule changes it and the checker accepts the result; else {}."""
    if not deps.mend:
        return {}
    try:
        found = mend(query, catalog, question)
    except RecursionError:  # see `fitted`
        return {}
    if not found.changes:
        return {}
    query, fits = await fitted(deps, context, question, found.query, catalog)
    try:
        prepared = await deps.tools.prepare(context.caller, context.namespace, query)
    except QueryError:
        return {}
    reasoning = f"{reasoning}; mended: {'; '.join([*found.changes, *fits])}".lstrip("; ")
    return {"draft": query, "prepared": prepared, "reasoning": reasoning}
