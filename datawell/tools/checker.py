"""The QL checker: one read-only SELECT in, the SQL that runs on the store out.

Pure and synchronous (no I/O), so its cost can be measured on its own: `parse` reads the text
and lists the tables it names; `QueryTools` resolves those names against the datasets the
caller may read; `compile` checks everything else and rewrites the query for the store.

The QL is PostgreSQL-flavoured SQL. Safety comes from an allow-list: every node of the parsed
tree must be of a type listed here, so anything sqlglot parses that we did not think of
(DDL, DML, PRAGMA, file-reading functions, locking clauses, parameters) is refused. The SQL
that runs is generated from the checked tree, never the user's text, so comments and
formatting tricks cannot reach the database."""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from sqlglot import exp
from sqlglot.dialects.dialect import Dialect
from sqlglot.errors import OptimizeError, ParseError, TokenError
from sqlglot.optimizer.scope import Scope, traverse_scope

from datawell.errors import QueryError, SubError
from datawell.tools.catalog import TableInfo

QL_DIALECT = "postgres"
TARGETS = {"sqlite": "sqlite", "postgresql": "postgres"}  # SQLAlchemy dialect name -> sqlglot dialect
_DIALECTS = {name: Dialect.get_or_raise(name) for name in (QL_DIALECT, *TARGETS.values())}
INTERNAL_FIELDS = ("__id", "__ingestion_id", "__source")
ID_COLUMN = "__dw_id"  # hidden result columns that become `__metadata.id` / `.score`
SCORE_COLUMN = "__dw_score"
RESERVED_PREFIX = "__dw"
SEMANTIC = "semantic"
SCORE_FUNCTION = "__dw_score"  # SQLite: the per-query function (and CTE) behind semantic() number N

_STRUCTURE: tuple[type[exp.Expr], ...] = (
    exp.Select, exp.Union, exp.Intersect, exp.Except, exp.With, exp.CTE, exp.TableAlias, exp.Subquery,
    exp.From, exp.Join, exp.Where, exp.Group, exp.Having, exp.Order, exp.Ordered, exp.Limit, exp.Offset,
    exp.Distinct, exp.Column, exp.Identifier, exp.Star, exp.Table, exp.Alias, exp.Tuple, exp.Paren,
    exp.Window, exp.WindowSpec, exp.Filter, exp.WithinGroup, exp.Literal, exp.Boolean, exp.Null, exp.Var,
    exp.DataType, exp.DataTypeParam, exp.Interval,
)  # fmt: skip
_OPERATORS: tuple[type[exp.Expr], ...] = (
    exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE, exp.And, exp.Or, exp.Not, exp.Is, exp.In,
    exp.Between, exp.Like, exp.ILike, exp.SimilarTo, exp.RegexpLike, exp.Exists, exp.Any, exp.All,
    exp.NullSafeEQ, exp.NullSafeNEQ, exp.Add, exp.Sub, exp.Mul, exp.Div, exp.Mod, exp.Neg, exp.DPipe,
    exp.Case, exp.If, exp.Coalesce, exp.Nullif, exp.Cast, exp.TryCast,
)  # fmt: skip
_FUNCTIONS: tuple[type[exp.Expr], ...] = (
    # aggregates
    exp.Count, exp.Sum, exp.Avg, exp.Min, exp.Max, exp.GroupConcat, exp.Stddev, exp.StddevPop,
    exp.StddevSamp, exp.Variance, exp.VariancePop, exp.ArrayAgg, exp.Median, exp.PercentileCont,
    exp.PercentileDisc, exp.Mode, exp.LogicalAnd, exp.LogicalOr,
    # windows
    exp.RowNumber, exp.Rank, exp.DenseRank, exp.Lag, exp.Lead, exp.FirstValue, exp.LastValue,
    exp.NthValue, exp.Ntile, exp.PercentRank, exp.CumeDist,
    # numbers
    exp.Round, exp.Abs, exp.Ceil, exp.Floor, exp.Sign, exp.Pow, exp.Sqrt, exp.Ln, exp.Log, exp.Exp,
    exp.Greatest, exp.Least, exp.Trunc, exp.Rand,
    # text
    exp.Lower, exp.Upper, exp.Length, exp.Substring, exp.Trim, exp.Replace, exp.Concat, exp.ConcatWs,
    exp.StrPosition, exp.Left, exp.Right, exp.Initcap, exp.Pad, exp.Reverse, exp.SplitPart,
    # time
    exp.Extract, exp.TimestampTrunc, exp.DateTrunc, exp.CurrentDate, exp.CurrentTimestamp, exp.CurrentTime,
    exp.Date, exp.TimeToStr, exp.StrToTime, exp.StrToDate,
)  # fmt: skip
ALLOWED: frozenset[type[exp.Expr]] = frozenset(_STRUCTURE + _OPERATORS + _FUNCTIONS)
ALLOWED_TYPES = frozenset(
    {
        exp.DType.INT, exp.DType.BIGINT, exp.DType.SMALLINT, exp.DType.FLOAT, exp.DType.DOUBLE,
        exp.DType.DECIMAL, exp.DType.TEXT, exp.DType.VARCHAR, exp.DType.CHAR, exp.DType.BOOLEAN,
        exp.DType.DATE, exp.DType.TIMESTAMP, exp.DType.TIMESTAMPTZ, exp.DType.TIME,
    }
)  # fmt: skip
# SQLite spellings models often write: accepted, and translated for PostgreSQL.
SQLITE_FUNCTIONS = {"strftime": (2, "strftime('format', value)"), "julianday": (1, "julianday(value)")}
FUNCTION_NAMES = sorted(
    {t.sql_names()[0].lower() for t in _FUNCTIONS if issubclass(t, exp.Func) and t.sql_names()} | {SEMANTIC}
)


