"""Reading a query: parse it, refuse anything not on the allow-list, and decide what every
table reference means.

A table reference is a CTE only where sqlglot's scope analysis finds a CTE of that name
visible (defined in this query level or an enclosing one, before it, or itself in a
`WITH RECURSIVE`); every other reference must be a dataset the caller may read. A CTE may not
be named like any table the databases hold (see `taken_name`), and every CTE is renamed to a
reserved name in the SQL that runs, so the database cannot take a reference the checker saw as
a CTE for a real table, whatever its own scoping rules."""

from __future__ import annotations

from sqlglot import exp
from sqlglot.errors import OptimizeError, ParseError, TokenError
from sqlglot.optimizer.scope import Scope, traverse_scope

from datawell.errors import QueryError, SubError
from datawell.tools.checker.allowed import (
    ADAPTABLE,
    ALLOWED,
    ALLOWED_TYPES,
    CTE_PREFIX,
    DEFAULT_CAPS,
    DIALECTS,
    FUNCTION_NAMES,
    PATTERN_CHARS,
    QL_DIALECT,
    RESERVED_PREFIX,
    SEMANTIC,
    SQLITE_FUNCTIONS,
    Caps,
    ParsedQuery,
    TableRef,
    did_you_mean,
    refuse,
    taken_name,
)
from datawell.tools.checker.bounds import bound, expansion, limited


def parse(text: str, caps: Caps = DEFAULT_CAPS) -> ParsedQuery:
    """Exactly one SELECT (or WITH/UNION of SELECTs) built only from allowed expressions."""
    if not text.strip():
        raise refuse("the query is empty", "empty_query")
    dialect = DIALECTS[QL_DIALECT]
    tokens = bound(text, caps)  # before anything recursive or superlinear reads it
    try:
        tokens = tokens or dialect.tokenize(text)
        statements = [s for s in dialect.parser().parse(tokens, text) if s is not None]
    except RecursionError:  # something nests that `bound` does not count
        raise refuse("the query nests too deeply to be read", "nesting_limit") from None
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
    return _Survey(text, tree, caps).parsed()


class _Survey:
    """One walk over the tree: refuse what is not allowed, note what compiling needs, and fold
    unquoted names to lower case (PostgreSQL's rule, applied on every store)."""

    def __init__(self, text: str, tree: exp.Query, caps: Caps) -> None:
        self.text = text
        self.tree = tree
        self.caps = caps
        self.problems: dict[str, SubError] = {}
        self.tables: list[tuple[exp.Table, TableRef]] = []
        self.semantic: list[exp.Anonymous] = []
        self.adaptable: list[exp.Expr] = []

    def parsed(self) -> ParsedQuery:
        for node in self.tree.walk():  # breadth first: a table is seen before its names are folded
            self._visit(node)
        self._semantic_within_cap()
        if self.problems:
            raise QueryError("the query uses something that is not allowed", sub_errors=list(self.problems.values()))
        ctes = _table_scopes(self.tree)
        self._within_expansion(ctes)
        tables = [(t, ref) for t, ref in self.tables if id(t) not in ctes]
        names = [c.alias for c in self.tree.find_all(exp.CTE)]
        _rename_ctes(self.tree, ctes)
        references = list(dict.fromkeys(ref for _, ref in tables))
        return ParsedQuery(self.text, self.tree, references, tables, self.semantic, self.adaptable[::-1], names)

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
            if _recursive_union(node):
                self._refuse(
                    f"union {node.alias}",
                    "recursive_union",
                    f"WITH RECURSIVE {node.alias}: write UNION ALL and stop the recursion with a WHERE condition; "
                    "UNION keeps every row it has seen in memory to drop repeats",
                )
            if taken_name(node.alias):
                self._refuse(
                    f"cte {node.alias}",
                    "cte_name_taken",
                    f"WITH {node.alias}: a CTE may not be named like a table of the database; give it another name",
                )
        elif isinstance(node, exp.Column):
            # `owner.namespace.orders.total` refers to the table by its alias, `orders`.
            if node.args.get("db") or node.args.get("catalog"):
                node.set("db", None)
                node.set("catalog", None)
        elif isinstance(node, exp.DataType):
            if node.this not in ALLOWED_TYPES:
                name = node.sql(QL_DIALECT)
                self._refuse(name, "type_not_allowed", f"type {name} is not allowed in a query")
        elif isinstance(node, exp.Pad) and not self._pad_within_cap(node):
            name = "lpad" if node.args.get("is_left") else "rpad"
            self._refuse(
                name, "argument_limit", f"{name}() builds at most {self.caps.built_chars:,} characters in a query"
            )
        elif isinstance(node, exp.Like | exp.ILike) and not _pattern_within_cap(node):
            self._refuse("like", "argument_limit", f"a LIKE pattern may be at most {PATTERN_CHARS} characters long")
        elif isinstance(node, exp.Trim) and node.expression is not None and not _pattern_within_cap(node):
            # PostgreSQL's btrim compares each character with the whole set, uninterruptibly.
            self._refuse("trim", "argument_limit", f"trim()'s characters may be at most {PATTERN_CHARS} long")
        elif (
            isinstance(node, ADAPTABLE)
            or (isinstance(node, exp.Add | exp.Sub) and isinstance(node.expression, exp.Interval))
            or (isinstance(node, exp.EQ | exp.NEQ) and isinstance(node.expression, exp.Any | exp.All))
        ):
            self.adaptable.append(node)

    def _within_expansion(self, ctes: dict[int, exp.CTE]) -> None:
        """SQLite plans a CTE once per place that reads it, copies within copies: refuse a
        query whose copies pass `caps.expanded` (`bounds.expansion`)."""
        reads: dict[int, list[int]] = {}
        for table in self.tree.find_all(exp.Table):
            if id(table) in ctes:
                reader = table.find_ancestor(exp.CTE)
                reads.setdefault(id(reader) if reader is not None else 0, []).append(id(ctes[id(table)]))
        blocks = expansion(reads, 0)
        if blocks > self.caps.expanded:
            raise limited(
                "expansion_limit",
                "query_max_expanded",
                f"the query reads its CTEs so often that it expands to {blocks:,} query blocks; "
                f"the limit is {self.caps.expanded}",
            )

    def _pad_within_cap(self, node: exp.Pad) -> bool:
        """A literal length past the cap is refused; any other length is clamped to it, so one
        call never builds a string that takes the database seconds to search."""
        length = node.expression
        if isinstance(length, exp.Literal) and not length.is_string:
            return float(length.this) <= self.caps.built_chars
        cap = exp.Literal.number(self.caps.built_chars)
        # Not LEAST: PostgreSQL's ignores a NULL, where lpad(x, NULL) is NULL.
        clamped = exp.Case(
            ifs=[exp.If(this=exp.GT(this=length.copy(), expression=cap), true=cap.copy())], default=length
        )
        node.set("expression", exp.cast(clamped, "INT", copy=False))
        return True

    def _semantic_within_cap(self) -> None:
        if len(self.semantic) > self.caps.semantic:
            self._refuse(
                "semantic",
                "semantic_limit",
                f"the query calls semantic() {len(self.semantic)} times; the limit is {self.caps.semantic}",
            )


