"""Columns: every column names something a source offers, checked per scope."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sqlglot import exp
from sqlglot.errors import OptimizeError
from sqlglot.optimizer.scope import Scope, traverse_scope

from datawell.errors import QueryError, SubError
from datawell.tools.catalog import TableInfo
from datawell.tools.checker.allowed import INTERNAL_FIELDS, QL_DIALECT, SEMANTIC, did_you_mean, refuse


def scopes_of(tree: exp.Query) -> dict[int, Scope]:
    try:
        scopes = {id(s.expression): s for s in traverse_scope(tree)}
        for scope in scopes.values():
            scope.selected_sources  # noqa: B018 -- computed now so a duplicate alias is refused here
    except OptimizeError as exc:
        message = str(exc)
        if message.startswith("Alias already used: "):
            alias = message.removeprefix("Alias already used: ")
            raise refuse(f"two tables are called {alias!r}: give each its own alias", "duplicate_alias") from None
        raise refuse(f"the query cannot be analysed: {message}", "invalid_query") from None
    return scopes


def name_outputs(tree: exp.Query) -> None:
    """Name unnamed result columns alike on every store (SQLite would call `count(*)` "COUNT(*)",
    PostgreSQL "count"): a function by its name, a cast by what it casts, else by its own text."""
    select = tree
    while isinstance(select, exp.SetOperation):
        select = select.this
    if not isinstance(select, exp.Select):
        return
    named: list[exp.Expr] = []
    for projection in select.expressions:
        if isinstance(projection, exp.Alias | exp.Column | exp.Star):
            named.append(projection)
            continue
        inner = projection.this if isinstance(projection, exp.Cast) else projection
        if isinstance(inner, exp.Column) and not isinstance(inner.this, exp.Star):
            name = inner.name
        elif isinstance(inner, exp.Anonymous):
            name = inner.name.lower()
        elif isinstance(inner, exp.Func):
            name = inner.sql_name().lower()
        else:
            name = projection.sql(QL_DIALECT)
        named.append(exp.Alias(this=projection, alias=exp.to_identifier(name, quoted=True)))
    select.set("expressions", named)


Source = exp.Table | Scope


def source_of(entry: Any) -> Source:
    return entry[1] if isinstance(entry, tuple) else entry


def table_name_of(entry: Any) -> str | None:
    """The table a scope source reads directly, if it is a table."""
    source = source_of(entry)
    return source.name if isinstance(source, exp.Table) else None


def _selected_by(scope: Scope, column: exp.Column) -> bool:
    """Whether the column is (the whole of) one of the subquery's own selected values."""
    select = scope.expression
    if not isinstance(select, exp.Select) or scope.parent is None:
        return False
    return any(e.unalias() is column for e in select.expressions)


