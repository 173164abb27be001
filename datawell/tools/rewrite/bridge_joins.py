"""`bridge_joins`, an on-refusal rule: it runs on each SELECT of a query the checker refused,
with the datasets the SELECT reads (moved out of tools/mend.py as it was, issue 47).

**The table a join skipped.** `FROM author AS a JOIN publication AS p ON a.aid = p.aid`,
where `publication` has no `aid` but exactly one other dataset (`writes`) has `aid` and
shares exactly one column with `publication` (`pid`): the join goes through it,
`JOIN writes ON a.aid = writes.aid JOIN publication AS p ON writes.pid = p.pid`.
"""

from __future__ import annotations

from sqlglot import exp

from datawell.tools.catalog import Catalog
from datawell.tools.rewrite.joins import equi_joins, the_link, through
from datawell.tools.rewrite.sql import Source


def bridge_joins(select: exp.Select, sources: dict[str, Source], catalog: Catalog, defined: set[str]) -> list[str]:
    """A join whose condition `a.x = b.x` reads a column `b`'s table lacks and `a`'s has, when
    one dataset links them (`the_link`): the join reads it between them (`a.x = w.x`, then
    `w.k = b.k`), with the same join kind."""
    changes: list[str] = []
    read = {s.info.name for s in sources.values()}
    for join, target, (inner, outer) in equi_joins(select, sources):
        if inner.name.lower() != outer.name.lower():
            continue
        lacking = sources[target]
        if lacking.has(inner.name) or not sources[outer.table.lower()].has(outer.name):
            continue
        link = the_link(catalog, read, lacking.info, {inner.name.lower()})
        if link is None:
            continue
        bridge, key = link
        read.add(bridge.name)
        through(select, join, bridge.name, defined, (outer.table, inner.name), (target, key))
        changes.append(
            f"{lacking.info.name} has no {inner.name}: joined through {bridge.name}, which has {inner.name} and {key}"
        )
    return changes