@dataclass(frozen=True)
class TableRef:
    """A table as the query names it: `orders`, or `owner.namespace.orders`."""

    owner: str | None
    namespace: str | None
    name: str

    def __str__(self) -> str:
        return ".".join(p for p in (self.owner, self.namespace, self.name) if p)


@dataclass
class ParsedQuery:
    """A checked statement and what `compile_query` needs from it, gathered in one walk."""

    text: str
    tree: exp.Query  # rewritten in place by `compile_query`: compile a ParsedQuery once
    references: list[TableRef]
    tables: list[tuple[exp.Table, TableRef]]  # each table node that names a dataset
    semantic: list[exp.Anonymous]
    adaptable: list[exp.Expr]  # nodes some store spells differently, innermost first


@dataclass(frozen=True)
class SemanticSearch:
    """One `semantic('text')` to answer from the vector store before the query runs."""

    table: TableInfo
    text: str


@dataclass(frozen=True)
class CompiledQuery:
    text: str  # as the caller wrote it
    sql: str  # as it runs; `searches` fill its leading parameters, in order
    target: str  # sqlglot dialect of `sql`
    searches: list[SemanticSearch]
    tables: list[TableInfo]  # every dataset it reads
    dataset: TableInfo | None  # the dataset result rows come from, when there is one
    kinds: dict[str, str] = field(default_factory=dict)  # result column -> field type, where known


def refuse(message: str, code: str) -> QueryError:
    return QueryError(message, sub_errors=[SubError(code, message)])


def close_matches(word: str, candidates: list[str], n: int = 3) -> list[str]:
    by_lower = {c.lower(): c for c in candidates}
    return [by_lower[m] for m in difflib.get_close_matches(word.lower(), list(by_lower), n=n, cutoff=0.6)]


def did_you_mean(word: str, candidates: list[str]) -> str:
    matches = close_matches(word, candidates)
    return f": did you mean {' or '.join(repr(m) for m in matches)}?" if matches else ""


# -- parse --------------------------------------------------------------------------------------


def parse(text: str) -> ParsedQuery:
    """Exactly one SELECT (or WITH/UNION of SELECTs) built only from allowed expressions."""
    if not text.strip():
        raise refuse("the query is empty", "empty_query")
    dialect = _DIALECTS[QL_DIALECT]
    try:
        tokens = dialect.tokenize(text)
        statements = [s for s in dialect.parser().parse(tokens, text) if s is not None]
    except ParseError as exc:
        first = exc.errors[0] if exc.errors else {}
        where = f" at line {first.get('line')}, column {first.get('col')}" if first else ""
        description = first.get("description") or "cannot parse the query"
        raise refuse(f"syntax error{where}: {description}", "syntax_error") from None
    except TokenError as exc:
        raise refuse(f"syntax error: {exc}", "syntax_error") from None
    # PostgreSQL nests block comments and SQLite does not, so a `;` inside a comment can hide a
    # statement from one parser and show it to another. The SQL that runs never carries
    # comments, but a comment like that is only ever there to smuggle something.
    if any(";" in comment for token in tokens for comment in token.comments):
        raise refuse("a comment contains ';': comments may not hide another statement", "comment_hides_statement")
    if len(statements) != 1:
        raise refuse(f"give exactly one statement; this text has {len(statements)}", "multiple_statements")
    tree = statements[0]
    while isinstance(tree, exp.Subquery) and set(tree.args) <= {"this"}:
        tree = tree.this
    if not isinstance(tree, exp.Select | exp.SetOperation):
        kind = (tree.key or type(tree).__name__).upper()
        raise refuse(f"only SELECT queries are allowed, not {kind}", "not_a_select")
    return _Survey(text, tree).parsed()


