"""Fake query tools for graph tests (the graphs' `tools.ql.Queries`): a small catalog, a checker that knows the tables and
columns (parsed with sqlglot, as the real one does), and canned rows per query. It records
who ran what, so tests can prove whose access every query used."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import sqlglot
from sqlglot import exp

from datawell.errors import QueryError, SubError
from datawell.storage.access import Caller, NamespaceRef
from datawell.tools.catalog import Catalog, TableInfo
from datawell.tools.checker import CompiledQuery
from datawell.tools.ql import LinkEnds, QueryResult, Who


class TextCatalog(Catalog):
    def render(self) -> str:
        return "\n".join(
            f"table {t.name}: {t.description}\n" + "\n".join(f"  {c} ({k})" for c, k in t.columns.items())
            for t in self.tables
        )


def table(namespace: NamespaceRef, name: str, columns: dict[str, str], description: str = "") -> TableInfo:
    return TableInfo(
        name=name,
        dataset_id=f"id-{name}",
        namespace=namespace,
        physical=f"rows_{name}",
        description=description or name,
        columns=columns,
        column_descriptions={},
    )


def name_of(who: Who) -> str:
    return who.name if isinstance(who, Caller) else who.username


@dataclass
class Call:
    method: str
    user: str
    namespace: str
    query: str = ""


@dataclass
class FakeQueryTools:
    tables: list[TableInfo] = field(default_factory=list)
    rows: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # query -> rows
    run_errors: dict[str, str] = field(default_factory=dict)  # query -> run-time error
    active_links: dict[str, list[LinkEnds]] = field(default_factory=dict)  # namespace id -> its active links
    calls: list[Call] = field(default_factory=list)

    async def catalog(self, who: Who, namespace: NamespaceRef) -> Catalog:
        self.calls.append(Call("catalog", name_of(who), str(namespace)))
        return TextCatalog(namespace=namespace, tables=[t for t in self.tables if t.namespace.id == namespace.id])

    async def links(self, who: Who, namespace: NamespaceRef) -> list[LinkEnds]:
        return self.active_links.get(namespace.id, [])

    async def check(self, who: Who, namespace: NamespaceRef, query: str) -> str:
        return (await self.prepare(who, namespace, query)).sql

    async def prepare(self, who: Who, namespace: NamespaceRef, query: str) -> CompiledQuery:
        self.calls.append(Call("check", name_of(who), str(namespace), query))
        try:
            parsed = sqlglot.parse(query)
        except sqlglot.errors.ParseError as exc:
            raise QueryError("the query does not parse", detail=str(exc)) from None
        if len(parsed) != 1 or not isinstance(parsed[0], exp.Select):
            message = "only one SELECT statement is allowed"
            raise QueryError(message, sub_errors=[SubError("not_a_select", message)])
        known = {t.name: t for t in self.tables if t.namespace.id == namespace.id}
        problems = []
        for name in {".".join(p for p in (t.catalog, t.db, t.name) if p) for t in parsed[0].find_all(exp.Table)}:
            if name not in known:
                problems.append(SubError("unknown_table", f"no table {name!r}; tables: {', '.join(sorted(known))}"))
        columns = {c for t in known.values() for c in t.columns}
        aliases = {a.alias for a in parsed[0].find_all(exp.Alias)}
        for column in parsed[0].find_all(exp.Column):
            if column.name not in columns and column.name not in aliases:
                close = sorted(c for c in columns if c[:3] == column.name[:3])
                problems.append(SubError("unknown_column", f"no column {column.name!r}; did you mean {close}?"))
        if problems:
            raise QueryError("the query names unknown tables or columns", sub_errors=problems)
        return CompiledQuery(text=query, sql=query, target="sqlite", searches=[], tables=[], dataset=None)

    async def run(self, who: Who, namespace: NamespaceRef, query: str | CompiledQuery) -> QueryResult:
        query = query.text if isinstance(query, CompiledQuery) else query
        self.calls.append(Call("run", name_of(who), str(namespace), query))
        if query in self.run_errors:
            raise QueryError(self.run_errors[query])
        return QueryResult(query=query, rows=self.rows.get(query, []), truncated=False)

    def ran(self) -> list[Call]:
        return [c for c in self.calls if c.method == "run"]
