"""Keys and links between datasets, for the rules that join a table or reroute a join: a
table's own key by its name (`key_names`), the one dataset that links two tables (`the_bridge`,
`the_link`), a SELECT's equi-joins, and a join read through a linking dataset (`through`)."""

from __future__ import annotations

from collections.abc import Iterator

from sqlglot import exp

from datawell.tools.catalog import Catalog, TableInfo
from datawell.tools.coverage import singular
from datawell.tools.rewrite.sql import Source, spelling


def key_names(table: TableInfo) -> set[str]:
    """A table's own key, by its name, among its columns: its singular with `_id`, `_code`,
    `_no` or `_number`; else its name's last word's; else, for a one-word name, its initial
    with `id`."""
    columns = {c.lower() for c in table.columns}
    whole = singular(table.name.lower())
    for stem in (whole, singular(whole.rsplit("_", 1)[-1])):  # `offering_id` of course_offering
        if names := {f"{stem}_{suffix}" for suffix in ("id", "code", "no", "number")} & columns:
            return names
    if "_" in whole:  # domain_journal is a link, not a thing with a key
        return set()
    return {f"{whole[:1]}id"} & columns  # academic's `aid` of author, `pid` of publication


def keyed_by(catalog: Catalog, column: str) -> set[str]:
    """The tables whose key a column of this name is, by its name (`key_names`)."""
    name = column.lower()
    return {table.name for table in catalog.tables if name in key_names(table)}


def the_bridge(
    catalog: Catalog, read: set[str], near: TableInfo, far: TableInfo, near_column: str, far_column: str
) -> tuple[TableInfo, tuple[str, str]] | None:
    """The one dataset not read yet that holds both tables' own keys, else the one that holds
    both columns the join named, with the two column names (the near table's first)."""
    own = (key_names(near), key_names(far))
    pairs = [(a, b) for a in own[0] for b in own[1] if a != b]
    for pair in [*pairs, (near_column.lower(), far_column.lower())]:
        holders = [t for t in catalog.tables if t.name not in read and set(pair) <= {c.lower() for c in t.columns}]
        if len(holders) > 1:  # the one whose own key is one of the two: course_offering's offering_id
            keyed = [t for t in holders if key_names(t) & set(pair)]
            if len(keyed) != 1:
                return None  # more than one path: the model's is as good a guess as any
            holders = keyed
        if holders:
            return holders[0], (spelling(holders[0], pair[0]), spelling(holders[0], pair[1]))
    return None


def the_link(
    catalog: Catalog, skipped: set[str], lacking: TableInfo, needed: set[str], only: str | None = None
) -> tuple[TableInfo, str] | None:
    """The one dataset (`only` that one), not among `skipped`, that has every `needed` column
    (lower case) and shares exactly one other column with `lacking` (not `id`: two tables'
    `id` are each its own rows), with that column; None when there is not exactly one."""
    theirs = {c.lower() for c in lacking.columns}
    links = []
    for table in catalog.tables:
        if table.name in skipped or (only is not None and table.name != only):
            continue
        columns = {c.lower() for c in table.columns}
        shared = (columns & theirs) - needed - {"id"}  # `id` is each table's own row, no link
        if needed <= columns and len(shared) == 1:
            links.append((table, shared.pop()))
    return links[0] if len(links) == 1 else None


def equi_joins(
    select: exp.Select, sources: dict[str, Source]
) -> Iterator[tuple[exp.Join, str, tuple[exp.Column, exp.Column]]]:
    """Each join of a dataset of the SELECT on `x = y` of its own column and one of another
    table of the SELECT: the join, its dataset's alias, and the columns (its own first)."""
    for join in list(select.args.get("joins") or []):
        condition = join.args.get("on")
        target = next((a for a, s in sources.items() if s.node is join.this), None)
        if target is None or not isinstance(condition, exp.EQ):
            continue
        sides = [c for c in (condition.left, condition.right) if isinstance(c, exp.Column)]
        inner = next((c for c in sides if c.table.lower() == target), None)
        outer = next((c for c in sides if c.table.lower() != target and c.table.lower() in sources), None)
        if len(sides) == 2 and inner is not None and outer is not None:
            yield join, target, (inner, outer)


def new_table(name: str, defined: set[str]) -> tuple[exp.Table, str]:
    """A table node for dataset `name`, aliased `name_via` when the query already uses `name`,
    with the name its columns are to be read through (now taken)."""
    alias = name if name.lower() not in defined else f"{name}_via"
    defined.add(alias.lower())
    table = exp.Table(this=exp.to_identifier(name))
    if alias != name:
        table.set("alias", exp.TableAlias(this=exp.to_identifier(alias)))
    return table, alias


def through(
    select: exp.Select, join: exp.Join, bridge: str, defined: set[str], near: tuple[str, str], far: tuple[str, str]
) -> None:
    """`join` read through dataset `bridge`, joined before it with the same kind: on
    `near_alias.column = bridge.column`, then `bridge.column = far_alias.column` (`near` and
    `far` are each an alias and a column)."""
    (near_alias, near_column), (far_alias, far_column) = near, far
    table, alias = new_table(bridge, defined)
    on = exp.EQ(this=exp.column(near_column, table=near_alias), expression=exp.column(near_column, table=alias))
    joins = select.args["joins"]
    joins.insert(joins.index(join), exp.Join(this=table, on=on, kind=join.args.get("kind"), side=join.args.get("side")))
    join.set("on", exp.EQ(this=exp.column(far_column, table=alias), expression=exp.column(far_column, table=far_alias)))