_ADAPTABLE = (exp.Extract, exp.TimestampTrunc, exp.DateTrunc, exp.Left, exp.Right, exp.Concat, exp.Round)


class _Survey:
    """One walk over the tree: refuse what is not allowed, note what compiling needs, and fold
    unquoted names to lower case (PostgreSQL's rule, applied on every store)."""

    def __init__(self, text: str, tree: exp.Query) -> None:
        self.text = text
        self.tree = tree
        self.problems: dict[str, SubError] = {}
        self.tables: list[tuple[exp.Table, TableRef]] = []
        self.ctes: set[str] = set()
        self.semantic: list[exp.Anonymous] = []
        self.adaptable: list[exp.Expr] = []

    def parsed(self) -> ParsedQuery:
        for node in self.tree.walk():  # breadth first: a table is seen before its names are folded
            self._visit(node)
        if self.problems:
            raise QueryError("the query uses something that is not allowed", sub_errors=list(self.problems.values()))
        tables = [(t, ref) for t, ref in self.tables if ref.owner or ref.namespace or ref.name.lower() not in self.ctes]
        references = list(dict.fromkeys(ref for _, ref in tables))
        return ParsedQuery(self.text, self.tree, references, tables, self.semantic, self.adaptable[::-1])

    def _refuse(self, key: str, code: str, message: str) -> None:
        self.problems.setdefault(key, SubError(code, message))

    def _visit(self, node: exp.Expr) -> None:
        kind = type(node)
        if isinstance(node, exp.Identifier):
            if _reserved(node.name):
                self._refuse(
                    node.name, "reserved_name", f"{node.name!r}: names starting with {RESERVED_PREFIX!r} are reserved"
                )
            if not node.quoted:
                node.set("this", node.name.lower())
        elif isinstance(node, exp.Anonymous):
            name = node.name.lower()
            if name == SEMANTIC:
                self.semantic.append(node)
            elif name in SQLITE_FUNCTIONS:
                if len(node.expressions) != SQLITE_FUNCTIONS[name][0] or (
                    name == "strftime"
                    and not (isinstance(node.expressions[0], exp.Literal) and node.expressions[0].is_string)
                ):
                    self._refuse(name, "function_usage", f"write {SQLITE_FUNCTIONS[name][1]}")
                self.adaptable.append(node)
            else:
                self._refuse(
                    name,
                    "function_not_allowed",
                    f"function {name}() is not available{did_you_mean(name, FUNCTION_NAMES)}",
                )
        elif kind not in ALLOWED:
            name = _describe(node)
            self._refuse(name, "not_allowed", f"{name} is not allowed in a query")
        elif isinstance(node, exp.Table):
            if isinstance(node.this, exp.Identifier):
                self.tables.append((node, TableRef(node.catalog or None, node.db or None, node.name)))
            else:
                self._refuse("table function", "not_allowed", "table functions are not allowed in FROM")
        elif isinstance(node, exp.CTE):
            self.ctes.add(node.alias.lower())
        elif isinstance(node, exp.Column):
            # `owner.namespace.orders.total` refers to the table by its alias, `orders`.
            if node.args.get("db") or node.args.get("catalog"):
                node.set("db", None)
                node.set("catalog", None)
        elif isinstance(node, exp.DataType):
            if node.this not in ALLOWED_TYPES:
                name = node.sql(QL_DIALECT)
                self._refuse(name, "type_not_allowed", f"type {name} is not allowed in a query")
        elif isinstance(node, _ADAPTABLE) or (
            isinstance(node, exp.Add | exp.Sub) and isinstance(node.expression, exp.Interval)
        ):
            self.adaptable.append(node)


def _describe(node: exp.Expr) -> str:
    if isinstance(node, exp.Func):
        return f"function {node.sql_name().lower()}()"
    return (node.key or type(node).__name__).upper().replace("_", " ")


def _reserved(name: str) -> bool:
    return name.lower().startswith(RESERVED_PREFIX) or name.lower() == "__metadata"


# -- compile ------------------------------------------------------------------------------------


