"""A query's size, measured on its text before anything parses it (issue 51).

sqlglot's parser and scope analysis, and each store's planner, take time and memory that grow
faster than the text: 5,000 chained CTEs (300 KB) held the server for seconds and gigabytes
before any time limit started, and a query nested a few hundred levels deep runs the parser out
of stack. So every query, whoever wrote it (a caller over REST, MCP or A2A, a verified example,
the model), is first measured here: its length, then one pass of the tokenizer (linear) that
counts its CTEs, SELECTs, JOINs and nesting depth. A query past any limit is refused with
QUERY_REFUSED naming the limit and its setting; nothing else reads it.

`expansion` (after the parse) bounds what SQLite makes of a CTE read more than once: it plans
each reading as a copy of the CTE, so a chain of CTEs that each read the previous one twice
doubles the plan per link (20 links: 1 GB, 6 s of planning that no progress handler sees)."""

from __future__ import annotations

from sqlglot.errors import TokenError
from sqlglot.tokens import Token, TokenType

from datawell.errors import QueryLimitExceeded, SubError
from datawell.tools.checker.allowed import DIALECTS, QL_DIALECT, Caps

_OPENS = {TokenType.L_PAREN: TokenType.R_PAREN, TokenType.L_BRACKET: TokenType.R_BRACKET, TokenType.CASE: TokenType.END}
_CLOSES = set(_OPENS.values())
# What may stand between a CTE's `AS` and its body: `AS MATERIALIZED (`, `AS NOT MATERIALIZED (`.
_CTE_HINTS = {"NOT", "MATERIALIZED"}


def limited(limit: str, setting: str | None, message: str) -> QueryLimitExceeded:
    """A refusal naming the limit (the sub-error code) and the setting that raises it."""
    text = f"{message} (setting DATAWELL_{setting.upper()})" if setting else message
    return QueryLimitExceeded(text, sub_errors=[SubError(limit, text)])


def bound(text: str, caps: Caps) -> list[Token]:
    """The query's tokens, when it is within every limit of `caps`; else QueryLimitExceeded.
    Linear in the text: the length is checked before the tokenizer runs."""
    if "\x00" in text:
        raise limited("nul_character", None, "the query holds a NUL character (\\u0000), which no store keeps")
    if len(text) > caps.chars:
        raise limited(
            "length_limit",
            "query_max_chars",
            f"the query is {len(text):,} characters long; the limit is {caps.chars:,}",
        )
    try:
        tokens = DIALECTS[QL_DIALECT].tokenize(text)
    except TokenError:
        return []  # the parser says what is wrong with it, as a syntax error
    counted = _count(tokens)
    if counted["depth"] > caps.nesting:
        raise limited(
            "nesting_limit",
            "query_max_nesting",
            f"the query nests {counted['depth']} levels deep (parentheses, subqueries, CASE and NOT); "
            f"the limit is {caps.nesting}",
        )
    for name, setting, what in (
        ("ctes", "query_max_ctes", "CTEs (WITH ... AS)"),
        ("selects", "query_max_selects", "SELECTs (queries and subqueries)"),
        ("joins", "query_max_joins", "JOINs"),
    ):
        most = getattr(caps, name)
        if counted[name] > most:
            raise limited(f"{name[:-1]}_limit", setting, f"the query has {counted[name]:,} {what}; the limit is {most}")
    return tokens


def _count(tokens: list[Token]) -> dict[str, int]:
    """CTEs (`AS (` and `AS [NOT] MATERIALIZED (`; a named WINDOW counts too, which only errs
    towards refusing), SELECTs, JOINs, and the deepest nesting of parentheses, CASE and NOT,
    which is how far the parser recurses."""
    counts = {"ctes": 0, "selects": 0, "joins": 0, "depth": 0}
    open_: list[TokenType] = []
    nots = 0
    for index, token in enumerate(tokens):
        kind = token.token_type
        if kind in _OPENS:
            open_.append(_OPENS[kind])
        elif kind in _CLOSES and open_:
            open_.pop()
        elif kind == TokenType.SELECT:
            counts["selects"] += 1
        elif kind == TokenType.JOIN:
            counts["joins"] += 1
        elif kind == TokenType.ALIAS and _opens_body(tokens, index + 1):
            counts["ctes"] += 1
        nots = nots + 1 if kind == TokenType.NOT else 0
        counts["depth"] = max(counts["depth"], len(open_) + nots)
    return counts


def _opens_body(tokens: list[Token], start: int) -> bool:
    for token in tokens[start : start + 3]:
        if token.token_type == TokenType.L_PAREN:
            return True
        if token.text.upper() not in _CTE_HINTS:
            return False
    return False


def expansion(reads: dict[int, list[int]], outer: int) -> int:
    """How many query blocks a store that copies a CTE into every place that reads it plans:
    `reads` maps each CTE (and `outer`, the query around them) to the CTEs it reads, once per
    reading. A CTE that reads itself (WITH RECURSIVE) is read as one block."""
    sizes: dict[int, int] = {}

    def size(block: int, seen: frozenset[int]) -> int:
        if block not in sizes:
            inner = seen | {block}
            sizes[block] = 1 + sum(size(read, inner) for read in reads.get(block, []) if read not in inner)
        return sizes[block]

    return size(outer, frozenset())
