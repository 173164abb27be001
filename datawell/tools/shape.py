"""The before-run rules that rewrite a written query's text with the catalog (issue 27), until
they move to tools/rewrite/ as the others did (issue 47).

Three need the catalog's column names (`group_per_asked`, `label_rows`,
`filter_the_end_asked`):

- **An aggregate asked "per X" without its groups.** "What are the average payment terms of
  our suppliers per country?" written `SELECT AVG(payment_terms_days) FROM suppliers` gives
  one number for all countries. When the question asks per (or for each, in each, within
  each, across different) a name that is one column of the query's tables (of its one or two
  words, the joined pair, then either word: "course ID" is `course_id`; else the key of the
  name: "for each fare" is `fare_id`), or of two tables the query joins on it, and the
  outermost query selects only aggregates and has no GROUP BY, it is grouped by that column,
  which is selected in front. A time unit after "per" is left alone ("per day" asks for one
  average of daily values as often as for a row a day).
- **Values whose rows nobody can tell apart.** "What are the easiness scores for courses in
  the Computer Science department? Show both courses and scores." written `SELECT
  easiness_score FROM course WHERE department = 'Computer Science'` lists numbers without
  saying whose. When the outermost query selects, without aggregating, only columns of one
  dataset the question names (`course` for "courses"), none of them a name, a title or a key,
  and the dataset has a `name`, `title` or `<dataset>_name` column that the WHERE does not
  pin to one value ("the price of the Red Chair" named its row), that column is selected in
  front.
- **A value put at the wrong end of a move.** "Which flight ids to Chicago (ORD) have the
  longest duration?" written `WHERE from_airport = 'ORD'` lists flights leaving Chicago.
  A text filter on a column named for one end (from/to, departure/arrival,
  origin/destination) whose table has the other end's column is read on the other end when
  the question's nearest direction word before the value ("to", "arriving at"; "from",
  "leaving"), at most four words back, puts it there.

`count_the_things_asked` reads the catalog's keys too; `compute_the_ratio_asked` reads the
question alone. A query that does not parse is returned as it is (the checker says why)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import sqlglot
from sqlglot import exp

from datawell.tools.catalog import Catalog
from datawell.tools.checker.allowed import DIALECTS, QL_DIALECT
from datawell.tools.coverage import singular
from datawell.tools.mend import key_names


@dataclass(frozen=True)
class Shaped:
    """The query to run and what was changed, in words (empty when nothing was)."""

    query: str
    changes: list[str]


def _joined_on(tree: exp.Select, columns: list[tuple[str, str]]) -> bool:
    """Whether the join conditions equate every one of these (alias, column)s with another, so
    that each holds the same value on a row (`ON o.customer = p.customer`)."""
    equal: set[frozenset[tuple[str, str]]] = set()
    for join in tree.args.get("joins") or []:
        for eq in join.find_all(exp.EQ):
            if isinstance(eq.left, exp.Column) and isinstance(eq.right, exp.Column):
                sides = [(c.table.lower(), c.name.lower()) for c in (eq.left, eq.right)]
                equal.add(frozenset(sides))
    named = [(a.lower(), c.lower()) for a, c in columns]
    return all(any(frozenset((one, other)) in equal for other in named if other != one) for one in named)


# "per country", "for each country", "in every region", "within each domain ID", "across
# different aircraft manufacturers": the one or two words the groups are asked by ("across
# all stations" sums over them: it is not a group).
_PER = re.compile(
    r"\b(?P<by>per|(?:for|in|within)\s+(?:each|every)|across\s+(?:the\s+)?(?:different|various|each))\s+"
    r"(?P<first>[a-z][a-z_]*)(?:\s+(?P<second>[a-z][a-z_]*))?",
    re.IGNORECASE,
)


# "Average rainfall per day" asks for one average of daily values as often as for one row
# per day: a time unit after "per" is left to the writer. "In each year" asks for a row a year.
_TIME_UNITS = frozenset(["second", "minute", "hour", "day", "week", "month", "quarter", "year"])


def asked_per(question: str) -> list[str]:
    """The column names a question may ask an aggregate per, the likeliest first: for "for each
    course ID" `course_id`, `course`, `id`; none when "per" comes before a time unit."""
    found = _PER.search(question)
    if not found:
        return []
    first, second = found.group("first").lower(), (found.group("second") or "").lower()
    if found.group("by").lower() == "per" and singular(first) in _TIME_UNITS:
        return []
    return [f"{first}_{second}", first, second] if second else [first]


