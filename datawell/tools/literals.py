"""Literals that match the data (issue 27).

A query writer filters `venue = 'IEEE Transactions'` where the column holds
`IEEE Transactions on Pattern Analysis`, or `state = 'Ontario'` where it holds `ontario`: the
query runs and finds nothing. Before a query runs, every `text column = 'literal'` comparison
whose literal is not a stored value of the column is matched against the column's values,
case-insensitively first, then by containment:

- one stored value matches: the literal becomes that value (`state = 'ontario'`);
- several match: the comparison becomes a case-insensitive pattern
  (`LOWER(venue) LIKE '%ieee transactions%'`);
- none match, but other text columns of the namespace store the literal (but for case): when
  the query can reach exactly one of them (its table is read, or joined from one table of the
  query by a key or through one linking dataset: tools/rewrite/filter_where_stored.py), the filter
  reads that column. "Which organizations have authors who have written publications in the
  domain "Machine Learning"?" written `organization.name = 'Machine Learning'` filters
  `domain.name` (the keyword that has the same name is out of the query's reach);
- else the query is left as written (its empty result is then doubted as before).

The two rules' bodies are tools/rewrite/match_stored_values.py and filter_where_stored.py;
this module finds the filters' stored values and hands them over.

The values come from the column's hints when they list every value (a category), else from a
bounded `SELECT column ... WHERE LOWER(column) LIKE ... GROUP BY column LIMIT` (the distinct
values, shortest first) run through `QueryTools.run`,
as the caller and inside the sandbox's limits. A column without hints (no rows yet) is left
alone. Only comparisons whose column resolves to one catalog table are touched.

When a query ran, `names_left_out` says which names the question gives (quoted, or
capitalised past a sentence's start) a text column stores while the query filters on them in
no way, not even by a value of a row that holds them ('LAX' for "Los Angeles"): the result is
doubted and its repair told where they are (graphs/nl2ql/nodes.run).

When a query that ran returns no rows, `where_stored` says which of its text filters (`=`,
`LIKE`, `ILIKE`) compare a column with a text it does not hold, and which other column of the
namespace holds it (`'Machine Learning' is no value of organization.name; domain.name holds
'Machine Learning'`): the repair the empty result gets (graphs/nl2ql/nodes.run) then names
the column the model confused, not just "compare the filter values". The lookups are the same
bounded ones, as the caller, over the namespace's text columns (at most `LOOKUP_COLUMNS`)."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

import sqlglot
from sqlglot import exp

from datawell.errors import QueryError
from datawell.storage.access import NamespaceRef
from datawell.storage.hints import ColumnHint
from datawell.tools.catalog import Catalog, TableInfo
from datawell.tools.checker.allowed import DIALECTS, QL_DIALECT
from datawell.tools.ql import Queries, Who
from datawell.tools.rewrite.change import Change
from datawell.tools.rewrite.filter_where_stored import filter_where_stored
from datawell.tools.rewrite.joins import key_names
from datawell.tools.rewrite.lexicon import question_names
from datawell.tools.rewrite.match_stored_values import match_stored_values
from datawell.tools.rewrite.sql import TextFilter, literal_side, text_filters

LOOKUP_VALUES = 20  # stored values a lookup reads, the shortest first
LOOKUP_COLUMNS = 24  # other text columns `where_stored` looks a literal up in


@dataclass(frozen=True)
class Matched:
    """The query to run and what was changed, in words (empty when nothing was), and as
    records of the rule that made each change (`match_stored_values`, `filter_where_stored`)."""

    query: str
    changes: list[str]
    records: list[Change] = field(default_factory=list)


LITERAL_RULES = frozenset(["match_stored_values", "filter_where_stored"])


async def match_literals(
    tools: Queries,
    user: Who,
    namespace: NamespaceRef,
    query: str,
    rules: frozenset[str] = LITERAL_RULES,
    catalog: Catalog | None = None,
) -> Matched:
    """`query` with its text literals matched to stored values (see the module), by the
    `rules` named (tools/rewrite/registry.py); `catalog`, when the caller holds it already."""
    try:
        tree = sqlglot.parse_one(query, read=DIALECTS[QL_DIALECT])
    except sqlglot.errors.SqlglotError:
        return Matched(query, [])  # the checker says why
    if not any(literal_side(c) for c in tree.find_all(exp.EQ)):
        return Matched(query, [])
    catalog = catalog or await tools.catalog(user, namespace)
    changes = []
    records = []
    elsewhere = []
    before = tree.sql(dialect=DIALECTS[QL_DIALECT])
    for found in text_filters(tree, catalog):
        stored = found.literal.this
        values = await _values(tools, user, namespace, found.table, found.column.name, stored)
        if values is None:
            continue
        if not values:
            elsewhere.append(found)
        elif "match_stored_values" in rules and (change := match_stored_values(found, stored, values)):
            changes.append(change)
            after = tree.sql(dialect=DIALECTS[QL_DIALECT])
            records.append(Change("match_stored_values", before, after, change))
            before = after
    query = tree.sql(dialect=DIALECTS[QL_DIALECT]) if changes else query
    for found in elsewhere if "filter_where_stored" in rules else []:
        holders = await _holders_of(tools, user, namespace, catalog, found)
        moves = [filter_where_stored(query, catalog, found.literal.this, *holder) for holder in holders]
        moved = [m for m in moves if m.changes]
        if len(moved) == 1:  # of the columns that store the text, the one the query can reach
            records.append(Change("filter_where_stored", query, moved[0].query, "; ".join(moved[0].changes)))
            query, changes = moved[0].query, changes + moved[0].changes
    return Matched(query, changes, records)


async def _holders_of(
    tools: Queries, user: Who, namespace: NamespaceRef, catalog: Catalog, found: TextFilter
) -> list[tuple[tuple[str, str], str]]:
    """The other text columns (table, column) of the namespace with a value that is the
    filter's text but for case, with that value."""
    text = found.literal.this
    return [
        ((table.name, column), v)
        for table, column, values in await _stored_elsewhere(tools, user, namespace, catalog, found, text)
        for v in values
        if v.lower() == text.lower()
    ]


