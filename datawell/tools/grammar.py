"""The query writer's reply as a GBNF grammar built from the namespace's catalog (issue 50):
the embedded model decodes under it, so every table and column it writes is one the catalog
shows, and a `table.column` names a column of that table (PICARD's idea, at decode time).

The grammar accepts the whole reply, the JSON object `QueryDraft` asks for (`columns` first
when the writer names its columns, then `query` and `refusal`), and constrains only the query,
written inside its JSON string (a double quote is `\\"` there, a line break `\\n`).

The query is read as a sequence of words and separators, not parsed as SQL: what the grammar
holds is the names. A word is a keyword, a function name before `(`, a number, a catalog column,
a catalog table, `T.col` with `col` one of table `T`'s columns, `a.col` with `a` an alias
(any identifier but a table's name; GBNF cannot track aliases, so `col` is any catalog column),
an alias after `AS` (free), or a table after `FROM`/`JOIN` (a catalog table, with its alias).
String literals are free. Two places read free names, because what they name the grammar cannot
see: a query that starts with `WITH` (its CTEs and their columns), and what follows `ORDER BY`
(output aliases); there a bare name is free, while `T.col` of a catalog table stays checked.

llama.cpp takes the text as the chat request's `grammar` (it refuses one with a JSON schema
beside it, so the grammar replaces the schema). `lark_grammar` renders the same rules for lark,
so tests and `scripts/grammar_check.py` check the grammar without a model."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from datawell.tools.checker import FUNCTION_NAMES
from datawell.tools.checker.allowed import SQLITE_FUNCTIONS

PLAIN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
FIRST = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_"
REST = FIRST + "0123456789"
KEYWORDS = (  # noqa: SIM905 (a list of words reads better as words)
    "select distinct from where group by having asc desc limit offset join inner left right full outer "
    "cross natural on using as and or not in is null like ilike between case when then else end exists "
    "union all intersect except with recursive true false interval nulls first last over partition rows "
    "range unbounded preceding following current row filter within any some similar to escape date "
    "timestamp time zone at integer int bigint smallint real float double precision numeric decimal text "
    "varchar char character boolean bool year month day hour minute second epoch dow doy quarter week "
    "isodow millennium century decade years months days hours minutes seconds for both leading trailing "
    "without varying current_date current_timestamp current_time localtimestamp localtime"
).split()
ORDER = "order"  # `ORDER BY` switches to free names: what follows may name output aliases
EXTRA_FUNCTIONS = (  # noqa: SIM905 (a list of words reads better as words)
    "coalesce nullif cast extract strftime julianday to_date to_timestamp to_char date_part date_trunc "
    "now age concat concat_ws substr substring position strpos length char_length octet_length round "
    "trunc abs ceil ceiling floor sign power pow sqrt ln log log10 exp mod random greatest least lower "
    "upper initcap trim ltrim rtrim btrim replace left right lpad rpad reverse split_part regexp_replace "
    "count sum avg min max string_agg array_agg group_concat bool_and bool_or every stddev stddev_pop "
    "stddev_samp variance var_pop var_samp median percentile_cont percentile_disc mode row_number rank "
    "dense_rank lag lead first_value last_value nth_value ntile percent_rank cume_dist iif ifnull "
    "datetime julianday unixepoch time date timestamp make_date instr total"
).split()


def functions() -> list[str]:
    """The function names a query may call: the checker's, the SQLite spellings it takes, and
    the common ones the checker maps to its own (an unknown one is the checker's to refuse)."""
    return sorted({*FUNCTION_NAMES, *SQLITE_FUNCTIONS, *EXTRA_FUNCTIONS} - {"extract"})


def literal(text: str) -> str:
    """`text` as a GBNF string literal."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def in_json(text: str) -> str:
    """`text` as it is written inside a JSON string."""
    return text.replace("\\", "\\\\").replace('"', '\\"')


def keyword(word: str) -> str:
    """A keyword in any case: `[sS][eE][lL]...`."""
    return " ".join(f"[{c.lower()}{c.upper()}]" if c.isalpha() else literal(c) for c in word)


def spellings(name: str) -> list[str]:
    """How a query may write a catalog name inside the JSON string: as it is when it is a plain
    identifier, and always between double quotes."""
    quoted = literal(in_json(f'"{name}"'))
    return [literal(name), quoted] if PLAIN.fullmatch(name) else [quoted]


def _alternatives(names: Iterable[str]) -> str:
    found = [s for n in dict.fromkeys(names) for s in spellings(n)]
    return " | ".join(found) if found else "[^\\x00-\\xff]"  # nothing: a class no JSON text matches


def _class(chars: str) -> str:
    return "[" + "".join("\\-" if c == "-" else c for c in chars) + "]"


def _not_words(words: Sequence[str], rule: str) -> list[str]:
    """Rules for a plain identifier that is none of `words` (a trie of them, each node saying
    which characters leave it): `rule` is the identifier."""
    trie: dict[str, dict] = {}
    for word in words:
        node = trie
        for c in word:
            node = node.setdefault(c, {})
        node["$"] = {}
    rules: list[str] = []

    def walk(node: dict, name: str, depth: int) -> None:
        # A node's rule is never empty: where a word may end early, its parent makes it optional.
        children = sorted(c for c in node if c != "$")
        allowed = FIRST if depth == 0 else REST
        leave = "".join(c for c in allowed if c not in children)
        parts = [f"{_class(leave)} ident-rest*"] if leave else []
        for i, c in enumerate(children):
            child = f"{name}-{i}"
            parts.append(f"{literal(c)} {child}" + ("" if "$" in node[c] else "?"))
            walk(node[c], child, depth + 1)
        rules.append(f"{name} ::= " + " | ".join(parts))

    walk(trie, rule, 0)
    return rules


def split_columns(columns: Sequence[str]) -> dict[str, list[str]]:
    """`table.column` names (as the catalog node lists them) as table -> its columns."""
    tables: dict[str, list[str]] = {}
    for name in columns:
        table, _, column = name.rpartition(".")
        tables.setdefault(table, []).append(column)
    return tables


def _soup(mode: str, tables: dict[str, list[str]]) -> list[str]:
    """The query's words and separators: `s` holds bare names to the catalog, `f` frees them."""
    free = mode == "f"
    table_ref = "table-name" + (" | ident" if free else "")
    qualified = [f"t{i}-name {literal('.')} (t{i}-cols | {literal('*')})" for i in range(len(tables))]
    alias_col = "alias " + literal(".") + " (" + ("ident | " if free else "") + f"column | {literal('*')})"
    words = [
        "keyword",
        "number",
        "column",
        "table-name (sp alias)?",
        alias_col,
        *qualified,
        f"from-kw sp ({table_ref}) (sp (as-kw sp)? alias)?",
        "as-kw sp (ident | quoted-ident)",
        f"{literal(')')} sp ident",
        f"{keyword('extract')} ws {literal('(')} ws ident sp from-kw",
        f"{keyword('is')} sp ({keyword('not')} sp)? {keyword('distinct')} sp from-kw",
        *(["ident", "quoted-ident"] if free else []),
    ]
    closed = [
        f"from-kw ws {literal('(')}",
        f"function ws {literal('(')}",
        *([] if free else [f"{keyword(ORDER)} sp {keyword('by')} sep f-soup"]),
    ]
    return [
        f"{mode}-soup ::= {mode}-piece* {mode}-word?",
        f"{mode}-piece ::= sep | {mode}-closed | {mode}-word sep",
        f"{mode}-word ::= " + " | ".join(f"( {w} )" for w in words),
        f"{mode}-closed ::= " + " | ".join(f"( {w} )" for w in closed),
    ]


def query_rules(columns: Sequence[str]) -> list[str]:
    """GBNF rules of a query on these `table.column` names, as `sql` (inside a JSON string)."""
    tables = split_columns(columns)
    plain_tables = [t for t in tables if PLAIN.fullmatch(t)]
    rules = [
        f"sql ::= ws ({keyword('select')} sep s-soup | {keyword('with')} sep f-soup)",
        *_soup("s", tables),
        *_soup("f", tables),
        # one character or escape between words; punctuation; a string literal
        "sep ::= wschar | [=<>!+*/%|(),;:~\\-] | string",
        'wschar ::= " " | "\\\\n" | "\\\\t" | "\\\\r"',
        "ws ::= wschar*",
        "sp ::= wschar+",
        'string ::= "\'" ("\'\'" | [^\'"\\\\\\x00-\\x1f] | jescape)* "\'"',
        'jescape ::= "\\\\" (["\\\\/bfnrt] | "u" [0-9a-fA-F] [0-9a-fA-F] [0-9a-fA-F] [0-9a-fA-F])',
        'number ::= [0-9]+ ("." [0-9]+)? ([eE] [+\\-]? [0-9]+)?',
        f"ident ::= {_class(FIRST)} ident-rest*",
        f"ident-rest ::= {_class(REST)}",
        f'quoted-ident ::= {literal(in_json(chr(34)))} [^"\\\\\\x00-\\x1f]+ {literal(in_json(chr(34)))}',
        *_not_words(plain_tables, "alias"),
        "keyword ::= " + " | ".join(keyword(k) for k in KEYWORDS if k != "from"),
        f"from-kw ::= {keyword('from')} | {keyword('join')}",
        f"as-kw ::= {keyword('as')}",
        "function ::= " + " | ".join(keyword(f) for f in functions()),
        f"table-name ::= {_alternatives(tables)}",
        f"column ::= {_alternatives(c for cs in tables.values() for c in cs)}",
    ]
    for i, (table, cols) in enumerate(tables.items()):
        rules.append(f"t{i}-name ::= {_alternatives([table])}")
        rules.append(f"t{i}-cols ::= {_alternatives(cols)}")
    return rules


def reply_grammar(columns: Sequence[str], named: Sequence[str] = ()) -> str:
    """The GBNF of the query writer's whole reply: `{"columns": [...], "query": "...",
    "refusal": "..."}` with `columns` (from `named`) only when the writer names its columns,
    and the query on the catalog's `table.column` names `columns`."""
    query = f'{literal(chr(34) + "query" + chr(34))} jws ":" jws "\\"" sql? "\\""'
    refusal = f'{literal(chr(34) + "refusal" + chr(34))} jws ":" jws jstring'
    if named:
        items = " | ".join(literal(f'"{in_json(n)}"') for n in dict.fromkeys(named))
        members = (
            f'{literal(chr(34) + "columns" + chr(34))} jws ":" jws "[" jws (named (jws "," jws named)*)? jws "]" '
            f'(jws "," jws {query})? (jws "," jws {refusal})?'
        )
        head = [f"named ::= {items}"]
    else:
        members = f'({query} (jws "," jws {refusal})? | {refusal})?'
        head = []
    return "\n".join(
        [
            f'root ::= "{{" jws {members} jws "}}"',
            *head,
            "jws ::= [ \\t\\n]*",
            'jstring ::= "\\"" ([^"\\\\\\x00-\\x1f] | jescape)* "\\""',
            *query_rules(columns),
        ]
    )


def lark_grammar(gbnf: str) -> str:
    """The same rules for lark (Earley), to check what the grammar accepts without a model."""
    out = []
    for line in gbnf.splitlines():
        name, _, body = line.partition(" ::= ")
        out.append(f"{_lark_name(name)}: {_lark_body(body)}")
    return "\n".join(out)


def _lark_name(name: str) -> str:
    return name.replace("-", "_")


TOKEN = re.compile(r'"(?:\\.|[^"\\])*"|\[(?:\\.|[^\]\\])*\]|[A-Za-z][A-Za-z0-9-]*|\s+|.')


def _lark_body(body: str) -> str:
    parts = []
    for token in TOKEN.findall(body):
        if token.startswith("[") and len(token) > 1:
            parts.append("/" + token.replace("/", "\\/") + "/")
        elif token.startswith('"'):
            parts.append(token)
        elif token[0].isalpha():
            parts.append(_lark_name(token))
        else:
            parts.append(token)
    return "".join(parts)