def group_per_asked(query: str, question: str, columns: Mapping[str, Iterable[str]]) -> Shaped:
    """`query` grouped by the column the question asks per (see the module); `columns`: each
    table's column names, by the name a query gives the table."""
    names = asked_per(question)
    try:
        tree = sqlglot.parse_one(query, read=DIALECTS[QL_DIALECT])
    except sqlglot.errors.SqlglotError:
        return Shaped(query, [])
    if not names or not isinstance(tree, exp.Select) or tree.args.get("group") is not None:
        return Shaped(query, [])
    if any(not e.unalias().find(exp.AggFunc) or e.find(exp.Window) for e in tree.expressions):
        return Shaped(query, [])
    tables = [t for t in tree.find_all(exp.Table) if t.find_ancestor(exp.Select) is tree]
    found, word = _columns_named(names, tables, columns)
    if not found or (len(found) > 1 and not _joined_on(tree, found)):
        return Shaped(query, [])  # none, or several tables have it: the question does not say which
    alias, column = found[0]
    key = exp.column(column, table=alias if len(list(tree.find_all(exp.Table))) > 1 else None)
    tree.set("expressions", [key.copy(), *tree.expressions])
    tree.set("group", exp.Group(expressions=[key]))
    shown = key.sql(dialect=DIALECTS[QL_DIALECT])
    return Shaped(
        tree.sql(dialect=DIALECTS[QL_DIALECT]), [f"grouped by {shown}: the question asks per {singular(word)}"]
    )


def _columns_named(
    names: list[str], tables: list[exp.Table], columns: Mapping[str, Iterable[str]]
) -> tuple[list[tuple[str, str]], str]:
    """The (alias, column)s of these tables named as the first of `names` that any is (or its
    singular), else as the key of the first that has one ("for each fare" of a table with
    `fare_id` asks a row a fare), with that name."""
    for keys in (False, True):
        for word in names:
            forms = {f"{singular(word)}_id", f"{singular(word)}_code"} if keys else {word, singular(word)}
            found = [(t.alias_or_name, c) for t in tables for c in columns.get(t.name, ()) if c.lower() in forms]
            if found:
                return found, word
    return [], ""


def label_rows(query: str, question: str, catalog: Catalog) -> Shaped:
    """`query` with the name of the rows it lists selected in front (see the module)."""
    try:
        tree = sqlglot.parse_one(query, read=DIALECTS[QL_DIALECT])
    except sqlglot.errors.SqlglotError:
        return Shaped(query, [])
    if not isinstance(tree, exp.Select) or any(tree.args.get(p) is not None for p in ("group", "distinct")):
        return Shaped(query, [])
    selected = tree.expressions
    columns = [c for e in selected for c in e.find_all(exp.Column)]
    if not columns or any(e.find(exp.AggFunc, exp.Window, exp.Star) for e in selected):
        return Shaped(query, [])
    tables = _from_and_joins(tree)
    read = {t.alias_or_name.lower(): t.name for t in tables if isinstance(t, exp.Table)}
    qualifiers = {c.table.lower() for c in columns}
    if len(qualifiers) != 1 or len(read) != len(tables) or (qualifiers == {""} and len(read) != 1):
        return Shaped(query, [])
    (qualifier,) = qualifiers
    info = catalog.table(read[qualifier] if qualifier else next(iter(read.values())))
    if info is None or not _names_the_rows(question, info.name):
        return Shaped(query, [])
    own = {c.lower() for c in info.columns}
    label = next((c for c in ("name", "title", f"{singular(info.name.lower())}_name") if c in own), None)
    keys = key_names(info)
    shown = {c.name.lower() for c in columns}
    if label is None or any(n in keys or n in ("name", "title") or n.endswith(_TELLING) for n in shown):
        return Shaped(query, [])
    where = tree.args.get("where")
    if where is not None and any(
        isinstance(c.parent, exp.EQ) and c.name.lower() == label for c in where.find_all(exp.Column)
    ):
        return Shaped(query, [])  # the question named the row: "the price of the Red Chair"
    column = exp.column(label, table=columns[0].table or None)
    tree.set("expressions", [column, *selected])
    said = column.sql(dialect=DIALECTS[QL_DIALECT])
    return Shaped(
        tree.sql(dialect=DIALECTS[QL_DIALECT]), [f"selected {said} in front: the rows did not say whose they are"]
    )


