"""Literals that match the data (issue 27).

A query writer filters `venue = 'IEEE Transactions'` where the column holds
`IEEE Transactions on Pattern Analysis`, or `state = 'Ontario'` where it holds `ontario`: the
query runs and finds nothing. Before a query runs, every `text column = 'literal'` comparison
whose literal is not a stored value of the column is matched against the column's values,
case-insensitively first, then by containment:

- one stored value matches: the literal becomes that value (`state = 'ontario'`);
- several match: the comparison becomes a case-insensitive pattern
  (`LOWER(venue) LIKE '%ieee transactions%'`);
- none match: the query is left as written (its empty result is then doubted as before).

The values come from the column's hints when they list every value (a category), else from a
bounded `SELECT column ... WHERE LOWER(column) LIKE ... GROUP BY column LIMIT` (the distinct
values, shortest first) run through `QueryTools.run`,
as the caller and inside the sandbox's limits. A column without hints (no rows yet) is left
alone. Only comparisons whose column resolves to one catalog table are touched."""

from __future__ import annotations

from dataclasses import dataclass

import sqlglot
from sqlglot import exp

from datawell.errors import QueryError
from datawell.storage.access import NamespaceRef
from datawell.storage.hints import ColumnHint
from datawell.tools.catalog import Catalog, TableInfo
from datawell.tools.checker.allowed import DIALECTS, QL_DIALECT
from datawell.tools.ql import Queries, Who

LOOKUP_VALUES = 20  # stored values a lookup reads, the shortest first


@dataclass(frozen=True)
class Matched:
    """The query to run and what was changed, in words (empty when nothing was)."""

    query: str
    changes: list[str]


@dataclass(frozen=True)
class _Filter:
    comparison: exp.EQ
    column: exp.Column
    literal: exp.Literal
    table: TableInfo


async def match_literals(tools: Queries, user: Who, namespace: NamespaceRef, query: str) -> Matched:
    """`query` with its text literals matched to stored values (see the module)."""
    try:
        tree = sqlglot.parse_one(query, read=DIALECTS[QL_DIALECT])
    except sqlglot.errors.SqlglotError:
        return Matched(query, [])  # the checker says why
    if not any(_literal_side(c) for c in tree.find_all(exp.EQ)):
        return Matched(query, [])
    catalog = await tools.catalog(user, namespace)
    changes = []
    for found in _filters(tree, catalog):
        stored = found.literal.this
        hint = found.table.hints.get(found.column.name)
        if hint is None:
            continue
        values = _listed(hint)
        if values is None:
            values = await _lookup(tools, user, namespace, found, stored)
            if values is None:
                continue
        change = _rewrite(found, stored, values)
        if change:
            changes.append(change)
    if not changes:
        return Matched(query, [])
    return Matched(tree.sql(dialect=DIALECTS[QL_DIALECT]), changes)


def _literal_side(comparison: exp.EQ) -> tuple[exp.Column, exp.Literal] | None:
    left, right = comparison.this, comparison.expression
    if isinstance(left, exp.Column) and isinstance(right, exp.Literal) and right.is_string:
        return left, right
    if isinstance(right, exp.Column) and isinstance(left, exp.Literal) and left.is_string:
        return right, left
    return None


def _filters(tree: exp.Expr, catalog: Catalog) -> list[_Filter]:
    """The `text column = 'literal'` comparisons whose column is one catalog table's."""
    found = []
    for comparison in list(tree.find_all(exp.EQ)):
        sides = _literal_side(comparison)
        select = comparison.find_ancestor(exp.Select)
        if sides is None or select is None:
            continue
        column, literal = sides
        sources = {}
        for table in select.find_all(exp.Table):
            if table.find_ancestor(exp.Select) is not select:
                continue
            name = ".".join(p for p in (table.catalog, table.db, table.name) if p)
            info = catalog.table(name)
            if info is not None:
                sources[table.alias_or_name] = info
        if column.table:
            candidates = [sources[column.table]] if column.table in sources else []
        else:
            candidates = [t for t in sources.values() if column.name in t.columns]
        if len(candidates) == 1 and candidates[0].columns.get(column.name) == "text":
            found.append(_Filter(comparison, column, literal, candidates[0]))
    return found


def _listed(hint: ColumnHint) -> list[str] | None:
    """Every value of the column, when its hints hold them all."""
    if hint.values and hint.distinct_at_least is None and hint.distinct == len(hint.values):
        return list(hint.values)
    return None


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


async def _lookup(tools: Queries, user: Who, namespace: NamespaceRef, found: _Filter, literal: str) -> list[str] | None:
    """The stored values that contain the literal, ignoring case (at most LOOKUP_VALUES, the
    shortest first); None when the lookup cannot be asked or fails."""
    if "%" in literal or "_" in literal or not literal.strip():
        return None
    table = ".".join(_quote(p) for p in found.table.name.split("."))
    column = _quote(found.column.name)
    pattern = "'%" + literal.lower().replace("'", "''") + "%'"
    query = (
        f"SELECT {column} AS value FROM {table} WHERE LOWER({column}) LIKE {pattern} "
        f"GROUP BY {column} ORDER BY LENGTH({column}), {column} LIMIT {LOOKUP_VALUES}"
    )
    try:
        result = await tools.run(user, namespace, query)
    except QueryError:
        return None
    return [str(row["value"]) for row in result.rows if row.get("value") is not None]


def _rewrite(found: _Filter, literal: str, values: list[str]) -> str:
    """Rewrite the comparison in place; what changed, or "" when nothing did."""
    if literal in values:
        return ""
    lowered = literal.lower()
    same = [v for v in values if v.lower() == lowered]
    containing = [v for v in values if lowered in v.lower()]
    name = f"{found.table.name}.{found.column.name}"
    chosen = same if same else containing
    if len(chosen) == 1:
        found.literal.replace(exp.Literal.string(chosen[0]))
        return f"{name}: {literal!r} is stored as {chosen[0]!r}"
    if not chosen:
        return ""
    pattern = f"%{lowered}%" if not same else lowered
    column = found.column.copy()
    lower = exp.Lower(this=column)
    replacement: exp.Expr = (
        exp.EQ(this=lower, expression=exp.Literal.string(pattern))
        if same
        else exp.Like(this=lower, expression=exp.Literal.string(pattern))
    )
    found.comparison.replace(replacement)
    return f"{name}: {literal!r} matches {len(chosen)} stored values, compared ignoring case"
