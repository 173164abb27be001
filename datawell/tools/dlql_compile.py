"""A parsed DataLinks query (`tools.dlql`) compiled to the QL: one table per dataset reached,
joined along its links, the conditions quoted and checked against each table's fields."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from datawell.errors import QueryError, SubError
from datawell.tools.dlql import Compare, Condition, FieldName, Hop, Logical, Negation, Query


@dataclass(frozen=True)
class Table:
    """A dataset as the QL names it, with its fields."""

    path: str  # owner/namespace/dataset
    ql_name: str
    fields: Sequence[str]


@dataclass(frozen=True)
class Join:
    """The active link a `searchAround` follows: field of the previous hop, field of the next."""

    from_field: str
    to_field: str


def identifier(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def literal(value: Any) -> str:
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, int | float):
        return repr(value)
    return "'" + str(value).replace("'", "''") + "'"


def text_match(column: str, operator: str, value: str) -> str:
    """contains / startsWith / endsWith, ignoring case (ASCII letters on SQLite), in functions
    sqlglot writes for either store (LIKE would take `%` and `_` in the value as wildcards)."""
    text = f"LOWER(CAST({column} AS TEXT))"
    wanted = literal(value.lower())
    if operator == "contains":
        return f"INSTR({text}, {wanted}) > 0"
    if operator == "startsWith":
        return f"INSTR({text}, {wanted}) = 1"
    return f"SUBSTR({text}, LENGTH({text}) - {len(value)} + 1) = {wanted}"


def checked_field(name: FieldName, table: Table) -> str:
    if name.name in table.fields:
        return identifier(name.name)
    known = ", ".join(table.fields) or "none"
    raise QueryError(
        f"no field {name.name!r} in {table.path} at {name.at}",
        sub_errors=[SubError("unknown_field", f"{name.at}: {table.path} has no field {name.name!r} (fields: {known})")],
    )


def condition_sql(condition: Condition, table: Table) -> str:
    match condition:
        case Logical(operator=operator, parts=parts):
            return "(" + f" {operator} ".join(condition_sql(p, table) for p in parts) + ")"
        case Negation(part=part):
            return f"NOT ({condition_sql(part, table)})"
        case Compare(field=name, operator=operator, value=value):
            column = checked_field(name, table)
            if operator in ("contains", "startsWith", "endsWith"):
                return text_match(column, operator, value)
            if operator in ("in", "not in"):
                listed = ", ".join(literal(v) for v in value if v is not None)
                return f"{column} {operator.upper()} ({listed})"
            if operator in ("is null", "is not null"):
                return f"{column} {operator.upper()}"
            return f"{column} {operator} {literal(value)}"
    raise AssertionError(condition)


def where(hop: Hop, table: Table, reached: str | None) -> str:
    parts = [condition_sql(c, table) for c in hop.conditions]
    if reached is not None:
        parts.insert(0, reached)
    return f" WHERE {' AND '.join(parts)}" if parts else ""


def compile_query(query: Query, tables: Sequence[Table], joins: Sequence[Join]) -> str:
    """The QL for a parsed query, given each hop's table and the link between hops."""
    reached: str | None = None
    for index in range(len(query.hops) - 1):
        hop, table, join = query.hops[index], tables[index], joins[index]
        inner = f"SELECT {identifier(join.from_field)} FROM {table.ql_name}{where(hop, table, reached)}"
        reached = f"{identifier(join.to_field)} IN ({inner})"
    last, table = query.hops[-1], tables[-1]
    columns = ", ".join(checked_field(f, table) for f in query.fields) if query.fields else "*"
    sql = f"SELECT {columns} FROM {table.ql_name}{where(last, table, reached)}"
    if query.order is not None:
        name, descending = query.order
        sql += f" ORDER BY {checked_field(name, table)}{' DESC' if descending else ''}"
    if query.limit is not None:
        sql += f" LIMIT {query.limit}"
    return sql


def hop_join(previous: Table, hop: Hop, links: Sequence[tuple[str, str, str, str]]) -> tuple[str, Join]:
    """The dataset path `hop` reaches from `previous` and the join, among active links given
    as (dataset path, field, dataset path, field) in both directions."""
    candidates = [
        (to_path, Join(from_field, to_field))
        for from_path, from_field, to_path, to_field in links
        if from_path == previous.path and (hop.dataset is None or to_path.endswith(str(hop.dataset)))
    ]
    target = str(hop.dataset) if hop.dataset is not None else "a linked dataset"
    if not candidates:
        raise QueryError(
            f"no active link from {previous.path} to {target} at {hop.at}",
            sub_errors=[
                SubError(
                    "no_link", f"{hop.at}: searchAround() follows active links; none joins {previous.path} to {target}"
                )
            ],
        )
    if len({path for path, _ in candidates}) > 1 and hop.dataset is None:
        reachable = ", ".join(sorted({path for path, _ in candidates}))
        raise QueryError(
            f"searchAround() at {hop.at} could go to several datasets: {reachable}",
            sub_errors=[SubError("ambiguous_link", f"{hop.at}: name one of {reachable}")],
        )
    return candidates[0]