# The two ends of a move, as words of a column's name (`from_airport`, `arrival_city`) and as
# the words of a question that put a value at that end ("flights to Chicago (ORD)").
_MOVES = [("from", "to"), ("departure", "arrival"), ("origin", "destination")]  # (start, end)
_ENDS = {word: end for pair in _MOVES for word, end in zip(pair, ("start", "end"), strict=True)}
_OTHER_END = {**dict(_MOVES), **{end: start for start, end in _MOVES}}
_START = re.compile(r"\b(?:from|leav(?:e|es|ing)|depart(?:s|ing)?|out of)\b", re.IGNORECASE)
_END = re.compile(r"\b(?:to|into|arriv(?:e|es|ing)(?: at| in)?|bound for|towards?)\b", re.IGNORECASE)
_CLOSE = 4  # words a direction may stand before the value it puts at an end
DIRECTED = re.compile(rf"\b(?:{'|'.join(_ENDS)})_\w+|_(?:from|to)\b", re.IGNORECASE)


def filter_the_end_asked(query: str, question: str, catalog: Catalog) -> Shaped:
    """`query` with each filter of a value on one end of a move read on the end the question
    puts the value at: "Which flight ids to Chicago (ORD) ...?" written `WHERE from_airport =
    'ORD'` filters flights leaving Chicago; when the table also has `to_airport`, and the
    question's last direction before "ORD", at most four words back, is "to", the filter reads
    `to_airport`. A value the question does not say, or says at both ends, or that the query
    filters at both ends, is left alone."""
    try:
        tree = sqlglot.parse_one(query, read=DIALECTS[QL_DIALECT])
    except sqlglot.errors.SqlglotError:
        return Shaped(query, [])
    changes = []
    for select in tree.find_all(exp.Select):
        read = {t.alias_or_name.lower(): t.name for t in select.find_all(exp.Table)}
        filters = [
            (eq.this, eq.expression)
            for eq in select.find_all(exp.EQ)
            if eq.find_ancestor(exp.Select) is select and eq.find_ancestor(exp.Join) is None
            if isinstance(eq.this, exp.Column) and isinstance(eq.expression, exp.Literal) and eq.expression.is_string
        ]
        for column, value in filters:
            other = _other_end(column, read, catalog)
            if any(c.name.lower() == other.lower() and v.this == value.this for c, v in filters):
                continue  # both ends asked for the value ("depart from or arrive at JFK")
            if other and (asked := _end_asked(question, value.this)) and asked != _ENDS[_end_word(column.name)]:
                said = column.sql(dialect=DIALECTS[QL_DIALECT])
                column.set("this", exp.to_identifier(other))
                changes.append(f"{said} read as {other}: the question puts {value.this!r} at the other end")
    if not changes:
        return Shaped(query, [])
    return Shaped(tree.sql(dialect=DIALECTS[QL_DIALECT]), changes)