def compile_query(
    parsed: ParsedQuery, tables: Mapping[TableRef, TableInfo], target: str, row_cap: int
) -> CompiledQuery:
    """Check columns and semantic() against the resolved tables and produce the SQL for `target`
    (a sqlglot dialect). Raises QueryError naming every unknown column with close matches."""
    tree = parsed.tree
    by_physical = _use_physical_tables(parsed, tables)
    _name_outputs(tree)
    scopes = _scopes(tree)
    resolved = _ColumnChecker(by_physical).check(scopes.values())
    semantic = _Semantic(by_physical, scopes, target)
    semantic.rewrite(parsed.semantic)
    dataset, kinds = _mark_rows(tree, scopes, by_physical, resolved, semantic)
    _cap(tree, row_cap)
    _adapt(parsed.adaptable, target)
    sql = tree.sql(dialect=_DIALECTS[target], copy=False, identify=True, comments=False)
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


def _scopes(tree: exp.Query) -> dict[int, Scope]:
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


def _name_outputs(tree: exp.Query) -> None:
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


def _source(entry: Any) -> Source:
    return entry[1] if isinstance(entry, tuple) else entry


def _table_name(entry: Any) -> str | None:
    """The table a scope source reads directly, if it is a table."""
    source = _source(entry)
    return source.name if isinstance(source, exp.Table) else None


class _ColumnChecker:
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
                return _source(entry)
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
            sources = [(alias, _source(entry)) for alias, entry in current.selected_sources.items()]
            if self._match(column, sources, qualified=False, quiet=True):
                return
            current = current.parent if current.can_be_correlated else None
        select = scope.expression
        if (
            isinstance(select, exp.Select)
            and isinstance(column.find_ancestor(exp.Group, exp.Having, exp.Select), exp.Group | exp.Having)
            and name.lower() in {n.lower() for n in select.named_selects}
        ):
            return  # GROUP BY / HAVING naming an output column
        candidates = [n for _, s in scope.selected_sources.items() for n in (self.outputs(_source(s)) or {}).values()]
        candidates = [c for c in candidates if c not in INTERNAL_FIELDS]
        tables = ", ".join(scope.selected_sources) or "no table"
        self.problems.setdefault(
            name.lower(),
            SubError(
                "unknown_column",
                f"unknown column {name!r} (reading {tables}){did_you_mean(name, candidates)}"
                + self._available(candidates),
            ),
        )

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


class _Semantic:
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
            if (name := _table_name(entry)) is not None and name in self.by_physical
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
    semantic: _Semantic,
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
                source = _source(entry)
                if (
                    isinstance(source, exp.Table)
                    and source.name in by_physical
                    and (isinstance(inner, exp.Star) or inner.table == alias)
                ):
                    kinds.update(by_physical[source.name].columns)
        elif id(inner) in resolved:
            info, exact = resolved[id(inner)]
            kinds[projection.alias_or_name] = info.columns.get(exact, "text")
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


def _cap(tree: exp.Query, row_cap: int) -> None:
    """At most `row_cap` + 1 rows: the extra one tells the caller the result was cut."""
    limit = tree.args.get("limit")
    given = limit.expression if isinstance(limit, exp.Limit) else None
    if isinstance(given, exp.Literal) and given.is_int and int(given.this) <= row_cap:
        return
    tree.limit(row_cap + 1, copy=False)


# -- dialect adaptation: PostgreSQL spellings SQLite lacks ---------------------------------------

_EXTRACT_FORMATS = {
    "YEAR": "%Y", "MONTH": "%m", "DAY": "%d", "HOUR": "%H", "MINUTE": "%M", "SECOND": "%S",
    "DOW": "%w", "DOY": "%j", "EPOCH": "%s", "WEEK": "%W",
}  # fmt: skip
_TRUNC_FORMATS = {
    "YEAR": "%Y-01-01 00:00:00", "MONTH": "%Y-%m-01 00:00:00", "DAY": "%Y-%m-%d 00:00:00",
    "HOUR": "%Y-%m-%d %H:00:00", "MINUTE": "%Y-%m-%d %H:%M:00", "SECOND": "%Y-%m-%d %H:%M:%S",
}  # fmt: skip
_INTERVAL_UNITS = {
    "YEAR": "years", "MONTH": "months", "DAY": "days", "HOUR": "hours", "MINUTE": "minutes", "SECOND": "seconds",
}  # fmt: skip


def _strftime(fmt: str, value: exp.Expr, *modifiers: str) -> exp.Expr:
    return exp.Anonymous(
        this="STRFTIME", expressions=[exp.Literal.string(fmt), value, *(exp.Literal.string(m) for m in modifiers)]
    )


