"""`drop_dead_joins`, an on-refusal rule: it runs on each SELECT of a query the checker
refused, with the datasets the SELECT reads (moved out of tools/mend.py as it was, issue 47).

**A join that cannot run, of a table read for nothing else.** `FROM course AS t1 JOIN
program AS t2 ON t1.program_id = t2.program_id WHERE t2.department = 'X'`, where `course`
has no `program_id` and has `department` (read through `t1` by `requalify_columns`):
`program` was joined for `department` and is now read only in a condition that cannot run,
so its (inner) join goes.
"""

from __future__ import annotations

from sqlglot import exp

from datawell.tools.checker.allowed import QL_DIALECT
from datawell.tools.rewrite.sql import Source, inner_join


def drop_dead_joins(select: exp.Select, sources: dict[str, Source], tree: exp.Expr, read_for: set[str]) -> list[str]:
    """An inner join that cannot run, because its condition reads a column its table lacks, of a
    dataset the query was read through for columns that the rules above moved to another
    table, and that is now read nothing else of: the join goes. When that dataset is the
    FROM's, the inner join it is read in takes its place. (A join the model wrote for no
    column at all may stand for a filter it forgot: that one is left to the model.)"""
    changes: list[str] = []
    for alias, source in list(sources.items()):
        if alias not in read_for:
            continue
        joins = select.args.get("joins") or []
        conditions = [j for j in joins if j.args.get("on") is not None]
        read = [c for c in tree.find_all(exp.Column) if c.table.lower() == alias]
        mine = [j for j in conditions if any(c.find_ancestor(exp.Join) is j for c in read)]
        if len(mine) != 1 or any(c.find_ancestor(exp.Join) is not mine[0] for c in read):
            continue
        join = mine[0]
        if not inner_join(join):
            continue
        lacking = [c for c in join.args["on"].find_all(exp.Column) if not _runs(c, sources)]
        if not lacking:
            continue
        if join.this is source.node:
            join.pop()
        elif select.args["from_"].this is source.node:
            select.args["from_"].set("this", join.this.copy())
            join.pop()
        else:
            continue
        del sources[alias]
        said = ", ".join(dict.fromkeys(c.sql(dialect=QL_DIALECT) for c in lacking))
        changes.append(f"the join of {source.info.name} could not run ({said}) and nothing else read it: dropped")
    return changes


def _runs(column: exp.Column, sources: dict[str, Source]) -> bool:
    """Whether a join condition's column can be read: its qualifier's dataset has it (a
    qualifier that is no dataset of the SELECT, or none, is given the benefit of the doubt)."""
    source = sources.get(column.table.lower())
    return source is None or source.has(column.name)