def _pattern_within_cap(node: exp.Like | exp.ILike | exp.Trim) -> bool:
    """A literal pattern (LIKE's, or trim's set of characters) past the cap is refused; any
    other is NULL past it (LIKE matches nothing, trim gives NULL)."""
    pattern = node.expression
    if isinstance(pattern, exp.Literal):
        return len(pattern.this) <= PATTERN_CHARS
    short = exp.LTE(this=exp.Length(this=pattern.copy()), expression=exp.Literal.number(PATTERN_CHARS))
    node.set("expression", exp.Case(ifs=[exp.If(this=short, true=pattern)]))
    return True


def _recursive_union(cte: exp.CTE) -> bool:
    """A CTE of a WITH RECURSIVE that reads itself and joins its rows with UNION (not UNION ALL)."""
    with_ = cte.parent
    query = cte.this
    if not (isinstance(with_, exp.With) and with_.args.get("recursive")):
        return False
    if not (isinstance(query, exp.Union) and query.args.get("distinct")):
        return False
    return any(t.name == cte.alias and not t.db for t in query.find_all(exp.Table))


def _describe(node: exp.Expr) -> str:
    if isinstance(node, exp.Func):
        return f"function {node.sql_name().lower()}()"
    return (node.key or type(node).__name__).upper().replace("_", " ")


def _reserved(name: str) -> bool:
    return name.lower().startswith(RESERVED_PREFIX) or name.lower() == "__metadata"


def _table_scopes(tree: exp.Query) -> dict[int, exp.CTE]:
    """id(table node) -> the CTE it reads, for every reference that names a visible CTE."""
    try:
        scopes = traverse_scope(tree)
    except OptimizeError as exc:
        raise refuse(f"the query cannot be analysed: {exc}", "invalid_query") from None
    decided: dict[int, exp.CTE | None] = {}
    for scope in scopes:
        for table in scope.tables:
            source = scope.cte_sources.get(table.name)
            visible = isinstance(source, Scope) and not table.args.get("db") and not table.args.get("catalog")
            cte = source.expression.find_ancestor(exp.CTE) if visible and isinstance(source, Scope) else None
            decided.setdefault(id(table), cte)
    for table in tree.find_all(exp.Table):
        if id(table) not in decided:  # a place scope analysis does not reach: never guess
            raise refuse(
                f"the query cannot be analysed: cannot tell what {table.sql(QL_DIALECT)!r} reads", "invalid_query"
            )
    return {key: cte for key, cte in decided.items() if cte is not None}


def _rename_ctes(tree: exp.Query, ctes: dict[int, exp.CTE]) -> None:
    """Each CTE gets a reserved name (`__dw_cteN`) and each reference to it reads that name under
    the name the query used, so column qualifiers and error messages stay the caller's."""
    names = {id(cte): f"{CTE_PREFIX}{i}" for i, cte in enumerate(tree.find_all(exp.CTE))}
    references = [t for t in tree.find_all(exp.Table) if id(t) in ctes]
    for table in references:
        alias = table.args.get("alias") or exp.TableAlias(this=exp.to_identifier(table.name, quoted=table.this.quoted))
        renamed = exp.to_identifier(names[id(ctes[id(table)])], quoted=True)
        table.replace(exp.Table(this=renamed, alias=alias))
    for cte in tree.find_all(exp.CTE):
        cte.args["alias"].set("this", exp.to_identifier(names[id(cte)], quoted=True))
