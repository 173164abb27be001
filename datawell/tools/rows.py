"""Rows back: one dataset's rows, a page at a time or as a whole file, with the columns and the
filter the caller asks for.

A filter is a QL condition (`price > 10 AND city = 'Oslo'`). It is parsed on its own, must be
one row condition (no query, table, subquery, aggregate or window inside it), and is placed in
a query built as a tree (`SELECT columns FROM dataset WHERE filter ...`), never pasted into
text; that query then goes through the query language's checker and resolver like any other,
as the caller, so what a query may not read a filter may not read either.

Pages are ordered by `__id`, which is time-ordered and never reused: the cursor is the last
row's `__id`, and the next page starts after it, so rows published while a caller pages do
not shift or repeat the rows already seen."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError

from datawell.errors import InvalidInput, QueryError, SubError
from datawell.storage.access import NamespaceRef
from datawell.storage.export import ExportJob, ExportRefused, Format, stream
from datawell.storage.tables import User
from datawell.tools.checker import QL_DIALECT, CompiledQuery
from datawell.tools.ql import QueryTools
from datawell.tools.results import dataset_stub, json_value, query_error
from datawell.tools.sandbox import Refusal
from datawell.tools.sandbox.postgres import PostgresSandbox

MAX_FILTER = 4000  # characters
ID = "__id"
# A row id as `storage.bulk` writes them (and as the rows of older tables have them: any UUID text).
CURSOR = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
# What a row condition may not contain: it filters the dataset's rows one by one.
_NOT_IN_A_FILTER: tuple[type[exp.Expr], ...] = (exp.Query, exp.Subquery, exp.Table, exp.AggFunc, exp.Window)


@dataclass(frozen=True)
class RowsPage:
    columns: list[str]
    rows: list[dict[str, Any]]  # JSON-ready, each with its `__id`
    next_cursor: str | None  # None on the last page


def parse_filter(text: str) -> exp.Expr:
    """The filter as one row condition; 422 naming what is wrong otherwise."""

    def refuse(message: str, code: str = "invalid_filter") -> QueryError:
        return QueryError(f"filter: {message}", sub_errors=[SubError(code, f"filter: {message}")])

    if len(text) > MAX_FILTER:
        raise refuse(f"at most {MAX_FILTER} characters")
    try:
        condition = sqlglot.parse_one(text, read=QL_DIALECT)
    except ParseError as exc:
        raise refuse(f"not a condition: {str(exc).splitlines()[0]}") from None
    if isinstance(condition, exp.Query | exp.DDL | exp.DML | exp.Command | exp.Block) or not isinstance(
        condition, exp.Condition
    ):
        raise refuse("give one condition on the dataset's columns, such as price > 10 AND city = 'Oslo'")
    inner = condition.find(*_NOT_IN_A_FILTER)
    if inner is not None:
        raise refuse(
            f"{inner.sql(dialect=QL_DIALECT)[:80]!r}: a filter is a condition on each row; it may not hold "
            "a query, a table, a subquery, an aggregate or a window (use a query for those)",
            "filter_not_a_row_condition",
        )
    return condition


def check_cursor(cursor: str) -> str:
    if not CURSOR.fullmatch(cursor):
        message = "cursor: not a cursor this endpoint gave (pass `nextCursor` from the previous page)"
        raise InvalidInput("invalid cursor", sub_errors=[SubError("invalid_cursor", message)])
    return cursor


def rows_query(
    dataset: str,
    columns: list[str],
    condition: exp.Expr | None,
    *,
    after: str | None = None,
    limit: int | None = None,
) -> str:
    """The QL text of the rows query, generated from its tree."""
    query = exp.select(*(exp.column(c, quoted=True) for c in [ID, *columns] if limit is not None or c != ID))
    query = query.from_(exp.Table(this=exp.to_identifier(dataset, quoted=True)))
    if condition is not None:
        query = query.where(exp.Paren(this=condition.copy()))
    if after is not None:
        query = query.where(exp.GT(this=exp.column(ID, quoted=True), expression=exp.Literal.string(after)))
    if limit is not None:
        query = query.order_by(exp.column(ID, quoted=True)).limit(limit)
    return query.sql(dialect=QL_DIALECT)


class DatasetRows:
    """A dataset's rows, read as `user` through `tools` (the access rule of queries)."""

    def __init__(self, tools: QueryTools, user: User, namespace: NamespaceRef, dataset: str) -> None:
        self.tools = tools
        self.user = user
        self.namespace = namespace
        self.dataset = dataset

    async def _compile(self, text: str, row_cap: int | None = None) -> CompiledQuery:
        compiled = await self.tools.prepare(self.user, self.namespace, text, row_cap=row_cap)
        if compiled.searches:
            message = "filter: semantic() ranks rows; use a query (POST /query/autorag or the MCP query tool)"
            raise QueryError(message, sub_errors=[SubError("filter_not_a_row_condition", message)])
        return compiled

    async def page(self, columns: list[str], condition: exp.Expr | None, after: str | None, size: int) -> RowsPage:
        """Up to `size` rows after the cursor `after`, in `__id` order."""
        compiled = await self._compile(rows_query(self.dataset, columns, condition, after=after, limit=size + 1))
        fetched = await self.tools.execute(compiled)
        names = [ID, *columns]
        rows = [
            {name: json_value(value, compiled.kinds.get(name)) for name, value in zip(names, record, strict=False)}
            for record in fetched.records[:size]
        ]
        more = len(fetched.records) > size
        return RowsPage(columns, rows, rows[-1][ID] if more and rows else None)

    async def export(self, columns: list[str], condition: exp.Expr | None, format: Format) -> AsyncIterator[bytes]:
        """Every matching row as one file, streamed (`storage.export`)."""
        # No row cap: an export is the whole dataset by design; the checker still checks everything else.
        compiled = await self._compile(rows_query(self.dataset, columns, condition), row_cap=(1 << 62) - 1)
        table = compiled.tables[0]
        await self.tools.rows.ensure_table(dataset_stub(table))
        sandbox = self.tools.sandbox
        setup = await sandbox.reader_setup([table.physical]) if isinstance(sandbox, PostgresSandbox) else []
        url = self.tools.rows.engine.url.render_as_string(hide_password=False)
        job = ExportJob(url, compiled.sql, {c: compiled.kinds.get(c, "text") for c in columns}, format, setup)
        try:
            return await stream(job)
        except ExportRefused as refused:
            raise query_error(Refusal(refused.message), compiled, self.tools.limits.seconds) from None