class ColumnChecker:
    """Every column names something: a dataset field, an output of a CTE or subquery, or a
    SELECT alias. Dataset fields match ignoring case and are rewritten to their exact spelling."""

    def __init__(self, by_physical: Mapping[str, TableInfo]) -> None:
        self.by_physical = by_physical
        self.resolved: dict[int, tuple[TableInfo, str]] = {}  # id(Column) -> dataset field
        self.known: dict[int, dict[str, str] | None] = {}  # id(source) -> its outputs
        self.problems: dict[str, SubError] = {}

    def check(self, scopes: Any) -> dict[int, tuple[TableInfo, str]]:
        seen: set[int] = set()
        for scope in scopes:  # innermost first: a column is checked in the scope that holds it
            if isinstance(scope.expression, exp.SetOperation):
                continue
            for column in scope.columns:
                if id(column) in seen or isinstance(column.this, exp.Star):
                    if isinstance(column.this, exp.Star) and column.table:
                        self._qualifier(scope, column)
                    continue
                seen.add(id(column))
                if isinstance(column.parent, exp.Anonymous) and column.parent.name.lower() == SEMANTIC:
                    continue  # semantic(orders, 'text') names a table, not a column
                self._column(scope, column)
        if self.problems:
            raise QueryError("the query names unknown columns", sub_errors=list(self.problems.values()))
        return self.resolved

    def outputs(self, source: Source) -> dict[str, str] | None:
        """lower name -> name of what a source offers; None when it cannot be known."""
        if id(source) not in self.known:
            self.known[id(source)] = self._outputs(source)
        return self.known[id(source)]

    def _outputs(self, source: Source) -> dict[str, str] | None:
        if isinstance(source, exp.Table):
            info = self.by_physical.get(source.name)
            if info is None:
                return None  # a recursive CTE naming itself
            return {n.lower(): n for n in [*info.columns, *INTERNAL_FIELDS]}
        node = source.expression
        while isinstance(node.parent, exp.SetOperation):  # a recursive CTE's first branch
            node = node.parent
        parent = node.parent
        alias = parent.args.get("alias") if isinstance(parent, exp.CTE | exp.Subquery) else None
        if alias is not None and alias.columns:
            return {c.name.lower(): c.name for c in alias.columns}
        expression = source.expression
        while isinstance(expression, exp.SetOperation):
            expression = expression.this
        if not isinstance(expression, exp.Select):
            return None
        names: dict[str, str] = {}
        for projection in expression.expressions:
            if isinstance(projection, exp.Star) or (
                isinstance(projection, exp.Column) and isinstance(projection.this, exp.Star)
            ):
                return None  # resolved by the database; a star over a dataset is complete anyway
            names[projection.alias_or_name.lower()] = projection.alias_or_name
        return names

    def _lookup(self, scope: Scope, name: str) -> Source | None:
        current: Scope | None = scope
        while current is not None:
            entry = current.selected_sources.get(name)
            if entry is not None:
                return source_of(entry)
            current = current.parent if current.can_be_correlated else None
        return None

    def _qualifier(self, scope: Scope, column: exp.Column) -> Source | None:
        source = self._lookup(scope, column.table)
        if source is None:
            names = list(scope.selected_sources)
            self.problems.setdefault(
                f"{column.table}.",
                SubError(
                    "unknown_table",
                    f"{column.table!r} in {column.sql(QL_DIALECT)} is not a table of this query{did_you_mean(column.table, names)}",
                ),
            )
        return source

    def _column(self, scope: Scope, column: exp.Column) -> None:
        name = column.name
        if column.table:
            source = self._qualifier(scope, column)
            if source is not None:
                self._match(column, [(column.table, source)], qualified=True)
            return
        current: Scope | None = scope
        while current is not None:
            sources = [(alias, source_of(entry)) for alias, entry in current.selected_sources.items()]
            if self._match(column, sources, qualified=False, quiet=True):
                if current is not scope and _selected_by(scope, column):
                    self._outer_selected(scope, column)
                return
            current = current.parent if current.can_be_correlated else None
        select = scope.expression
        if (
            isinstance(select, exp.Select)
            and isinstance(column.find_ancestor(exp.Group, exp.Having, exp.Select), exp.Group | exp.Having)
            and name.lower() in {n.lower() for n in select.named_selects}
        ):
            return  # GROUP BY / HAVING naming an output column
        candidates = self._scope_columns(scope)
        tables = ", ".join(scope.selected_sources) or "no table"
        self.problems.setdefault(
            name.lower(),
            SubError(
                "unknown_column",
                f"unknown column {name!r} (reading {tables}){did_you_mean(name, candidates)}"
                + self._available(candidates),
            ),
        )

    def _outer_selected(self, scope: Scope, column: exp.Column) -> None:
        """A subquery that selects, by bare name, a column only an outer query has:
        `pid IN (SELECT jid FROM domain)` compares each row with itself (issue 27)."""
        candidates = self._scope_columns(scope)
        tables = ", ".join(scope.selected_sources) or "no table"
        self.problems.setdefault(
            f"selected {column.name.lower()}",
            SubError(
                "unknown_column",
                f"the subquery selects {column.name!r}, which {tables} has not: it would read the outer query's "
                f"{column.name} and compare each row with itself{did_you_mean(column.name, candidates)}"
                + self._available(candidates),
            ),
        )

    def _scope_columns(self, scope: Scope) -> list[str]:
        """What the scope's own sources offer, for a refusal to list (internal fields left out)."""
        offered = [n for _, s in scope.selected_sources.items() for n in (self.outputs(source_of(s)) or {}).values()]
        return [c for c in offered if c not in INTERNAL_FIELDS]

    @staticmethod
    def _available(candidates: list[str]) -> str:
        if not candidates or len(candidates) > 40:
            return ""
        return "; available columns: " + ", ".join(dict.fromkeys(candidates))

    def _match(
        self, column: exp.Column, sources: list[tuple[str, Source]], *, qualified: bool, quiet: bool = False
    ) -> bool:
        """Find the column among `sources`; on a dataset field, rewrite it to the exact name."""
        name = column.name.lower()
        hits: list[tuple[str, Source, str | None]] = []
        for alias, source in sources:
            outputs = self.outputs(source)
            if outputs is None:
                hits.append((alias, source, None))
            elif name in outputs:
                hits.append((alias, source, outputs[name]))
        known = [h for h in hits if h[2] is not None]
        if len(known) > 1:
            self.problems.setdefault(
                name,
                SubError(
                    "ambiguous_column",
                    f"column {column.name!r} is in {' and '.join(a for a, _, _ in known)}: "
                    f"write {' or '.join(f'{a}.{column.name}' for a, _, _ in known)}",
                ),
            )
            return True
        if known:
            alias, source, exact = known[0]
            if isinstance(source, exp.Table) and exact is not None:
                info = self.by_physical[source.name]
                column.set("this", exp.to_identifier(exact, quoted=True))
                self.resolved[id(column)] = (info, exact)
            return True
        if hits:
            return True  # a source whose columns cannot be known: the database decides
        if qualified and not quiet:
            alias, source = sources[0]
            candidates = [c for c in (self.outputs(source) or {}).values() if c not in INTERNAL_FIELDS]
            self.problems.setdefault(
                f"{alias}.{name}",
                SubError(
                    "unknown_column",
                    f"{alias} has no column {column.name!r}{did_you_mean(column.name, candidates)}"
                    + self._available(candidates),
                ),
            )
            return True
        return False
