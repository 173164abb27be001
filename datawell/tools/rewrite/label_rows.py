"""`label_rows`, a before-run rule of the query, the question and the catalog, applied to the
query's text (moved out of tools/shape.py as it was, issue 47).

**Values whose rows nobody can tell apart.** "What are the easiness scores for courses in
the Computer Science department? Show both courses and scores." written `SELECT
easiness_score FROM course WHERE department = 'Computer Science'` lists numbers without
saying whose. When the outermost query selects, without aggregating, only columns of one
dataset the question names (`course` for "courses": `lexicon.names_the_rows`), none of
them a name, a title or a key, and the dataset has a `name`, `title` or `<dataset>_name`
column that the WHERE does not pin to one value ("the price of the Red Chair" named its
row), that column is selected in front.
"""

from __future__ import annotations

import sqlglot
from sqlglot import exp

from datawell.tools.catalog import Catalog
from datawell.tools.checker.allowed import DIALECTS, QL_DIALECT
from datawell.tools.coverage import singular
from datawell.tools.rewrite.change import Shaped
from datawell.tools.rewrite.joins import key_names
from datawell.tools.rewrite.lexicon import names_the_rows
from datawell.tools.rewrite.sql import from_and_joins

# Column endings that tell rows apart already: a name, an id, a code, a number.
_TELLING = ("_name", "_id", "_code", "_number", "_no")


def label_rows(query: str, question: str, catalog: Catalog) -> Shaped:
    """`query` with the name of the rows it lists selected in front (see the module)."""
    try:
        tree = sqlglot.parse_one(query, read=DIALECTS[QL_DIALECT])
    except sqlglot.errors.SqlglotError:
        return Shaped(query, [])
    if not isinstance(tree, exp.Select) or any(tree.args.get(p) is not None for p in ("group", "distinct")):
        return Shaped(query, [])
    selected = tree.expressions
    columns = [c for e in selected for c in e.find_all(exp.Column)]
    if not columns or any(e.find(exp.AggFunc, exp.Window, exp.Star) for e in selected):
        return Shaped(query, [])
    tables = from_and_joins(tree)
    read = {t.alias_or_name.lower(): t.name for t in tables if isinstance(t, exp.Table)}
    qualifiers = {c.table.lower() for c in columns}
    if len(qualifiers) != 1 or len(read) != len(tables) or (qualifiers == {""} and len(read) != 1):
        return Shaped(query, [])
    (qualifier,) = qualifiers
    info = catalog.table(read[qualifier] if qualifier else next(iter(read.values())))
    if info is None or not names_the_rows(question, info.name):
        return Shaped(query, [])
    own = {c.lower() for c in info.columns}
    label = next((c for c in ("name", "title", f"{singular(info.name.lower())}_name") if c in own), None)
    keys = key_names(info)
    shown = {c.name.lower() for c in columns}
    if label is None or any(n in keys or n in ("name", "title") or n.endswith(_TELLING) for n in shown):
        return Shaped(query, [])
    where = tree.args.get("where")
    if where is not None and any(
        isinstance(c.parent, exp.EQ) and c.name.lower() == label for c in where.find_all(exp.Column)
    ):
        return Shaped(query, [])  # the question named the row: "the price of the Red Chair"
    column = exp.column(label, table=columns[0].table or None)
    tree.set("expressions", [column, *selected])
    said = column.sql(dialect=DIALECTS[QL_DIALECT])
    return Shaped(
        tree.sql(dialect=DIALECTS[QL_DIALECT]), [f"selected {said} in front: the rows did not say whose they are"]
    )
