"""`semantic('text')`: how a relevance score from the vector store reaches the SQL."""

from __future__ import annotations

from collections.abc import Mapping

from sqlglot import exp
from sqlglot.optimizer.scope import Scope

from datawell.tools.catalog import TableInfo
from datawell.tools.checker.allowed import QL_DIALECT, SCORE_FUNCTION, SemanticSearch, did_you_mean, refuse
from datawell.tools.checker.columns import table_name_of


class Semantic:
    """`semantic('text')` becomes the relevance score of the row. The vector store's nearest rows
    arrive as parameters; the score must be looked up per row without scanning the hits:
    - PostgreSQL: a jsonb object {id: score}, parsed once (an InitPlan), looked up by key.
    - SQLite: it will not index a CTE for a join or a correlated lookup, but it does index an
      IN list. A CTE of the hit ids answers "is this row a hit" for every row; only the hits
      call `__dw_scoreN(id)`, a function the connection gets for this query."""

    def __init__(self, by_physical: Mapping[str, TableInfo], scopes: Mapping[int, Scope], target: str) -> None:
        self.by_physical = by_physical
        self.scopes = scopes
        self.target = target
        self.searches: list[SemanticSearch] = []
        self.indexes: dict[tuple[str, str], int] = {}  # (dataset id, text) -> search number
        self.scores: dict[int, exp.Expr] = {}  # id(select) -> its first score expression

    def rewrite(self, calls: list[exp.Anonymous]) -> None:
        for call in calls:
            select = call.find_ancestor(exp.Select)
            scope = self.scopes.get(id(select)) if select is not None else None
            if select is None or scope is None:
                raise refuse("semantic() must be used inside a SELECT that reads a dataset", "semantic_usage")
            alias, info, text = self._arguments(call, scope)
            key = (info.dataset_id, text)
            if key not in self.indexes:
                self.indexes[key] = len(self.searches)
                self.searches.append(SemanticSearch(info, text))
            score = _score(alias, self.indexes[key], self.target)
            self.scores.setdefault(id(select), score.copy())
            call.replace(score)

    def _arguments(self, call: exp.Anonymous, scope: Scope) -> tuple[str, TableInfo, str]:
        arguments = call.expressions
        usage = "write semantic('text'), or semantic(table, 'text') when the SELECT reads several tables"
        if not 1 <= len(arguments) <= 2 or not (isinstance(arguments[-1], exp.Literal) and arguments[-1].is_string):
            raise refuse(f"semantic() takes a text literal: {usage}", "semantic_usage")
        text = arguments[-1].this
        datasets = {
            alias: self.by_physical[name]
            for alias, entry in scope.selected_sources.items()
            if (name := table_name_of(entry)) is not None and name in self.by_physical
        }
        if len(arguments) == 2:
            named = arguments[0]
            alias = named.name if isinstance(named, exp.Column) and not named.table else ""
            if alias not in datasets:
                raise refuse(
                    f"semantic(): {named.sql(QL_DIALECT)!r} is not a dataset this SELECT reads{did_you_mean(alias, list(datasets))}",
                    "semantic_usage",
                )
            return alias, datasets[alias], text
        if len(datasets) != 1:
            problem = "reads no dataset directly" if not datasets else f"reads {', '.join(datasets)}"
            raise refuse(f"semantic() is ambiguous here: this SELECT {problem}; {usage}", "semantic_usage")
        [(alias, info)] = datasets.items()
        return alias, info, text

    def with_ctes(self, sql: str) -> str:
        if not self.searches or self.target != "sqlite":
            return sql
        ctes = ", ".join(
            f'"{SCORE_FUNCTION}{i}"("__id") AS MATERIALIZED (SELECT value FROM json_each(?))'
            for i in range(len(self.searches))
        )
        for prefix in ("WITH RECURSIVE ", "WITH "):
            if sql.startswith(prefix):
                return f"{prefix}{ctes}, {sql[len(prefix) :]}"
        return f"WITH {ctes} {sql}"


def _score(alias: str, index: int, target: str) -> exp.Expr:
    """The score of the row of `alias` for search number `index`; 0 beyond the hits."""

    def row_id() -> exp.Column:
        return exp.Column(this=exp.to_identifier("__id", quoted=True), table=exp.to_identifier(alias, quoted=True))

    if target == "postgres":
        scores = exp.Cast(this=exp.Parameter(this=exp.Literal.number(index + 1)), to=exp.DataType(this=exp.DType.JSONB))
        looked_up = exp.Anonymous(
            this="JSONB_EXTRACT_PATH_TEXT", expressions=[exp.Subquery(this=exp.Select(expressions=[scores])), row_id()]
        )
        score: exp.Expr = exp.Cast(this=looked_up, to=exp.DataType(this=exp.DType.DOUBLE))
    else:
        name = f"{SCORE_FUNCTION}{index}"
        ids = exp.Select(expressions=[exp.Column(this=exp.to_identifier("__id", quoted=True))]).from_(
            exp.Table(this=exp.to_identifier(name, quoted=True)), copy=False
        )
        hit = exp.In(this=row_id(), query=exp.Subquery(this=ids))
        score = exp.Case(ifs=[exp.If(this=hit, true=exp.Anonymous(this=name, expressions=[row_id()]))])
    return exp.Coalesce(this=score, expressions=[exp.Literal.number(0)])
