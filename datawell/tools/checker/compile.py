"""Compiling a parsed query for a store: physical tables, row metadata, the row cap."""

from __future__ import annotations

from collections.abc import Mapping

from sqlglot import exp
from sqlglot.optimizer.scope import Scope

from datawell.errors import QueryError
from datawell.tools.catalog import TableInfo
from datawell.tools.checker.allowed import (
    DIALECTS,
    ID_COLUMN,
    NAIVE_TIMESTAMP,
    SCORE_COLUMN,
    CompiledQuery,
    ParsedQuery,
    TableRef,
)
from datawell.tools.checker.columns import ColumnChecker, name_outputs, scopes_of, source_of
from datawell.tools.checker.dates import date_misuse, day_differences, period_equalities
from datawell.tools.checker.dialects import adapt, cap_growing_values, sqlite_function_for
from datawell.tools.checker.semantic import Semantic


def compile_query(
    parsed: ParsedQuery, tables: Mapping[TableRef, TableInfo], target: str, row_cap: int
) -> CompiledQuery:
    """Check columns and semantic() against the resolved tables and produce the SQL for `target`
    (a sqlglot dialect). Raises QueryError naming every unknown column with close matches."""
    tree = parsed.tree
    by_physical = _use_physical_tables(parsed, tables)
    name_outputs(tree)
    scopes = scopes_of(tree)
    resolved = ColumnChecker(by_physical).check(scopes.values())
    # --- issue 27: date functions only on columns that hold dates (checker/dates.py) ---
    misused = date_misuse(tree, resolved)
    if misused:
        raise QueryError("the query applies date functions to columns that hold no dates", sub_errors=misused)
    for function in [*day_differences(tree, resolved), *period_equalities(tree, resolved)]:
        function.replace(sqlite_function_for(function, target))
    # --- end issue 27 ---
    semantic = Semantic(by_physical, scopes, target)
    semantic.rewrite(parsed.semantic)
    dataset, kinds = _mark_rows(tree, scopes, by_physical, resolved, semantic)
    _cap(tree, row_cap)
    adapt(parsed.adaptable, target)
    if target == "postgres":
        cap_growing_values(tree)
    sql = tree.sql(dialect=DIALECTS[target], copy=False, identify=True, comments=False)
    read = list({t.physical: t for t in by_physical.values()}.values())
    if dataset is None and len(read) == 1:
        dataset = read[0]
    return CompiledQuery(
        text=parsed.text,
        sql=semantic.with_ctes(sql),
        target=target,
        searches=semantic.searches,
        tables=read,
        dataset=dataset,
        kinds=kinds,
    )


def _use_physical_tables(parsed: ParsedQuery, tables: Mapping[TableRef, TableInfo]) -> dict[str, TableInfo]:
    """Swap each dataset reference for its row table, aliased to the name the query uses."""
    by_physical: dict[str, TableInfo] = {}
    for table, ref in parsed.tables:
        info = tables[ref]
        by_physical[info.physical] = info
        alias = table.args.get("alias") or exp.TableAlias(this=exp.to_identifier(table.name, quoted=table.this.quoted))
        table.replace(exp.Table(this=exp.to_identifier(info.physical, quoted=True), alias=alias))
    return by_physical


def _aggregated(select: exp.Select) -> bool:
    if select.args.get("group") or select.args.get("distinct") or select.args.get("having"):
        return True
    for projection in select.expressions:
        for node in projection.find_all(exp.AggFunc):
            if node.find_ancestor(exp.Window, exp.Select) is select:
                return True
    return False


def _mark_rows(
    tree: exp.Query,
    scopes: Mapping[int, Scope],
    by_physical: Mapping[str, TableInfo],
    resolved: Mapping[int, tuple[TableInfo, str]],
    semantic: Semantic,
) -> tuple[TableInfo | None, dict[str, str]]:
    """Add hidden id and score columns when result rows are rows of one dataset, and note the
    field types of result columns so values come back alike from every store."""
    if not isinstance(tree, exp.Select):
        return None, {}
    scope = scopes[id(tree)]
    kinds: dict[str, str] = {}
    for projection in tree.expressions:
        inner = projection.unalias()
        if isinstance(inner, exp.Star) or (isinstance(inner, exp.Column) and isinstance(inner.this, exp.Star)):
            for alias, entry in scope.selected_sources.items():
                source = source_of(entry)
                if (
                    isinstance(source, exp.Table)
                    and source.name in by_physical
                    and (isinstance(inner, exp.Star) or inner.table == alias)
                ):
                    kinds.update(by_physical[source.name].columns)
        elif (kind := _kind(inner, resolved)) is not None:
            kinds[projection.alias_or_name] = kind
    from_ = tree.args.get("from_")
    first = from_.this if from_ is not None else None
    if not isinstance(first, exp.Table) or first.name not in by_physical:
        return None, kinds
    dataset = by_physical[first.name]
    if _aggregated(tree):
        return dataset, kinds
    tree.select(exp.column("__id", table=first.alias_or_name, quoted=True).as_(ID_COLUMN, quoted=True), copy=False)
    score = semantic.scores.get(id(tree))
    if score is not None:
        tree.select(score.as_(SCORE_COLUMN, quoted=True), copy=False)
    return dataset, kinds


def _kind(node: exp.Expr, resolved: Mapping[int, tuple[TableInfo, str]]) -> str | None:
    """The field type of a result column where the expression tells it: a column's own, or a
    timestamp the query computes (SQLite returns those as text, in its own spelling).
    PostgreSQL's `timestamp` (a cast) has no zone, its `timestamptz` (everything else) has."""
    if id(node) in resolved:
        info, exact = resolved[id(node)]
        return info.columns.get(exact, "text")
    if isinstance(node, exp.Paren):
        return _kind(node.this, resolved)
    if isinstance(node, exp.Cast):
        return {exp.DType.TIMESTAMP: NAIVE_TIMESTAMP, exp.DType.TIMESTAMPTZ: "timestamp"}.get(node.to.this)
    if isinstance(node, exp.StrToTime | exp.UnixToTime | exp.CurrentTimestamp):
        return "timestamp"
    if isinstance(node, exp.TimestampTrunc | exp.DateTrunc):
        return NAIVE_TIMESTAMP if _kind(node.this, resolved) == NAIVE_TIMESTAMP else "timestamp"
    if isinstance(node, exp.Add | exp.Sub) and isinstance(node.expression, exp.Interval):
        kind = _kind(node.this, resolved)
        return kind if kind in ("timestamp", NAIVE_TIMESTAMP) else None
    return None


def _cap(tree: exp.Query, row_cap: int) -> None:
    """At most `row_cap` + 1 rows: the extra one tells the caller the result was cut."""
    limit = tree.args.get("limit")
    given = limit.expression if isinstance(limit, exp.Limit) else None
    if isinstance(given, exp.Literal) and given.is_int and int(given.this) <= row_cap:
        return
    tree.limit(row_cap + 1, copy=False)
