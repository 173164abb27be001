"""A query's shape fitted to its question (issue 27).

A small query writer often gets a query's logic right and its shape wrong, in ways the user
then reads as a wrong answer. Before a query runs, these slips are mended:

- **A LIMIT the question did not ask for.** "What is the total number of publications in
  each year?" written with `ORDER BY total DESC LIMIT 10` hides every year past the tenth.
  The LIMIT of the outermost query goes when the question names no number and no
  superlative (top, first, most, highest, strongest, ...) and the query does not rank by
  relevance (`semantic()`): the prompt's rules 7 and 8, enforced.
- **Whole-number division.** `capacity / range_miles` of two integer columns is 0 in both
  stores; a ratio, share or average asked in words is meant as a fraction. The dividend of
  a division becomes `CAST(... AS DOUBLE PRECISION)` unless one side is a decimal already;
  a division by a constant (`/ 60`: a unit's conversion) stays as written.
- **Fractions where whole numbers were asked for.** "What's the difference in days between
  today and the earliest departure? Give the answer as an integer." written `SELECT
  julianday('now') - MIN(julianday(departure))` answers 2522.5. When the question asks for
  an integer ("as an integer", "to integer minutes", "in whole days"), each selected value
  the query computes (arithmetic, an aggregate other than COUNT, a function) that is not
  cast to an integer already is: `CAST(... AS INT)`.
- **A filter to a placeholder nobody asked for.** "What is the average cost of a one-way
  trip for each airport pair?" written `WHERE restriction_code = 'NONE'` averages only the
  unrestricted fares. A top-level equality of a column with a text that stands for nothing
  (NONE, N/A, NULL, unknown, ...) goes when the question names no word of the column and
  says nothing of the kind (no, none, without, missing, unknown, ...).
- **One query per value, united.** "How many course offerings have a final exam and how many
  do not?" written as two `SELECT COUNT(*) ... WHERE has_final_exam = TRUE/FALSE` joined by
  UNION gives two numbers nobody can tell apart. A UNION of the same aggregates of one table,
  each under a WHERE of one column equal to another value, is one query grouped by that
  column, which is selected in front: `SELECT has_final_exam, COUNT(*) ... WHERE
  has_final_exam IN (TRUE, FALSE) GROUP BY has_final_exam`.
- **Groups without their names.** `SELECT AVG(cost) FROM fare GROUP BY from_airport,
  to_airport` returns averages nobody can tell apart. When the outermost query selects only
  aggregates, its GROUP BY columns are selected, in front.
- **Rows ordered by a column, its extreme selected.** "Which airports have the shortest
  minimum connect time, sorted in ascending order?" written `SELECT airport_name,
  MIN(minimum_connect_time) FROM airport ORDER BY minimum_connect_time LIMIT 10`: with no
  GROUP BY, SQLite returns one row (PostgreSQL refuses it), yet ordering by the bare column
  asks for rows. When the outermost query has no GROUP BY, selects a MIN or MAX of a column
  beside other columns, and orders by that column itself, the MIN or MAX is the column.
- **Rows repeated by a join that only filters.** "What are the top 3 publications with the
  highest number of citations?" written `SELECT p.title, p.citation_num FROM publication AS
  p JOIN cite AS c ON p.pid = c.cited ORDER BY p.citation_num DESC LIMIT 3` lists a
  publication once per citation, so the top three are one publication three times. When the
  outermost query selects plain columns (no aggregate, no window) of one table, through its
  alias, joins others it neither selects nor orders by, and has no GROUP BY or DISTINCT, each
  row is shown once: `SELECT DISTINCT`. (An ORDER BY of anything not selected leaves it
  alone, as PostgreSQL refuses DISTINCT then.)
- **A join that only passes a key along, under an aggregate.** "What is the average clarity
  score for each instructor who taught a course?" written `FROM instructor AS i JOIN
  comment_instructor AS ci ON i.instructor_id = ci.instructor_id JOIN offering_instructor AS
  oi ON ci.instructor_id = oi.instructor_id ...` averages each course once per comment on its
  instructor, and drops the instructors nobody commented on. When the outermost query
  aggregates, and an inner-joined table is read only in join conditions, each time as the
  same column equal to another table's column, and in at least one later condition, and
  its own condition is that equality alone, the join goes and the later conditions read the
  column it was joined on (`oi.instructor_id = i.instructor_id`).
- **A ranking whose measure is hidden** (`show_measure`: for answers written in words, the
  assistant's steps). `SELECT name FROM doctors ... GROUP BY name ORDER BY COUNT(*) DESC
  LIMIT 1` says who ranks first but not by how much, so the answer cannot say it either.
  An aggregate the outermost query orders by and does not select is selected, after the
  rest, and so is a plain column it ranks by under a LIMIT (of the rows, or a key of the
  groups; no id: "Which flight ids have the longest duration?" shows `time_elapsed`). A query asked
  for as a query (nl2ql) gets it only when its question does not say what to show: "What
  are the top 5 domains with the highest number of authors?" is answered with the numbers,
  "Which doctor had the most no-shows? Give the doctor's name." with the name alone.

And three that need the catalog's column names (`group_per_asked`, `label_rows`,
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

The rest are pure functions of the query text and the question: no catalog, no data. A
query that does not parse is returned as it is (the checker says why)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import sqlglot
from sqlglot import exp

from datawell.tools.catalog import Catalog
from datawell.tools.checker.allowed import DIALECTS, QL_DIALECT
from datawell.tools.coverage import singular
from datawell.tools.mend import inner_join, key_names

# Words of a question that says what its answer shows ("Give the doctor's name").
SHOWS = re.compile(r"\b(give|list|show|return|display|tell me)\b|\bnames? of\b", re.IGNORECASE)

# Words by which a question asks for a few rows rather than all of them: numbers, and
# superlatives (the listed ones and any word in -est but the common nouns and verbs below).
_FEW = re.compile(
    r"\b(?:top|first|last|most|least|fewest|best|worst|max|maximum|min|minimum|single|only one|limit|"
    r"one|two|three|four|five|six|seven|eight|nine|ten|\d+|\w{2,}est)\b",
    re.IGNORECASE,
)
_NOT_SUPERLATIVE = frozenset(
    [
        "interest",
        "request",
        "test",
        "contest",
        "protest",
        "suggest",
        "digest",
        "harvest",
        "forest",
        "honest",
        "modest",
        "guest",
        "invest",
        "manifest",
        "arrest",
        "quest",
        "chest",
        "crest",
        "west",
        "rest",
        "nest",
        "pest",
        "vest",
        "zest",
        "lest",
        "jest",
        "attest",
        "priest",
        "conquest",
        "inquest",
    ]
)


@dataclass(frozen=True)
class Shaped:
    """The query to run and what was changed, in words (empty when nothing was)."""

    query: str
    changes: list[str]


def group_a_union_per_value(tree: exp.Query) -> tuple[exp.Query, str]:
    """A UNION of the same aggregates of one table, each under a WHERE of one column equal to
    another value, as one query grouped by that column (which says which row is which)."""
    if not isinstance(tree, exp.Union):
        return tree, ""
    parts: list[exp.Expr] = []
    stack: list[exp.Expr] = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, exp.Union) and not node.args.get("order") and not node.args.get("limit"):
            stack += [node.expression, node.this]
        else:
            parts.append(node)
    shapes, values = set(), []
    for part in parts:
        where = part.args.get("where") if isinstance(part, exp.Select) else None
        condition = where.this if where is not None else None
        if (
            not isinstance(part, exp.Select)
            or not isinstance(condition, exp.EQ)
            or not isinstance(condition.this, exp.Column)
            or not isinstance(condition.expression, (exp.Literal, exp.Boolean))
            or any(part.args.get(a) for a in ("joins", "group", "having", "order", "limit", "distinct"))
            or not all(e.find(exp.AggFunc) for e in part.expressions)
        ):
            return tree, ""
        table = part.args["from_"].this
        listed = tuple(e.sql() for e in part.expressions)
        shapes.add((table.sql(), condition.this.sql().lower(), listed))
        values.append(condition.expression)
    if len(shapes) != 1 or len({v.sql() for v in values}) != len(values):
        return tree, ""
    first = parts[0]
    assert isinstance(first, exp.Select)
    column = first.args["where"].this.this
    grouped = (
        exp.select(column.copy(), *(e.copy() for e in first.expressions))
        .from_(first.args["from_"].this.copy())
        .where(exp.In(this=column.copy(), expressions=[v.copy() for v in values]))
        .group_by(column.copy())
    )
    said = column.sql(dialect=DIALECTS[QL_DIALECT])
    return grouped, f"one row per {said}, grouped: the union counted each value of it apart"


def _asks_for_few(question: str) -> bool:
    return any(word.lower() not in _NOT_SUPERLATIVE for word in _FEW.findall(question))


def drop_unasked_limit(tree: exp.Query, question: str) -> str:
    limit = tree.args.get("limit")
    if limit is None or tree.args.get("offset") is not None or _asks_for_few(question):
        return ""
    order = tree.args.get("order")
    if order is not None and any(f.name.lower() == "semantic" for f in order.find_all(exp.Anonymous)):
        return ""  # a ranking by relevance needs its cut-off (the prompt's rule 7)
    tree.set("limit", None)
    return f"dropped {limit.sql(dialect=DIALECTS[QL_DIALECT])}: the question asks for every row"


def divide_as_fractions(tree: exp.Query) -> str:
    changed = 0
    for division in list(tree.find_all(exp.Div)):
        dividend, divisor = division.this, division.expression
        if isinstance(divisor, exp.Literal) or _is_fraction(dividend) or _is_fraction(divisor):
            continue  # a division by a constant converts units, as its writer meant
        division.set("this", exp.cast(dividend.copy(), exp.DataType.Type.DOUBLE))
        changed += 1
    return f"divided as fractions ({changed} division{'s' if changed > 1 else ''})" if changed else ""


# Words by which a question asks for its numbers as whole numbers ("Give the answer as an
# integer", "Convert to integer minutes", "in whole days").
_WHOLE = re.compile(r"\b(?:as|to|in)\s+(?:an?\s+)?(?:integers?|whole\s+(?:numbers?|\w+))\b", re.IGNORECASE)
_INTEGER_TYPES = frozenset(exp.DataType.INTEGER_TYPES)


def whole_numbers_asked(tree: exp.Query, question: str) -> str:
    if not isinstance(tree, exp.Select) or not _WHOLE.search(question):
        return ""
    cast = []
    for selected in tree.expressions:
        value = selected.unalias()
        if isinstance(value, (exp.Column, exp.Literal, exp.Count)) or not _computes(value):
            continue  # a stored value or a count: whole already, or not a number to round
        if isinstance(value, exp.Cast) and value.to.this in _INTEGER_TYPES:
            continue
        name = selected.alias_or_name if isinstance(selected, exp.Alias) else ""
        whole = exp.cast(value.copy(), exp.DataType.Type.INT)
        selected.replace(whole.as_(name) if name else whole)
        cast.append(name or value.sql(dialect=DIALECTS[QL_DIALECT]))
    return f"cast to whole numbers, as the question asks: {', '.join(cast)}" if cast else ""


def _computes(node: exp.Expr) -> bool:
    """Whether a selected expression computes a number: arithmetic, or a function (aggregates
    and casts are functions too), not a comparison or a condition."""
    return isinstance(node, (exp.Binary, exp.Func, exp.Paren)) and not isinstance(node, (exp.Predicate, exp.Connector))


def _is_fraction(node: exp.Expr) -> bool:
    """A decimal literal or a cast to a non-integer number: its division is already exact."""
    if isinstance(node, exp.Paren):
        return _is_fraction(node.this)
    if isinstance(node, exp.Literal):
        return not node.is_string and "." in node.this
    if isinstance(node, exp.Cast):
        return node.to.this in exp.DataType.REAL_TYPES
    return False


def select_group_keys(tree: exp.Query) -> str:
    if not isinstance(tree, exp.Select) or tree.args.get("group") is None:
        return ""
    selected = tree.expressions
    if any(not e.unalias().find(exp.AggFunc) for e in selected):
        return ""  # something beside the aggregates names the groups already
    names = {e.alias_or_name.lower() for e in selected}  # an aggregate may carry a key's name
    missing = [
        key for key in tree.args["group"].expressions if isinstance(key, exp.Column) and key.name.lower() not in names
    ]
    if not missing:
        return ""
    tree.set("expressions", [key.copy() for key in missing] + list(selected))
    return "selected the grouped columns " + ", ".join(key.sql(dialect=DIALECTS[QL_DIALECT]) for key in missing)


def rows_not_extremes(tree: exp.Query) -> str:
    order = tree.args.get("order")
    if not isinstance(tree, exp.Select) or tree.args.get("group") is not None or order is None:
        return ""
    ordered_by = {o.this.sql().lower() for o in order.expressions if isinstance(o.this, exp.Column)}
    selected = [e.unalias() for e in tree.expressions]
    if not any(isinstance(e, exp.Column) for e in selected):
        return ""  # aggregates alone: one row is what was asked
    extremes = [
        e
        for e in selected
        if isinstance(e, (exp.Min, exp.Max)) and isinstance(e.this, exp.Column) and e.this.sql().lower() in ordered_by
    ]
    if not extremes or any(e.find(exp.AggFunc) and e not in extremes for e in selected):
        return ""
    for extreme in extremes:
        extreme.replace(extreme.this.copy())
    return (
        "read "
        + ", ".join(e.sql(dialect=DIALECTS[QL_DIALECT]) for e in extremes)
        + " as the rows' column: the query orders rows by it"
    )


def rows_once_through_filtering_joins(tree: exp.Query) -> str:
    if not isinstance(tree, exp.Select) or not tree.args.get("joins"):
        return ""
    if any(tree.args.get(part) is not None for part in ("distinct", "group", "having")):
        return ""
    selected = tree.expressions
    if any(e.find(exp.AggFunc, exp.Window, exp.Star) for e in selected):
        return ""
    shown = {c.table.lower() for e in selected for c in e.find_all(exp.Column)}
    if len(shown) != 1 or "" in shown:
        return ""  # columns of several tables, or of one the query does not name
    listed = {e.unalias().sql().lower() for e in selected} | {e.alias.lower() for e in selected if e.alias}
    order = tree.args.get("order")
    if order is not None and any(o.this.sql().lower() not in listed for o in order.expressions):
        return ""
    tree.set("distinct", exp.Distinct())
    (table,) = shown
    return f"each row shown once: the query joins other tables only to filter the rows of {table}"


def skip_key_passing_joins(tree: exp.Query) -> str:
    if not isinstance(tree, exp.Select) or not any(e.find(exp.AggFunc) for e in tree.expressions):
        return ""
    skipped = []
    for join in list(tree.args.get("joins") or []):
        table = join.this
        if not isinstance(table, exp.Table) or not inner_join(join):
            continue
        alias = table.alias_or_name.lower()
        read = [c for c in tree.find_all(exp.Column) if c.table.lower() == alias]
        own = [c for c in read if c.find_ancestor(exp.Join) is join]
        if len(read) < 2 or len(own) != 1 or len({c.name.lower() for c in read}) != 1:
            continue
        if join.args.get("on") is not own[0].parent:
            continue  # its condition says more than the key
        partners = [_equated_with(c) for c in read]
        if any(p is None or p.find_ancestor(exp.Join) is None for p in partners):
            continue  # read outside a join condition, or not in an equality of two columns
        partner = _equated_with(own[0])
        assert partner is not None
        for column in read:
            if column is not own[0]:
                column.replace(partner.copy())
        join.pop()
        skipped.append(f"{table.name} (read for {own[0].name} only)")
    return (
        f"dropped joins that only passed a key along, which repeat the rows aggregated: {', '.join(skipped)}"
        if skipped
        else ""
    )


def _equated_with(column: exp.Column) -> exp.Column | None:
    """The other column of `a = b` when `column` is one side of it and both are columns."""
    equality = column.parent
    if not isinstance(equality, exp.EQ):
        return None
    other = equality.right if equality.left is column else equality.left
    return other if isinstance(other, exp.Column) and other is not column else None


# Texts that stand for "nothing" in a column: a filter to one of them says "none of this".
_PLACEHOLDERS = frozenset(["none", "n/a", "na", "null", "nil", "unknown", "-", ""])
_NOTHING = re.compile(r"\b(?:no|not|none|without|null|nil|unknown|missing|empty|lacks?|lacking|blank|n/a)\b", re.I)


def drop_placeholder_filters(tree: exp.Query, question: str) -> str:
    where = tree.args.get("where") if isinstance(tree, exp.Select) else None
    if where is None:
        return ""
    if _NOTHING.search(question):
        return ""  # "fares with no restriction", "... without a code": the question may ask for it
    words = {w[:4] for w in re.findall(r"[a-z]{3,}", question.lower())}
    conditions = list(where.this.flatten()) if isinstance(where.this, exp.And) else [where.this]
    kept: list[exp.Expr] = []
    dropped: list[exp.Expr] = []
    for condition in conditions:
        sides = (condition.this, condition.expression) if isinstance(condition, exp.EQ) else ()
        column = next((s for s in sides if isinstance(s, exp.Column)), None)
        text = next((s for s in sides if isinstance(s, exp.Literal) and s.is_string), None)
        invented = (
            column is not None
            and text is not None
            and text.this.strip().lower() in _PLACEHOLDERS
            and not _said(column.name.replace("_", " "), words)
        )
        (dropped if invented else kept).append(condition)
    if not dropped:
        return ""
    tree.set("where", exp.Where(this=exp.and_(*kept)) if kept else None)
    return "dropped filters on a placeholder for nothing, of a column the question never names: " + ", ".join(
        d.sql(dialect=DIALECTS[QL_DIALECT]) for d in dropped
    )


def _said(text: str, words: set[str]) -> bool:
    """Whether any word of `text` (of three letters or more) begins as a word of the question
    does (its first four letters: "restrictions" says "restriction_code")."""
    return any(w[:4] in words for w in re.findall(r"[a-z]{3,}", text.lower()))


def select_ranking_measure(tree: exp.Query) -> str:
    if not isinstance(tree, exp.Select) or tree.args.get("distinct") is not None:
        return ""
    order = tree.args.get("order")
    if order is None:
        return ""
    selected = tree.expressions
    shown = {e.unalias().sql() for e in selected}
    names = {e.alias_or_name.lower() for e in selected}
    group = tree.args.get("group")
    # A plain column ranks (under a LIMIT) rows, or groups it is a key of.
    keys = {g.sql() for g in group.expressions} if group else set()
    rows = group is None and not any(e.find(exp.AggFunc) for e in selected)
    ranked = tree.args.get("limit") is not None
    added: list[exp.Expr] = []
    for ordered in order.expressions:
        measure = ordered.this
        if measure.sql() in shown or any(isinstance(e, exp.Star) for e in selected):
            continue
        if isinstance(measure, exp.Column) and ranked and (rows or measure.sql() in keys):
            if measure.name.lower() not in names and not _an_id(measure.name):
                names.add(measure.name.lower())
                added.append(measure.copy())
            continue
        if not isinstance(measure, exp.AggFunc):
            continue  # an alias of a selected column, or an expression
        name = _measure_name(measure)
        if name in names:
            continue
        names.add(name)
        shown.add(measure.sql())
        added.append(measure.copy().as_(name))
    if not added:
        return ""
    tree.set("expressions", [*selected, *added])
    return "selected the ranking's measure " + ", ".join(a.sql(dialect=DIALECTS[QL_DIALECT]) for a in added)


def _an_id(name: str) -> bool:
    """Whether a column is a row's id (`id`, `customer_id`): an order of rows, no measure."""
    return name.lower() == "id" or name.lower().endswith("_id")


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


def _measure_name(measure: exp.AggFunc) -> str:
    """`count` for COUNT(*), `count_patient_id` for COUNT(t.patient_id), `sum` for SUM(a * b)."""
    argument = measure.this
    if isinstance(argument, exp.Distinct):
        argument = argument.expressions[0] if len(argument.expressions) == 1 else None
    function = measure.key.lower()
    return f"{function}_{argument.name}" if isinstance(argument, exp.Column) and argument.name else function


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
