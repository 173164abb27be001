"""The DataLinks query language, parsed by a lark grammar and compiled to the QL, so it meets
the same checker and sandbox as every other query (docs/datalinks.md).

    Ontology("shop/orders").filter(total > 100 and status != "void").select(customer, total)
        .orderBy(total, desc).limit(10)
    Ontology("shop/orders").filter(total > 100).searchAround("shop/customers").find(country == "PT")

`searchAround(target)` follows the active link between the current dataset and `target` (any
linked dataset when there is exactly one) and `find(condition)` filters the rows reached. A
syntax error, an unknown field or a missing link is a `QueryError` naming line and column."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from lark import Lark, Token, Transformer, UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken
from lark.tree import Meta

from datawell.errors import QueryError, SubError

GRAMMAR = r"""
?start: query
query: source call*
source: "Ontology" "(" dataset ")"
dataset: STRING | PATH

call: "." "filter" "(" cond ")"              -> filter
    | "." "searchAround" "(" [dataset] ")"   -> search_around
    | "." "find" "(" [cond] ")"              -> find
    | "." "select" "(" field ("," field)* ")" -> select
    | "." "orderBy" "(" field ["," DIRECTION] ")" -> order_by
    | "." "limit" "(" INT ")"                -> limit

?cond: disjunction
?disjunction: conjunction (_OR conjunction)*
?conjunction: negation (_AND negation)*
?negation: _NOT negation -> negate
    | atom
?atom: "(" disjunction ")"
    | comparison
comparison: field COMPARE value              -> compare
    | field TEXT_OPERATOR STRING             -> text_match
    | field _IN values                       -> in_values
    | field _NOT _IN values                  -> not_in_values
    | field _IS _NULL                        -> is_null
    | field _IS _NOT _NULL                   -> is_not_null
values: "[" value ("," value)* "]" | "(" value ("," value)* ")"
field: NAME | BACKQUOTED
?value: STRING                               -> string
    | SIGNED_NUMBER                          -> number
    | TRUE                                   -> true
    | FALSE                                  -> false
    | _NULL                                  -> null

