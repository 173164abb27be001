"""`count_the_things_asked`, a before-run rule of the query, the question and the catalog,
applied to the query's text (moved out of tools/shape.py as it was, issue 47). Its docstring
below says what it does."""

from __future__ import annotations

import sqlglot
from sqlglot import exp

from datawell.tools.catalog import Catalog
from datawell.tools.checker.allowed import DIALECTS, QL_DIALECT
from datawell.tools.coverage import singular
from datawell.tools.rewrite.change import Shaped
from datawell.tools.rewrite.joins import key_names
from datawell.tools.rewrite.lexicon import asks_how_many
from datawell.tools.rewrite.sql import from_and_joins


def count_the_things_asked(query: str, question: str, catalog: Catalog) -> Shaped:
    """`query` with each count of another table's key that the question asks the number of
    counted once per thing: "Return the annual numbers of publications and journals" written
    `SELECT year, COUNT(pid), COUNT(jid) FROM publication GROUP BY year` counts a journal once
    per publication in it. When a COUNT of the outermost query reads a column that is not its
    table's own key but is another table's (`jid` of journal, by `key_names`), the question
    asks how many of that table's things there are ("how many journals", "the number of
    journals"; "the most patients not showing up" ranks by no-shows, not by patients), and
    the query does not read that table (joined, it is what the rows are grouped by:
    `COUNT(loans.book_id) ... JOIN books ... GROUP BY books.title` counts loans), it counts
    `DISTINCT`, wherever the query uses that count (an ORDER BY too)."""
    try:
        tree = sqlglot.parse_one(query, read=DIALECTS[QL_DIALECT])
    except sqlglot.errors.SqlglotError:
        return Shaped(query, [])
    if not isinstance(tree, exp.Select):
        return Shaped(query, [])
    read = {t.alias_or_name.lower(): t.name for t in from_and_joins(tree) if isinstance(t, exp.Table)}
    counted: dict[str, str] = {}  # a count's SQL -> the table whose things it counts
    for count in [c for e in tree.expressions for c in e.find_all(exp.Count)]:
        column = count.this
        if not isinstance(column, exp.Column) or count.find_ancestor(exp.Select) is not tree:
            continue  # COUNT(*), COUNT(DISTINCT ...), or a subquery's count
        name = column.name.lower()
        own = (
            read.get(column.table.lower()) if column.table else (next(iter(read.values())) if len(read) == 1 else None)
        )
        info = catalog.table(own) if own else None
        if info is None or name in key_names(info):
            continue
        keyed = [t for t in catalog.tables if t.name != info.name and name in key_names(t)]
        if len(keyed) != 1 or keyed[0].name in read.values() or not asks_how_many(question, keyed[0].name):
            continue  # grouped by the thing it keys ("the number of loans per book"), or not asked
        counted[count.sql()] = keyed[0].name
    if not counted:
        return Shaped(query, [])
    for count in list(tree.find_all(exp.Count)):
        if count.sql() in counted and count.find_ancestor(exp.Select) is tree:
            count.set("this", exp.Distinct(expressions=[count.this.copy()]))
    changes = [
        f"{count} counts each {singular(table.rsplit('.', 1)[-1].lower())} once" for count, table in counted.items()
    ]
    return Shaped(tree.sql(dialect=DIALECTS[QL_DIALECT]), changes)