def _end_word(name: str) -> str:
    return next((w for w in name.lower().split("_") if w in _ENDS), "")


def _other_end(column: exp.Column, read: Mapping[str, str], catalog: Catalog) -> str:
    """The name of the column at the other end (`to_airport` for `from_airport`) when the
    column's table has it, else ""."""
    word = _end_word(column.name)
    if not word:
        return ""
    tables = [read[column.table.lower()]] if column.table else list(read.values())
    infos = [info for name in tables if (info := catalog.table(name)) is not None]
    holders = [info for info in infos if any(c.lower() == column.name.lower() for c in info.columns)]
    if len(holders) != 1:
        return ""
    parts = [_OTHER_END[w] if w == word else w for w in column.name.lower().split("_")]
    other = "_".join(parts)
    return next((c for c in holders[0].columns if c.lower() == other), "")


def _end_asked(question: str, value: str) -> str:
    """Where the question's nearest direction before each mention of `value` puts it, "start"
    or "end", when every mention with a direction agrees; else ""."""
    found = set()
    for mention in re.finditer(rf"(?<!\w){re.escape(value)}(?!\w)", question, re.IGNORECASE):
        before = " ".join(re.findall(r"[\w']+", question[: mention.start()])[-_CLOSE:])
        ends = [(m.end(), "start") for m in _START.finditer(before)] + [(m.end(), "end") for m in _END.finditer(before)]
        if ends:
            found.add(max(ends)[1])
    return found.pop() if len(found) == 1 else ""


# Column endings that tell rows apart already: a name, an id, a code, a number.
_TELLING = ("_name", "_id", "_code", "_number", "_no")


def _from_and_joins(select: exp.Select) -> list[exp.Expr]:
    """What the SELECT reads rows from: its FROM's source, then each join's ([] without a FROM)."""
    start = select.args.get("from_")
    return [start.this, *(j.this for j in select.args.get("joins") or [])] if start is not None else []


def _names_the_rows(question: str, table: str) -> bool:
    """Whether the question names the table's rows ("courses", "course"; "airport" for airport)."""
    words = {singular(w) for w in re.findall(r"[a-z]+", question.lower())}
    return singular(table.lower().rsplit("_", 1)[-1]) in words


def count_the_things_asked(query: str, question: str, catalog: Catalog) -> Shaped:
    """`query` with each count of another table's key that the question asks the number of
    counted once per thing: "Return the annual numbers of publications and journals" written
    `SELECT year, COUNT(pid), COUNT(jid) FROM publication GROUP BY year` counts a journal once
    per publication in it. When a COUNT of the outermost query reads a column that is not its
    table's own key but is another table's (`jid` of journal, by `key_names`), the question
    asks how many of that table's things there are ("how many journals", "the number of
    journals"; "the most patients not showing up" ranks by no-shows, not by patients), and
    the query does not read that table (joined, it is what the rows are grouped by:
    `COUNT(loans.book_id) ... JOIN books ... GROUP BY books.title` counts loans), it counts
    `DISTINCT`, wherever the query uses that count (an ORDER BY too)."""
    try:
        tree = sqlglot.parse_one(query, read=DIALECTS[QL_DIALECT])
    except sqlglot.errors.SqlglotError:
        return Shaped(query, [])
    if not isinstance(tree, exp.Select):
        return Shaped(query, [])
    read = {t.alias_or_name.lower(): t.name for t in _from_and_joins(tree) if isinstance(t, exp.Table)}
    counted: dict[str, str] = {}  # a count's SQL -> the table whose things it counts
    for count in [c for e in tree.expressions for c in e.find_all(exp.Count)]:
        column = count.this
        if not isinstance(column, exp.Column) or count.find_ancestor(exp.Select) is not tree:
            continue  # COUNT(*), COUNT(DISTINCT ...), or a subquery's count
        name = column.name.lower()
        own = (
            read.get(column.table.lower()) if column.table else (next(iter(read.values())) if len(read) == 1 else None)
        )
        info = catalog.table(own) if own else None
        if info is None or name in key_names(info):
            continue
        keyed = [t for t in catalog.tables if t.name != info.name and name in key_names(t)]
        if len(keyed) != 1 or keyed[0].name in read.values() or not _asks_how_many(question, keyed[0].name):
            continue  # grouped by the thing it keys ("the number of loans per book"), or not asked
        counted[count.sql()] = keyed[0].name
    if not counted:
        return Shaped(query, [])
    for count in list(tree.find_all(exp.Count)):
        if count.sql() in counted and count.find_ancestor(exp.Select) is tree:
            count.set("this", exp.Distinct(expressions=[count.this.copy()]))
    changes = [
        f"{count} counts each {singular(table.rsplit('.', 1)[-1].lower())} once" for count, table in counted.items()
    ]
    return Shaped(tree.sql(dialect=DIALECTS[QL_DIALECT]), changes)


