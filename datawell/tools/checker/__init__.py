"""The QL checker: one read-only SELECT in, the SQL that runs on the store out.

Pure and synchronous (no I/O), so its cost can be measured on its own: `parse` reads the text,
resolves every table reference against the CTEs visible where it stands, and lists the names
that must be datasets; `QueryTools` resolves those names against the datasets the caller may
read; `compile_query` checks everything else and rewrites the query for the store.

The QL is PostgreSQL-flavoured SQL. Safety comes from an allow-list: every node of the parsed
tree must be of a type listed in `allowed`, so anything sqlglot parses that we did not think of
(DDL, DML, PRAGMA, file-reading functions, locking clauses, parameters) is refused. The SQL
that runs is generated from the checked tree, never the user's text, so comments and
formatting tricks cannot reach the database.

Modules, in the order a query passes through them: `allowed` (what a query may contain, and the
types shared by the rest), `survey` (parse, allow-list, table scopes), `compile` (physical
tables, row metadata, the row cap), `columns`, `semantic`, `dialects` (spellings per store)."""

from datawell.tools.checker.allowed import (
    DEFAULT_CAPS,
    FUNCTION_NAMES,
    ID_COLUMN,
    INTERNAL_FIELDS,
    NAIVE_TIMESTAMP,
    QL_DIALECT,
    SCORE_COLUMN,
    SCORE_FUNCTION,
    TARGETS,
    Caps,
    CompiledQuery,
    ParsedQuery,
    SemanticSearch,
    TableRef,
    close_matches,
    did_you_mean,
    refuse,
)
from datawell.tools.checker.compile import compile_query
from datawell.tools.checker.survey import parse

__all__ = [
    "DEFAULT_CAPS",
    "FUNCTION_NAMES",
    "ID_COLUMN",
    "INTERNAL_FIELDS",
    "NAIVE_TIMESTAMP",
    "QL_DIALECT",
    "SCORE_COLUMN",
    "SCORE_FUNCTION",
    "TARGETS",
    "Caps",
    "CompiledQuery",
    "ParsedQuery",
    "SemanticSearch",
    "TableRef",
    "close_matches",
    "compile_query",
    "did_you_mean",
    "parse",
    "refuse",
]
