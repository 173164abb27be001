"""`drop_invented_filters`, an on-refusal rule: it runs on each SELECT of a query the checker
refused, with the datasets the SELECT reads (moved out of tools/mend.py as it was, issue 47);
the first of them.

**Filters nobody asked for, one of which cannot run.** `FROM airport AS t1 JOIN city AS t2
ON t1.city_code = t2.city_code JOIN country AS t3 ON ... WHERE t1.airport_name ILIKE
'Orlando International Airport' AND t2.city_name ILIKE 'IL' AND t3.country_name ILIKE
'United States'` for "Which state code is Orlando International Airport in?": the WHERE's
comparisons with a text the question never says go when one of them cannot run (here
`country` is no dataset), and so does each inner join then read only in its own condition,
when that condition cannot run or its table is no dataset. Only with the question; filters
that all run are left alone (`'WH-RTM'` for "Rotterdam" is right).

`unsaid_filters` is the same reading, as a hint: the filters the repair of an empty result is
told the question never says (graphs/nl2ql/nodes.run).
"""

from __future__ import annotations

import sqlglot
from sqlglot import exp

from datawell.tools.checker.allowed import QL_DIALECT
from datawell.tools.rewrite.lexicon import says
from datawell.tools.rewrite.sql import Source, inner_join, joined_tables


def drop_invented_filters(select: exp.Select, sources: dict[str, Source], question: str) -> list[str]:
    """Conditions of the WHERE (joined by AND) that compare a column with a text the question
    never says (`city_name ILIKE 'IL'`, `country_name = 'United States'` for "Which state code
    is Orlando International Airport in?"), when one of them cannot run: they all go, and so
    does each inner join then read for nothing but its own condition that cannot run or of a
    table no dataset is named."""
    where = select.args.get("where")
    if where is None:
        return []
    tables = {t.alias_or_name.lower() for t in joined_tables(select)}
    conditions = list(where.this.flatten()) if isinstance(where.this, exp.And) else [where.this]
    invented = [c for c in conditions if _compares_unsaid_text(c, question)]

    def runs(column: exp.Column) -> bool:
        qualifier = column.table.lower()
        if qualifier in sources:
            return sources[qualifier].has(column.name)
        if qualifier in tables:  # a table of the SELECT that is no dataset
            return False
        return bool(qualifier) or any(s.has(column.name) for s in sources.values())

    if all(runs(c) for condition in invented for c in condition.find_all(exp.Column)):
        return []
    dropped = {c.table.lower() for condition in invented for c in condition.find_all(exp.Column)}
    kept = [c for c in conditions if not any(c is i for i in invented)]
    select.set("where", exp.Where(this=exp.and_(*kept)) if kept else None)
    said = "; ".join(c.sql(dialect=QL_DIALECT) for c in invented)
    changes = [f"filters on text the question never mentions, one of which could not run, dropped: {said}"]
    for join in reversed(select.args.get("joins") or []):
        node, condition = join.this, join.args.get("on")
        alias = node.alias_or_name.lower() if isinstance(node, exp.Table) else ""
        if alias not in dropped or condition is None or not inner_join(join):
            continue
        read = [c for c in select.find_all(exp.Column) if c.table.lower() == alias]
        if any(c.find_ancestor(exp.Join) is not join for c in read):
            continue
        if alias in sources and all(runs(c) for c in condition.find_all(exp.Column)):
            continue
        join.pop()
        sources.pop(alias, None)
        changes.append(f"the join of {node.name}, read for nothing else: dropped")
    return changes


def unsaid_filters(query: str, question: str) -> list[str]:
    """The query's comparisons of a column with a text the question never says (see
    `_compares_unsaid_text`), as SQL; [] when it does not parse."""
    try:
        tree = sqlglot.parse_one(query, read=QL_DIALECT)
    except sqlglot.errors.SqlglotError:
        return []
    found = tree.find_all(exp.EQ, exp.Like, exp.ILike)
    return [c.sql(dialect=QL_DIALECT) for c in found if _compares_unsaid_text(c, question)]


def _compares_unsaid_text(condition: exp.Expr, question: str) -> bool:
    """`column = 'X'`, `column LIKE '%X%'` or `ILIKE`, where the question never says X (as
    whole words, in any case, or in the plural)."""
    if not isinstance(condition, (exp.EQ, exp.Like, exp.ILike)):
        return False
    sides = (condition.this, condition.expression)
    column = next((s for s in sides if isinstance(s, exp.Column)), None)
    text = next((s for s in sides if isinstance(s, exp.Literal) and s.is_string), None)
    if column is None or text is None:
        return False
    said = text.this.strip("%_ ").replace("%", " ").strip()
    return bool(said) and not says(question, said)