def _unit(node: exp.Expr) -> str:
    unit = node.args.get("unit") if not isinstance(node, exp.Extract) else node.this
    name = unit.name.upper() if unit is not None else ""
    return name[:-1] if name.endswith("S") and name[:-1] in _INTERVAL_UNITS else name


def _sqlite_interval(interval: exp.Interval, sign: str) -> str | None:
    amount, unit = interval.this, _unit(interval)
    if not isinstance(amount, exp.Literal):
        return None
    words = amount.this.split()
    if not unit and len(words) == 2:
        amount_text, unit = words[0], words[1].upper().rstrip("S")
    elif unit and len(words) == 1:
        amount_text = words[0]
    else:
        return None
    if unit == "WEEK":
        unit, amount_text = "DAY", str(7 * float(amount_text)).removesuffix(".0")
    if unit not in _INTERVAL_UNITS:
        return None
    return f"{sign}{amount_text} {_INTERVAL_UNITS[unit]}"


def _from_sqlite(node: exp.Anonymous, target: str) -> exp.Expr:
    """strftime() and julianday() as sqlglot's own nodes, which it writes for every store."""
    if node.name.lower() == "strftime":
        fmt, value = node.expressions
        return exp.TimeToStr(this=exp.TsOrDsToTimestamp(this=value), format=fmt)
    [value] = node.expressions
    if target == "sqlite":
        return node
    # Julian day number: days since noon UTC, 24 November 4714 BC; the Unix epoch is 2440587.5.
    epoch = exp.Extract(this=exp.Var(this="EPOCH"), expression=exp.cast(value, "TIMESTAMPTZ", copy=False))
    days = exp.Div(this=epoch, expression=exp.Literal.number("86400.0"))
    return exp.Paren(this=exp.Add(this=days, expression=exp.Literal.number("2440587.5")))


def _to_sqlite(node: exp.Expr) -> exp.Expr:
    if isinstance(node, exp.Anonymous):
        return _from_sqlite(node, "sqlite")
    if isinstance(node, exp.Extract) and _unit(node) in _EXTRACT_FORMATS:
        return exp.cast(_strftime(_EXTRACT_FORMATS[_unit(node)], node.expression), "INTEGER", copy=False)
    if isinstance(node, exp.Extract) and _unit(node) == "QUARTER":
        month = exp.cast(_strftime("%m", node.expression), "INTEGER", copy=False)
        return exp.Paren(
            this=exp.Div(
                this=exp.Paren(this=exp.Add(this=month, expression=exp.Literal.number(2))),
                expression=exp.Literal.number(3),
            )
        )
    if isinstance(node, exp.TimestampTrunc | exp.DateTrunc):
        if _unit(node) == "WEEK":
            return _strftime("%Y-%m-%d 00:00:00", node.this, "weekday 0", "-6 days")
        if _unit(node) in _TRUNC_FORMATS:
            return _strftime(_TRUNC_FORMATS[_unit(node)], node.this)
    if isinstance(node, exp.Left):
        return exp.Substring(this=node.this, start=exp.Literal.number(1), length=node.expression)
    if isinstance(node, exp.Right):
        return exp.Substring(this=node.this, start=exp.Neg(this=exp.Paren(this=node.expression)))
    if isinstance(node, exp.Concat):  # PostgreSQL's concat() treats NULL as ''
        parts = [
            exp.Coalesce(this=exp.cast(e, "TEXT", copy=False), expressions=[exp.Literal.string("")])
            for e in node.expressions
        ]
        joined: exp.Expr = parts[0]
        for part in parts[1:]:
            joined = exp.DPipe(this=joined, expression=part)
        return exp.Paren(this=joined)
    if isinstance(node, exp.Add | exp.Sub) and isinstance(node.expression, exp.Interval):
        modifier = _sqlite_interval(node.expression, "+" if isinstance(node, exp.Add) else "-")
        if modifier is not None:
            return exp.Anonymous(this="DATETIME", expressions=[node.this, exp.Literal.string(modifier)])
    return node


def _to_postgres(node: exp.Expr) -> exp.Expr:
    if isinstance(node, exp.Anonymous):
        return _from_sqlite(node, "postgres")
    # round(double precision, int) does not exist in PostgreSQL; round(numeric, int) does.
    if isinstance(node, exp.Round) and node.args.get("decimals") is not None:
        node.set("this", exp.cast(node.this, "NUMERIC", copy=False))
    return node


def _adapt(nodes: list[exp.Expr], target: str) -> None:
    adapt = _to_sqlite if target == "sqlite" else _to_postgres
    for node in nodes:  # innermost first, so an outer rewrite carries the adapted inner one
        adapted = adapt(node)
        if adapted is not node:
            node.replace(adapted)
