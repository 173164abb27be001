"""`filter_where_stored`, a before-run rule that looks values up: tools/literals.match_literals
calls it with the column that stores a filter's text (moved out of tools/mend.py as it was,
issue 47).

**A text filtered on a column that does not store it.** `organization.name = 'Machine
Learning'`, where `domain.name` stores it: the filter reads the storing column, through
its alias when the SELECT reads its table, else with the table joined from the one table
of the SELECT that holds its key, or that one dataset links to it by both tables' keys
(`author` through `domain_author`); more than one way, or none, leaves it alone.
"""

from __future__ import annotations

from collections.abc import Callable

import sqlglot
from sqlglot import exp

from datawell.tools.catalog import Catalog, TableInfo
from datawell.tools.checker.allowed import QL_DIALECT
from datawell.tools.rewrite.change import Mended
from datawell.tools.rewrite.joins import key_names, new_table, the_bridge
from datawell.tools.rewrite.sql import Source, aliases, sources_of, spelling


def filter_where_stored(query: str, catalog: Catalog, text: str, holder: tuple[str, str], stored: str) -> Mended:
    """The query with its comparisons of a column with `text` (`=`, of a SELECT that reads the
    column's table) read on the column `holder` (table, column) that stores it instead, as
    `stored` (its spelling there): through
    the holder's alias when the SELECT reads that table, else with the holder joined from the one
    table of the SELECT that holds its key (`author.oid` for organization) or that one dataset
    links to it by both keys (`domain_author` from author to domain); unchanged when no path,
    or more than one, leads there."""
    name, column = holder

    def refilter(
        select: exp.Select, sources: dict[str, Source], catalog: Catalog, defined: set[str], tree: exp.Expr
    ) -> list[str]:
        found = [
            eq
            for eq in select.find_all(exp.EQ)
            if eq.find_ancestor(exp.Select) is select and eq.find_ancestor(exp.Join) is None
            if isinstance(eq.this, exp.Column) and isinstance(eq.expression, exp.Literal)
            if eq.expression.is_string and eq.expression.this == text
        ]
        info = catalog.table(name)
        if not found or info is None or not sources:
            return []
        alias = next((a for a, s in sources.items() if s.info.name == name), None)
        if alias is not None:
            spelled = sources[alias].node.alias_or_name
            if len(sources) == 1 and all(not eq.this.table for eq in found):
                spelled = ""  # the only table's columns, unqualified as written
        elif (path := _path_to(catalog, sources, info)) is not None:
            spelled = _join_path(select, sources, info, path, defined)
        else:
            return []
        said = ", ".join(dict.fromkeys(eq.this.sql(dialect=QL_DIALECT) for eq in found))
        for eq in found:
            eq.set("this", exp.column(spelling(info, column), table=spelled or None))
            eq.set("expression", exp.Literal.string(stored))
        return [f"{said} holds no {text!r}; {name}.{column} holds {stored!r}: the filter reads it"]

    return _apply(query, catalog, refilter)


# A way from a table of the SELECT (by alias) to another: its column holding the other's key,
# or a dataset holding both tables' own keys with the two names.
_Path = tuple[str, str | tuple[TableInfo, tuple[str, str]]]


def _path_to(catalog: Catalog, sources: dict[str, Source], far: TableInfo) -> _Path | None:
    read = {s.info.name for s in sources.values()}
    paths: list[_Path] = []
    for alias, source in sources.items():
        keys = [k for k in key_names(far) if source.has(k)]
        if keys:
            paths.append((alias, keys[0]))
        elif (bridge := the_bridge(catalog, read, source.info, far, "", "")) is not None:
            paths.append((alias, bridge))
    return paths[0] if len(paths) == 1 else None


def _join_path(select: exp.Select, sources: dict[str, Source], far: TableInfo, path: _Path, defined: set[str]) -> str:
    """Joins `far` along `path`; the name its columns are read through."""
    alias, way = path
    near = sources[alias].node.alias_or_name
    if isinstance(way, str):
        key = spelling(far, way)
        table, spelled = new_table(far.name, defined)
        select.join(
            table, on=exp.EQ(this=exp.column(key, table=near), expression=exp.column(key, table=spelled)), copy=False
        )
        return spelled
    bridge, (near_key, far_key) = way
    link, linked = new_table(bridge.name, defined)
    on = exp.EQ(
        this=exp.column(spelling(sources[alias].info, near_key), table=near),
        expression=exp.column(near_key, table=linked),
    )
    select.join(link, on=on, copy=False)
    table, spelled = new_table(far.name, defined)
    on = exp.EQ(this=exp.column(far_key, table=linked), expression=exp.column(spelling(far, far_key), table=spelled))
    select.join(table, on=on, copy=False)
    return spelled


_PerSelect = Callable[[exp.Select, dict[str, Source], Catalog, set[str], exp.Expr], list[str]]


def _apply(query: str, catalog: Catalog, rule: _PerSelect) -> Mended:
    """`rule` run on each SELECT of the query (with the datasets it reads and every name
    defined in the query), and what it changed; the query as it was when nothing changed."""
    try:
        tree = sqlglot.parse_one(query, read=QL_DIALECT)
    except sqlglot.errors.SqlglotError:
        return Mended(query)
    changes: list[str] = []
    defined = aliases(tree)
    for select in list(tree.find_all(exp.Select)):
        changes += rule(select, sources_of(select, catalog), catalog, defined, tree)
    return Mended(tree.sql(dialect=QL_DIALECT), list(dict.fromkeys(changes))) if changes else Mended(query)