def _asks_how_many(question: str, table: str) -> bool:
    """Whether the question asks how many of the table's things there are: "how many
    journals", "the number of journals", "the annual numbers of publications and journals"."""
    one = singular(table.rsplit(".", 1)[-1].lower()).replace("_", " ")
    thing = rf"{re.escape(one)}(?:e?s)?\b"
    return bool(
        re.search(
            rf"\bhow\s+many\s+(?:\w+\s+){{0,2}}?{thing}|\bnumbers?\s+of\s+(?:[\w,]+\s+){{0,3}}?{thing}", question, re.I
        )
    )


_COUNTED = r"(?:the\s+)?(?:(?:total\s+)?number\s+of\s+)?(\w+)"
_RATIO = re.compile(rf"\bratio\s+of\s+{_COUNTED}\s+to\s+{_COUNTED}", re.IGNORECASE)


def compute_the_ratio_asked(query: str, question: str) -> Shaped:
    """`query` with the ratio the question asks for computed from the two aggregates it
    selects: "How does the ratio of publications to journals change over the years? Return the
    annual numbers of publications and journals as well." written `SELECT year, COUNT(pid) AS
    publications, COUNT(jid) AS journals ...` shows both numbers and no ratio. When the
    question asks for the "ratio of A to B", the outermost query divides nothing, and exactly
    one selected aggregate is named for A and one for B (their aliases hold the words),
    `CAST(A AS DOUBLE PRECISION) / NULLIF(B, 0) AS ratio` is selected after them."""
    asked = _RATIO.search(question)
    try:
        tree = sqlglot.parse_one(query, read=DIALECTS[QL_DIALECT])
    except sqlglot.errors.SqlglotError:
        return Shaped(query, [])
    if asked is None or not isinstance(tree, exp.Select) or tree.find(exp.Div):
        return Shaped(query, [])

    def named(word: str) -> list[exp.Expr]:
        stem = singular(word.lower())
        return [
            e
            for e in tree.expressions
            if isinstance(e, exp.Alias) and e.this.find(exp.AggFunc) and stem in singular(e.alias.lower())
        ]

    dividends, divisors = named(asked[1]), named(asked[2])
    if len(dividends) != 1 or len(divisors) != 1 or dividends[0] is divisors[0]:
        return Shaped(query, [])
    ratio = exp.Div(
        this=exp.cast(dividends[0].this.copy(), exp.DataType.Type.DOUBLE),
        expression=exp.Nullif(this=divisors[0].this.copy(), expression=exp.Literal.number(0)),
    )
    tree.set("expressions", [*tree.expressions, ratio.as_("ratio")])
    return Shaped(
        tree.sql(dialect=DIALECTS[QL_DIALECT]),
        [f"selected the ratio asked for: {dividends[0].alias} to {divisors[0].alias}"],
    )
