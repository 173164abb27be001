"""`reroute_crossed_keys`, a before-run rule: it runs on each SELECT of every query, with the
datasets the SELECT reads (moved out of tools/mend.py as it was, issue 47): the query it mends
is valid and runs, with the wrong rows.

**A join of two different keys.** `FROM domain AS d JOIN publication AS p ON d.did =
p.jid` equates a domain's key with a journal's: it runs, and pairs each domain with the
publications of the journal that happens to have the same number. When both columns are
keys (by name: a table's singular with `_id`, `_code`, `_no` or `_number`, or its initial
with `id`, held by that table: `joins.key_names`) of two different tables, and exactly one
other dataset holds the two tables' own keys (`domain_publication`: `did`, `pid`), or else
the two columns the condition names (of several, the one whose own key is one of them), the
join goes through it: `JOIN domain_publication ON d.did = domain_publication.did JOIN
publication AS p ON domain_publication.pid = p.pid`.
"""

from __future__ import annotations

from sqlglot import exp

from datawell.tools.catalog import Catalog
from datawell.tools.checker.allowed import QL_DIALECT
from datawell.tools.rewrite.joins import equi_joins, keyed_by, the_bridge, through
from datawell.tools.rewrite.sql import Source


def reroute_crossed_keys(
    select: exp.Select, sources: dict[str, Source], catalog: Catalog, defined: set[str], tree: exp.Expr
) -> list[str]:
    changes: list[str] = []
    read = {s.info.name for s in sources.values()}
    for join, target, (inner, outer) in equi_joins(select, sources):
        if inner.name.lower() == outer.name.lower():
            continue
        near, far = sources[outer.table.lower()], sources[target]
        keyed = (keyed_by(catalog, outer.name), keyed_by(catalog, inner.name))
        if not keyed[0] or not keyed[1] or keyed[0] & keyed[1]:
            continue
        bridge = the_bridge(catalog, read, near.info, far.info, outer.name, inner.name)
        if bridge is None:
            continue
        table, (near_key, far_key) = bridge
        read.add(table.name)
        through(select, join, table.name, defined, (outer.table, near_key), (inner.table, far_key))
        changes.append(
            f"{outer.sql(dialect=QL_DIALECT)} and {inner.sql(dialect=QL_DIALECT)} are keys of different tables: "
            f"{near.info.name} and {far.info.name} joined through {table.name} ({near_key}, {far_key})"
        )
    return changes
