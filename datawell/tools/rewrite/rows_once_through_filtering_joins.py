"""`rows_once_through_filtering_joins`, a before-run rule of the query alone (moved out of
tools/shape.py as it was, issue 47).

**Rows repeated by a join that only filters.** "What are the top 3 publications with the
highest number of citations?" written `SELECT p.title, p.citation_num FROM publication AS
p JOIN cite AS c ON p.pid = c.cited ORDER BY p.citation_num DESC LIMIT 3` lists a
publication once per citation, so the top three are one publication three times. When the
outermost query selects plain columns (no aggregate, no window) of one table, through its
alias, joins others it neither selects nor orders by, and has no GROUP BY or DISTINCT, each
row is shown once: `SELECT DISTINCT`. (An ORDER BY of anything not selected leaves it
alone, as PostgreSQL refuses DISTINCT then.)
"""

from __future__ import annotations

from sqlglot import exp


def rows_once_through_filtering_joins(tree: exp.Query) -> str:
    if not isinstance(tree, exp.Select) or not tree.args.get("joins"):
        return ""
    if any(tree.args.get(part) is not None for part in ("distinct", "group", "having")):
        return ""
    selected = tree.expressions
    if any(e.find(exp.AggFunc, exp.Window, exp.Star) for e in selected):
        return ""
    shown = {c.table.lower() for e in selected for c in e.find_all(exp.Column)}
    if len(shown) != 1 or "" in shown:
        return ""  # columns of several tables, or of one the query does not name
    listed = {e.unalias().sql().lower() for e in selected} | {e.alias.lower() for e in selected if e.alias}
    order = tree.args.get("order")
    if order is not None and any(o.this.sql().lower() not in listed for o in order.expressions):
        return ""
    tree.set("distinct", exp.Distinct())
    (table,) = shown
    return f"each row shown once: the query joins other tables only to filter the rows of {table}"
