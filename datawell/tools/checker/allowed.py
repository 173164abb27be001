"""What a query may contain, and the names and types the rest of the checker shares."""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field

from sqlglot import exp
from sqlglot.dialects.dialect import Dialect

from datawell.errors import QueryError, SubError
from datawell.storage.tables import Base
from datawell.tools.catalog import TableInfo

QL_DIALECT = "postgres"
TARGETS = {"sqlite": "sqlite", "postgresql": "postgres"}  # SQLAlchemy dialect name -> sqlglot dialect
DIALECTS = {name: Dialect.get_or_raise(name) for name in (QL_DIALECT, *TARGETS.values())}
INTERNAL_FIELDS = ("__id", "__ingestion_id", "__source")
ID_COLUMN = "__dw_id"  # hidden result columns that become `__metadata.id` / `.score`
SCORE_COLUMN = "__dw_score"
RESERVED_PREFIX = "__dw"
NAIVE_TIMESTAMP = "timestamp without time zone"  # a result column's kind besides the field types
SEMANTIC = "semantic"
SCORE_FUNCTION = "__dw_score"  # SQLite: the per-query function (and CTE) behind semantic() number N
# SQLite: PostgreSQL functions it lacks, defined as Python functions of each query connection
STRPTIME_FUNCTION = "__dw_strptime"  # to_date()/to_timestamp()
INITCAP_FUNCTION = "__dw_initcap"
LPAD_FUNCTION = "__dw_lpad"
RPAD_FUNCTION = "__dw_rpad"
REVERSE_FUNCTION = "__dw_reverse"
# LIKE takes time proportional to the string's length times the pattern's, and PostgreSQL's
# statement_timeout does not stop it: patterns are kept this short (SQLite's limit too).
PATTERN_CHARS = 200
# PostgreSQL: functions the service creates in its schema (`sandbox/postgres.py`) to keep one
# value under the row size: a text or array a query builds, and the two aggregates that grow one.
CAPPED_FUNCTION = "__dw_capped"
STRING_AGG_FUNCTION = "__dw_string_agg"
ARRAY_AGG_FUNCTION = "__dw_array_agg"
CTE_PREFIX = "__dw_cte"  # every CTE runs under this name plus its number
# Tables the databases hold besides datasets: row tables and staging tables, the stores' own
# catalogues, and the metadata (here, LangGraph's checkpointer and Alembic's version table).
PHYSICAL_PREFIXES = ("ds_", "stg_", "sqlite_", "pg_")
METADATA_TABLES = frozenset(
    {*Base.metadata.tables, "alembic_version", "checkpoints", "checkpoint_blobs", "checkpoint_writes",
     "checkpoint_migrations", "writes", "information_schema"}
)  # fmt: skip

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
    exp.Date, exp.TimeToStr, exp.StrToTime, exp.StrToDate, exp.UnixToTime,
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
SQLITE_FUNCTIONS = {
    "strftime": (
        2,
        "strftime('format', value) with a timestamp column as the value; a column of years or month names "
        "is compared as stored (year = 2024, month = 'March'), with no date function",
    ),
    "julianday": (1, "julianday(value) with a timestamp column as the value"),
}
FUNCTION_NAMES = sorted(
    {t.sql_names()[0].lower() for t in _FUNCTIONS if issubclass(t, exp.Func) and t.sql_names()} | {SEMANTIC}
)

ADAPTABLE = (
    exp.Extract, exp.TimestampTrunc, exp.DateTrunc, exp.Left, exp.Right, exp.Concat, exp.Round, exp.StrToDate,
    exp.StrToTime, exp.Rand, exp.Log, exp.Initcap, exp.Pad, exp.Reverse, exp.UnixToTime,
)  # fmt: skip


def taken_name(name: str) -> bool:
    """A name a CTE may not have: one of a table the databases hold (case aside, since SQLite
    ignores it), so that no reading of a query can mistake one for the other."""
    lowered = name.lower()
    return lowered in METADATA_TABLES or lowered.startswith(PHYSICAL_PREFIXES)


@dataclass(frozen=True)
class Caps:
    """What one query may ask of the database, checked before it runs: the first five on its
    text before any parse (`bounds`), the rest on the parsed tree (settings `query_max_chars`,
    `query_max_ctes`, `query_max_selects`, `query_max_joins`, `query_max_nesting`,
    `query_max_expanded`, `query_max_built_chars`, `query_max_semantic`)."""

    chars: int = 50_000  # longest query text
    ctes: int = 32  # CTEs (WITH name AS (...))
    selects: int = 64  # SELECTs: the query, its subqueries, CTE bodies and UNION arms
    joins: int = 32  # JOINs
    nesting: int = 100  # deepest nesting of expressions, parentheses, NOT and subqueries
    expanded: int = 256  # query blocks once every CTE is copied into each place that reads it
    built_chars: int = 10_000  # longest string lpad()/rpad() may be asked for
    semantic: int = 10  # semantic() calls in one query


DEFAULT_CAPS = Caps()


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
    ctes: list[str]  # every CTE's name as the query wrote it, for `QueryTools` to check against datasets


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
