"""`join_missing_table`, an on-refusal rule: it runs on each SELECT of a query the checker
refused, with the datasets the SELECT reads (moved out of tools/mend.py as it was, issue 47).

**The table a query did not join.** `SELECT airline_name FROM flight` (or `t1.airline_name`
with `flight AS t1` among other tables), where no table of the SELECT has `airline_name` and
exactly one dataset not read yet has every such column and shares exactly one column with
`flight` (`airline`, by `airline_code`): it is joined on that column.
A name that is another dataset's name and one of its columns (`warehouse_name` of
`stock_levels`, where `warehouses` has `name` and shares `warehouse_code`) is that column,
joined the same way.
"""

from __future__ import annotations

from sqlglot import exp

from datawell.tools.catalog import Catalog
from datawell.tools.coverage import singular
from datawell.tools.rewrite.joins import new_table, the_link
from datawell.tools.rewrite.sql import Source, output_names, own_columns


def join_missing_table(
    select: exp.Select, sources: dict[str, Source], catalog: Catalog, defined: set[str]
) -> list[str]:
    """Columns read through a table (by its alias, or by bare name when it is the SELECT's only
    table) that neither it nor any other table of the SELECT has: when one dataset not read
    yet has all of them and shares exactly one column `k` with the table, it is joined on `k`
    and the names are read through it (in a one-table query every name is qualified, as a name
    both tables have would be ambiguous)."""
    alone = len(sources) == 1 and not select.args.get("joins")
    outputs = output_names(select)
    read = {s.info.name for s in sources.values()}
    changes: list[str] = []
    for alias, source in list(sources.items()):
        mine = [
            c
            for c in own_columns(select)
            if (c.table.lower() == alias or (alone and not c.table))
            and c.name.lower() not in outputs
            and c.find_ancestor(exp.Join) is None
        ]
        missing = {c.name.lower() for c in mine if not any(s.has(c.name) for s in sources.values())}
        if not missing:
            continue
        names = {name: name for name in missing}  # as the query reads it -> as the joined dataset has it
        link = the_link(catalog, read, source.info, missing)
        if link is None and (prefixed := _prefixed(catalog, missing)) is not None:
            table_name, names = prefixed
            link = the_link(catalog, read, source.info, set(names.values()), only=table_name)
        if link is None:
            continue
        joined, key = link
        read.add(joined.name)
        spelled = source.node.alias_or_name  # as the query writes it
        table, other = new_table(joined.name, defined)
        select.join(
            table, on=exp.EQ(this=exp.column(key, table=spelled), expression=exp.column(key, table=other)), copy=False
        )
        for column in mine:
            name = column.name.lower()
            if name not in missing:
                column.set("table", exp.to_identifier(spelled))
            elif names[name] == name:
                column.set("table", exp.to_identifier(other))
            else:  # `warehouse_name` is warehouses.name, and keeps its name as an output
                renamed = exp.column(names[name], table=other)
                keep = isinstance(column.parent, exp.Select) and column in column.parent.expressions
                column.replace(exp.alias_(renamed, column.name) if keep else renamed)
        said = ", ".join(n if names[n] == n else f"{n} ({joined.name}.{names[n]})" for n in sorted(missing))
        changes.append(f"{source.info.name} has no {said}: joined {joined.name} on {key}")
    return changes


def _prefixed(catalog: Catalog, missing: set[str]) -> tuple[str, dict[str, str]] | None:
    """When every missing name is a dataset's name (or its singular) and one of its columns
    (`warehouse_name`: `warehouses.name`), that dataset and the column each name stands for."""
    found: dict[str, set[tuple[str, str]]] = {}
    for name in missing:
        found[name] = {
            (table.name, column.lower())
            for table in catalog.tables
            for column in table.columns
            for prefix in {table.name.lower(), singular(table.name.lower())}
            if name == f"{prefix}_{column.lower()}"
        }
    tables = {table for pairs in found.values() for table, _ in pairs}
    if len(tables) != 1 or any(len(pairs) != 1 for pairs in found.values()):
        return None
    return tables.pop(), {name: next(iter(pairs))[1] for name, pairs in found.items()}