async def _stored_elsewhere(
    tools: Queries, user: Who, namespace: NamespaceRef, catalog: Catalog, found: TextFilter, text: str
) -> list[tuple[TableInfo, str, list[str]]]:
    """The namespace's other text columns (at most LOOKUP_COLUMNS) with values containing
    `text`, ignoring case, with those values."""
    others = [
        (table, column)
        for table in catalog.tables
        for column, kind in table.columns.items()
        if kind == "text" and (table, column) != (found.table, found.column.name)
    ]
    stored = []
    for table, column in others[:LOOKUP_COLUMNS]:
        if values := await _values(tools, user, namespace, table, column, text):
            stored.append((table, column, values))
    return stored


async def where_stored(tools: Queries, user: Who, namespace: NamespaceRef, query: str) -> list[str]:
    """For each text filter of `query` whose column holds no value containing its text (the
    core of a pattern: `'Martin%'` is "Martin"), where that text is stored instead, in words;
    [] when every filter's text is in its column, or nowhere (see the module)."""
    try:
        tree = sqlglot.parse_one(query, read=DIALECTS[QL_DIALECT])
    except sqlglot.errors.SqlglotError:
        return []
    catalog = await tools.catalog(user, namespace)
    said = []
    for found in text_filters(tree, catalog, (exp.EQ, exp.Like, exp.ILike)):
        text = found.literal.this.strip("%").replace("%", " ").strip()
        if not text or await _values(tools, user, namespace, found.table, found.column.name, text):
            continue
        holders = [
            f"{table.name}.{column} holds {', '.join(repr(v) for v in values[:3])}"
            for table, column, values in await _stored_elsewhere(tools, user, namespace, catalog, found, text)
        ]
        if holders:
            said.append(
                f"{found.literal.this!r} is no value of {found.table.name}.{found.column.name}; {'; '.join(holders)}"
            )
    return said


NAMED_ROWS = 5  # rows a lookup of a name reads
NAMED_COLUMNS = 128  # text columns a name is looked up in (a row that holds it may be in any)


async def names_left_out(tools: Queries, user: Who, namespace: NamespaceRef, question: str, query: str) -> list[str]:
    """For each name the question gives (`question_names`) that a text column of the namespace
    holds, as whole words, and that the query filters on in no way, where it is stored, in
    words: "the question names 'Los Angeles', which the query does not filter on:
    airport.airport_location holds 'Los Angeles, CA' (airport_code 'LAX')". A query filters on
    a name when one of its texts is the name, part of it or holds it, or one of its literals is
    a value of a row that holds it (`'LAX'` for "Los Angeles", `'tro4'` for "Tromso Centre",
    `3` for the Rotterdam warehouse). [] when the query does not parse. The lookups are
    `where_stored`'s, reading at most NAMED_ROWS rows each, in at most NAMED_COLUMNS columns."""
    try:
        tree = sqlglot.parse_one(query, read=DIALECTS[QL_DIALECT])
    except sqlglot.errors.SqlglotError:
        return []
    literals = [(t.this.strip("%").replace("%", " ").strip().lower(), t.is_string) for t in tree.find_all(exp.Literal)]
    values = {value for value, _ in literals}
    texts = {value for value, text in literals if text and len(value) >= 2}
    names = [n for n in question_names(question) if not any(t in n.lower() or n.lower() in t for t in texts)]
    if not names:
        return []
    catalog = await tools.catalog(user, namespace)
    columns = [(t, c) for t in catalog.tables for c, kind in t.columns.items() if kind == "text" and c in t.hints]
    said = []
    for name in names:
        holders = await _holders(tools, user, namespace, columns[:NAMED_COLUMNS], name, values)
        if holders:
            said.append(f"the question names {name!r}, which the query does not filter on: {'; '.join(holders)}")
    return said