COMPARE.3: "==" | "!=" | "<>" | "<=" | ">=" | "<" | ">" | "="
TEXT_OPERATOR.2: /(contains|startsWith|endsWith)\b/
DIRECTION.2: /(asc|desc)\b/i
_AND.2: /and\b/i | "&&"
_OR.2: /or\b/i | "||"
_NOT.2: /not\b/i | "!"
_IN.2: /in\b/i
_IS.2: /is\b/i
_NULL.2: /null\b/i
TRUE.2: /true\b/i
FALSE.2: /false\b/i
PATH: /[A-Za-z][A-Za-z0-9_-]*(\/[A-Za-z][A-Za-z0-9_-]*){1,2}/
NAME: /[A-Za-z_][A-Za-z0-9_]*/
BACKQUOTED: /`[^`]+`/
STRING: /"(\\.|[^"\\])*"/ | /'(\\.|[^'\\])*'/
%import common.SIGNED_NUMBER
%import common.INT
%import common.WS
%ignore WS
"""
PARSER = Lark(GRAMMAR, parser="lalr", propagate_positions=True, maybe_placeholders=True)
OPERATORS = {"==": "=", "=": "=", "!=": "<>", "<>": "<>", "<": "<", "<=": "<=", ">": ">", ">=": ">="}


@dataclass(frozen=True)
class Position:
    line: int
    column: int

    def __str__(self) -> str:
        return f"line {self.line}, column {self.column}"


@dataclass(frozen=True)
class FieldName:
    name: str
    at: Position


@dataclass(frozen=True)
class DatasetPath:
    """`namespace/dataset` (the query's owner) or `owner/namespace/dataset`."""

    owner: str | None
    namespace: str
    name: str
    at: Position

    def __str__(self) -> str:
        return "/".join(p for p in (self.owner, self.namespace, self.name) if p)


@dataclass(frozen=True)
class Compare:
    field: FieldName
    operator: str  # a QL operator, `contains`/`startsWith`/`endsWith`, `in`, `not in`, `is null`, `is not null`
    value: Any = None


@dataclass(frozen=True)
class Logical:
    operator: Literal["AND", "OR"]
    parts: tuple[Condition, ...]


@dataclass(frozen=True)
class Negation:
    part: Condition


Condition = Compare | Logical | Negation


@dataclass
class Hop:
    """One dataset of the path: the start, or a `searchAround` target, with its conditions."""

    dataset: DatasetPath | None  # None: the one dataset linked to the previous hop
    at: Position
    conditions: list[Condition] = field(default_factory=list)


@dataclass
class Query:
    hops: list[Hop]
    fields: list[FieldName] = field(default_factory=list)
    order: tuple[FieldName, bool] | None = None  # (field, descending)
    limit: int | None = None


def position(meta: Meta | Token) -> Position:
    return Position(getattr(meta, "line", 1) or 1, getattr(meta, "column", 1) or 1)


def unquote(text: str) -> str:
    body = text[1:-1]
    out: list[str] = []
    escaped = False
    for char in body:
        if escaped:
            out.append({"n": "\n", "t": "\t"}.get(char, char))
            escaped = False
        elif char == "\\":
            escaped = True
        else:
            out.append(char)
    return "".join(out)


def syntax_error(message: str, at: Position) -> QueryError:
    return QueryError(f"{message} at {at}", sub_errors=[SubError("syntax", f"{at}: {message}")])


class _Build(Transformer[Token, Any]):
    def dataset(self, items: list[Token]) -> DatasetPath:
        (token,) = items
        at = position(token)
        text = unquote(token) if token.type == "STRING" else str(token)
        parts = text.split("/")
        if len(parts) not in (2, 3) or not all(parts):
            raise syntax_error(f"{text!r} is no dataset: write namespace/dataset or owner/namespace/dataset", at)
        owner = parts[0] if len(parts) == 3 else None
        return DatasetPath(owner, parts[-2], parts[-1], at)

    def field(self, items: list[Token]) -> FieldName:
        (token,) = items
        name = token[1:-1] if token.type == "BACKQUOTED" else str(token)
        return FieldName(name, position(token))

    def string(self, items: list[Token]) -> str:
        return unquote(items[0])

    def number(self, items: list[Token]) -> int | float:
        text = str(items[0])
        return float(text) if any(c in text for c in ".eE") else int(text)

    def true(self, _items: list[Token]) -> bool:
        return True

    def false(self, _items: list[Token]) -> bool:
        return False

    def null(self, _items: list[Token]) -> None:
        return None

    def values(self, items: list[Any]) -> list[Any]:
        return list(items)

    def compare(self, items: list[Any]) -> Compare:
        name, operator, value = items
        if value is None:
            raise syntax_error("compare with null using `is null` or `is not null`", name.at)
        return Compare(name, OPERATORS[str(operator)], value)

    def text_match(self, items: list[Any]) -> Compare:
        name, operator, value = items
        return Compare(name, str(operator), unquote(value))

    def in_values(self, items: list[Any]) -> Compare:
        return Compare(items[0], "in", items[1])

    def not_in_values(self, items: list[Any]) -> Compare:
        return Compare(items[0], "not in", items[1])

    def is_null(self, items: list[Any]) -> Compare:
        return Compare(items[0], "is null")

    def is_not_null(self, items: list[Any]) -> Compare:
        return Compare(items[0], "is not null")

    def conjunction(self, items: list[Condition]) -> Logical:
        return Logical("AND", tuple(items))

    def disjunction(self, items: list[Condition]) -> Logical:
        return Logical("OR", tuple(items))

    def negate(self, items: list[Condition]) -> Negation:
        return Negation(items[0])


def parse(text: str) -> Query:
    """The query's parts; a QueryError naming the line and column of a syntax error."""
    try:
        tree = PARSER.parse(text)
    except UnexpectedEOF as exc:
        raise syntax_error("the query ends too early", Position(exc.line or 1, max(exc.column, 1))) from None
    except UnexpectedCharacters as exc:
        at = Position(exc.line, exc.column)
        raise syntax_error(f"unexpected character {text[exc.pos_in_stream or 0]!r}", at) from None
    except UnexpectedToken as exc:
        if exc.token.type == "$END":
            raise syntax_error("the query ends too early", Position(exc.line, exc.column)) from None
        expected = ", ".join(sorted({name.strip("_").lower() for name in exc.expected})[:8])
        raise syntax_error(
            f"unexpected {str(exc.token)!r} (expected {expected})", Position(exc.line, exc.column)
        ) from None
    except UnexpectedInput as exc:  # pragma: no cover - every lark parse error is one of the above
        raise syntax_error("invalid query", Position(exc.line, exc.column)) from None
    except QueryError:
        raise
    build = _Build()
    try:
        query_tree = build.transform(tree)
    except Exception as exc:  # lark wraps errors raised in callbacks
        cause = exc.__context__ if isinstance(exc.__context__, QueryError) else exc
        if isinstance(cause, QueryError):
            raise cause from None
        raise
    return _query(query_tree)


def _query(tree: Any) -> Query:
    source, *calls = tree.children
    (start,) = source.children
    query = Query(hops=[Hop(start, start.at)])
    for call in calls:
        at = position(call.meta)
        kind = call.data
        args = call.children
        if kind == "filter":
            query.hops[-1].conditions.append(args[0])
        elif kind == "search_around":
            query.hops.append(Hop(args[0], at))
        elif kind == "find":
            if len(query.hops) == 1:
                raise syntax_error("find() comes after searchAround()", at)
            if args[0] is not None:
                query.hops[-1].conditions.append(args[0])
        elif kind == "select":
            query.fields = list(args)
        elif kind == "order_by":
            query.order = (args[0], args[1] is not None and str(args[1]).lower() == "desc")
        elif kind == "limit":
            query.limit = int(args[0])
    return query
