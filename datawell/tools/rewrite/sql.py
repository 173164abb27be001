"""What the rules read of a parsed query: the datasets a SELECT reads (`Source`, by alias), the
names a query defines, the columns a SELECT reads itself, and a column's name as its table
spells it. Shared by the rules; none of it rewrites anything."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from sqlglot import exp

from datawell.tools.catalog import Catalog, TableInfo


@dataclass
class Source:
    """A dataset a SELECT reads, as the query names it (`node`) and as the catalog has it."""

    node: exp.Table
    info: TableInfo

    def has(self, column: str) -> bool:
        return column.lower() in {c.lower() for c in self.info.columns}


def sources_of(select: exp.Select, catalog: Catalog) -> dict[str, Source]:
    """The datasets a SELECT reads directly, by the alias its columns use (lower case)."""
    found: dict[str, Source] = {}
    by_name = {t.name.lower(): t for t in catalog.tables}
    for node in joined_tables(select):
        if not node.db and (info := by_name.get(node.name.lower())):
            found[node.alias_or_name.lower()] = Source(node, info)
    return found


def joined_tables(select: exp.Select) -> list[exp.Table]:
    """The tables of the SELECT's FROM and joins (not its subqueries')."""
    from_ = select.args.get("from_")
    nodes = [from_.this] if from_ is not None else []
    nodes += [join.this for join in select.args.get("joins") or []]
    return [n for n in nodes if isinstance(n, exp.Table)]


def aliases(tree: exp.Expr) -> set[str]:
    """Every name a column may be qualified with anywhere in the query: tables, their aliases,
    subqueries' and CTEs' names (an outer query's alias is a correlated subquery's to use)."""
    named = [t.alias_or_name for t in tree.find_all(exp.Table)]
    named += [s.alias for s in tree.find_all(exp.Subquery) if s.alias]
    named += [c.alias for c in tree.find_all(exp.CTE) if c.alias]
    return {n.lower() for n in named}


def qualifiers_read(tree: exp.Expr) -> set[str]:
    """The qualifiers the query reads a column through outside join conditions."""
    return {c.table.lower() for c in tree.find_all(exp.Column) if c.find_ancestor(exp.Join) is None}


def own_columns(select: exp.Select) -> list[exp.Column]:
    """The columns this SELECT reads itself (not those of its subqueries)."""
    return [c for c in select.find_all(exp.Column) if c.name and c.find_ancestor(exp.Select) is select]


def output_names(select: exp.Select) -> set[str]:
    """The names the SELECT gives its outputs (`AS n`), which ORDER BY may read as columns."""
    return {e.alias.lower() for e in select.expressions if e.alias}


def unknown_columns(select: exp.Select, sources: dict[str, Source]) -> Iterator[tuple[exp.Column, Source]]:
    """The columns of the SELECT that no table of it has (not its outputs' names), each with
    the table it is read through: its qualifier's, or the only one."""
    named = output_names(select)
    for column in own_columns(select):
        qualifier = column.table.lower()
        owner = sources.get(qualifier) if qualifier else next(iter(sources.values())) if len(sources) == 1 else None
        if owner is None or column.name.lower() in named or any(s.has(column.name) for s in sources.values()):
            continue
        yield column, owner


def holder_of(column: exp.Column, sources: dict[str, Source]) -> Source | None:
    """The one table of the SELECT the column is read from (by its qualifier, or the only
    table that has it), else None."""
    holders = [s for a, s in sources.items() if s.has(column.name) and column.table.lower() in ("", a)]
    return holders[0] if len(holders) == 1 else None


def spelling(info: TableInfo, name: str) -> str:
    """The column's name as the table spells it."""
    return next((c for c in info.columns if c.lower() == name.lower()), name)


def inner_join(join: exp.Join) -> bool:
    """Whether the join is an inner one (`JOIN` or `INNER JOIN`): dropping an outer join would
    lose the rows it keeps."""
    return not join.args.get("side") and join.args.get("kind") in (None, "INNER")


@dataclass(frozen=True)
class TextFilter:
    """A comparison of a text column of one catalog table with a text literal."""

    comparison: exp.Expr
    column: exp.Column
    literal: exp.Literal
    table: TableInfo


def literal_side(comparison: exp.Expr) -> tuple[exp.Column, exp.Literal] | None:
    left, right = comparison.this, comparison.expression
    if isinstance(left, exp.Column) and isinstance(right, exp.Literal) and right.is_string:
        return left, right
    if isinstance(right, exp.Column) and isinstance(left, exp.Literal) and left.is_string:
        return right, left
    return None


def text_filters(tree: exp.Expr, catalog: Catalog, kinds: tuple[type[exp.Expr], ...] = (exp.EQ,)) -> list[TextFilter]:
    """The `text column = 'literal'` comparisons (or of another of `kinds`) whose column is
    one catalog table's."""
    found = []
    for comparison in list(tree.find_all(*kinds)):
        sides = literal_side(comparison)
        select = comparison.find_ancestor(exp.Select)
        if sides is None or select is None:
            continue
        column, literal = sides
        sources = {}
        for table in select.find_all(exp.Table):
            if table.find_ancestor(exp.Select) is not select:
                continue
            name = ".".join(p for p in (table.catalog, table.db, table.name) if p)
            info = catalog.table(name)
            if info is not None:
                sources[table.alias_or_name] = info
        if column.table:
            candidates = [sources[column.table]] if column.table in sources else []
        else:
            candidates = [t for t in sources.values() if column.name in t.columns]
        if len(candidates) == 1 and candidates[0].columns.get(column.name) == "text":
            found.append(TextFilter(comparison, column, literal, candidates[0]))
    return found