async def _holders(
    tools: Queries,
    user: Who,
    namespace: NamespaceRef,
    columns: list[tuple[TableInfo, str]],
    name: str,
    values: set[str],
) -> list[str]:
    """Where `name` is stored, a row of each column that holds it as whole words, in words
    (`airport.airport_location holds 'Los Angeles, CA' (airport_code 'LAX')`); [] when no
    column holds it or a row that does has one of the query's literal `values`."""
    whole = re.compile(rf"(?<!\w){re.escape(name)}(?!\w)", re.IGNORECASE)
    holders = []
    for table, column in columns:
        listed = _listed(table.hints[column])
        if listed is not None and not any(whole.search(v) for v in listed):
            continue
        rows = [
            r for r in await _rows_holding(tools, user, namespace, table, column, name) if whole.search(str(r[column]))
        ]
        if any(_said(v) in values for row in rows for v in row.values() if v is not None):
            return []  # the query filters on a row that holds the name
        if rows:
            key = next((c for c in key_names(table) if c != column and c in rows[0]), None)
            of = f" ({key} {rows[0][key]!r})" if key else ""
            holders.append(f"{table.name}.{column} holds {rows[0][column]!r}{of}")
    return holders


def _said(value: object) -> str:
    """A stored value as a query's literal writes it: `3` for 3.0, `lax` for 'LAX'."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value).lower()


async def _rows_holding(
    tools: Queries, user: Who, namespace: NamespaceRef, info: TableInfo, name: str, text: str
) -> list[dict[str, object]]:
    """At most NAMED_ROWS rows whose column `name` contains `text`, ignoring case; [] when the
    lookup cannot be asked or fails."""
    rows = await _containing(
        tools,
        user,
        namespace,
        info,
        name,
        text,
        lambda table, holds: f"* FROM {table} WHERE {holds} LIMIT {NAMED_ROWS}",
    )
    return [{k: v for k, v in row.items() if not k.startswith("__")} for row in rows or []]


async def _values(
    tools: Queries, user: Who, namespace: NamespaceRef, table: TableInfo, column: str, text: str
) -> list[str] | None:
    """The column's values that contain `text`, ignoring case: from its hints when they list
    every value, else looked up; None when neither can say."""
    hint = table.hints.get(column)
    if hint is None:
        return None
    listed = _listed(hint)
    if listed is not None:
        return [v for v in listed if text.lower() in v.lower()]
    return await _lookup(tools, user, namespace, table, column, text)


def _listed(hint: ColumnHint) -> list[str] | None:
    """Every value of the column, when its hints hold them all."""
    if hint.values and hint.distinct_at_least is None and hint.distinct == len(hint.values):
        return list(hint.values)
    return None


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


async def _lookup(
    tools: Queries, user: Who, namespace: NamespaceRef, info: TableInfo, name: str, literal: str
) -> list[str] | None:
    """The stored values of column `name` that contain the literal, ignoring case (at most
    LOOKUP_VALUES, the shortest first); None when the lookup cannot be asked or fails."""
    column = _quote(name)
    rows = await _containing(
        tools,
        user,
        namespace,
        info,
        name,
        literal,
        lambda table, holds: (
            f"{column} AS value FROM {table} WHERE {holds} GROUP BY {column} "
            f"ORDER BY LENGTH({column}), {column} LIMIT {LOOKUP_VALUES}"
        ),
    )
    return None if rows is None else [str(row["value"]) for row in rows if row.get("value") is not None]


async def _containing(
    tools: Queries,
    user: Who,
    namespace: NamespaceRef,
    info: TableInfo,
    name: str,
    text: str,
    rest: Callable[[str, str], str],
) -> list[dict[str, object]] | None:
    """Runs `SELECT` and `rest(table, holds)` as the caller, given the table quoted and the
    condition that column `name` contains `text` ignoring case; None when the text cannot be
    looked up (empty, or a pattern character) or the lookup fails."""
    if "%" in text or "_" in text or not text.strip():
        return None
    table = ".".join(_quote(p) for p in info.name.split("."))
    holds = f"LOWER({_quote(name)}) LIKE '%" + text.lower().replace("'", "''") + "%'"
    try:
        result = await tools.run(user, namespace, "SELECT " + rest(table, holds))
    except QueryError:
        return None
    return result.rows
