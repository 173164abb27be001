"""`filter_the_end_asked`, a before-run rule of the query, the question and the catalog,
applied to the query's text (moved out of tools/shape.py as it was, issue 47).

**A value put at the wrong end of a move.** "Which flight ids to Chicago (ORD) have the
longest duration?" written `WHERE from_airport = 'ORD'` lists flights leaving Chicago.
A text filter on a column named for one end (from/to, departure/arrival,
origin/destination) whose table has the other end's column is read on the other end when
the question's nearest direction word before the value ("to", "arriving at"; "from",
"leaving"), at most four words back, puts it there (`lexicon.end_asked`).
"""

from __future__ import annotations

from collections.abc import Mapping

import sqlglot
from sqlglot import exp

from datawell.tools.catalog import Catalog
from datawell.tools.checker.allowed import DIALECTS, QL_DIALECT
from datawell.tools.rewrite.change import Shaped
from datawell.tools.rewrite.lexicon import end_asked

# The two ends of a move, as words of a column's name (`from_airport`, `arrival_city`) and as
# the words of a question that put a value at that end ("flights to Chicago (ORD)").
_MOVES = [("from", "to"), ("departure", "arrival"), ("origin", "destination")]  # (start, end)


_ENDS = {word: end for pair in _MOVES for word, end in zip(pair, ("start", "end"), strict=True)}


_OTHER_END = {**dict(_MOVES), **{end: start for start, end in _MOVES}}


def filter_the_end_asked(query: str, question: str, catalog: Catalog) -> Shaped:
    """`query` with each filter of a value on one end of a move read on the end the question
    puts the value at: "Which flight ids to Chicago (ORD) ...?" written `WHERE from_airport =
    'ORD'` filters flights leaving Chicago; when the table also has `to_airport`, and the
    question's last direction before "ORD", at most four words back, is "to", the filter reads
    `to_airport`. A value the question does not say, or says at both ends, or that the query
    filters at both ends, is left alone."""
    try:
        tree = sqlglot.parse_one(query, read=DIALECTS[QL_DIALECT])
    except sqlglot.errors.SqlglotError:
        return Shaped(query, [])
    changes = []
    for select in tree.find_all(exp.Select):
        read = {t.alias_or_name.lower(): t.name for t in select.find_all(exp.Table)}
        filters = [
            (eq.this, eq.expression)
            for eq in select.find_all(exp.EQ)
            if eq.find_ancestor(exp.Select) is select and eq.find_ancestor(exp.Join) is None
            if isinstance(eq.this, exp.Column) and isinstance(eq.expression, exp.Literal) and eq.expression.is_string
        ]
        for column, value in filters:
            other = _other_end(column, read, catalog)
            if any(c.name.lower() == other.lower() and v.this == value.this for c, v in filters):
                continue  # both ends asked for the value ("depart from or arrive at JFK")
            if other and (asked := end_asked(question, value.this)) and asked != _ENDS[_end_word(column.name)]:
                said = column.sql(dialect=DIALECTS[QL_DIALECT])
                column.set("this", exp.to_identifier(other))
                changes.append(f"{said} read as {other}: the question puts {value.this!r} at the other end")
    if not changes:
        return Shaped(query, [])
    return Shaped(tree.sql(dialect=DIALECTS[QL_DIALECT]), changes)


def _end_word(name: str) -> str:
    return next((w for w in name.lower().split("_") if w in _ENDS), "")


def _other_end(column: exp.Column, read: Mapping[str, str], catalog: Catalog) -> str:
    """The name of the column at the other end (`to_airport` for `from_airport`) when the
    column's table has it, else ""."""
    word = _end_word(column.name)
    if not word:
        return ""
    tables = [read[column.table.lower()]] if column.table else list(read.values())
    infos = [info for name in tables if (info := catalog.table(name)) is not None]
    holders = [info for info in infos if any(c.lower() == column.name.lower() for c in info.columns)]
    if len(holders) != 1:
        return ""
    parts = [_OTHER_END[w] if w == word else w for w in column.name.lower().split("_")]
    other = "_".join(parts)
    return next((c for c in holders[0].columns if c.lower() == other), "")
