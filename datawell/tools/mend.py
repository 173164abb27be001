"""Mending a refused query without asking the model again (issue 27).

On an unfamiliar schema a small query writer often gets the logic right and one name wrong,
and its repairs go round in circles: told "student has no column 'course_id'", it sends the
same query back. These slips have only one sensible reading, so the service mends them
itself when the checker refuses a query, and runs the mended query if the checker accepts
it (the reasoning says what changed):

- **A table that is no dataset, joined for columns another table has.** `FROM publication AS
  p JOIN reference AS r ON p.pid = r.pid ORDER BY r.reference_num`, where no dataset is
  named `reference` and `publication` has `reference_num` (and `pid`): the join goes and
  `r.reference_num` is read as `p.reference_num`.
- **A column name one letter or two off.** `student.declared_major` where `student` has
  `declare_major` and no other column as close (difflib's ratio at least 0.85), and no table
  of the SELECT has `declared_major`: the column is read by its name.
- **A name the question picks among several.** `SELECT airport_code ... FROM flight`, where
  `flight` has no `airport_code` but `from_airport` and `to_airport` share its word: read as
  the one whose other words and description the question says most ("depart from": from_airport,
  "the departure location"), when one says more than the others and no dataset was joined for it.
- **The table that lacks a column.** `FROM course JOIN student ON course.course_id =
  student.course_id`, where `student` has no `course_id` but exactly one other dataset
  (`student_record`) holds every column the query reads of `student`: that dataset is read
  instead, under the same alias.
- **The table a join skipped.** `FROM author AS a JOIN publication AS p ON a.aid = p.aid`,
  where `publication` has no `aid` but exactly one other dataset (`writes`) has `aid` and
  shares exactly one column with `publication` (`pid`): the join goes through it,
  `JOIN writes ON a.aid = writes.aid JOIN publication AS p ON writes.pid = p.pid`.
- **The table a query did not join.** `SELECT airline_name FROM flight` (or `t1.airline_name`
  with `flight AS t1` among other tables), where no table of the SELECT has `airline_name` and
  exactly one dataset not read yet has every such column and shares exactly one column with
  `flight` (`airline`, by `airline_code`): it is joined on that column.
  A name that is another dataset's name and one of its columns (`warehouse_name` of
  `stock_levels`, where `warehouses` has `name` and shares `warehouse_code`) is that column,
  joined the same way.
- **A column read through the wrong alias.** `t2.fare_basis_code` where `t2` lacks it, or
  `p.unit_price_eur` where the query defines no `p`, and exactly one table of the same
  SELECT has it, outside a join condition (there, moving the name would compare a table
  with itself).
- **A join that cannot run, of a table read for nothing else.** `FROM course AS t1 JOIN
  program AS t2 ON t1.program_id = t2.program_id WHERE t2.department = 'X'`, where `course`
  has no `program_id` and has `department` (read through `t1` by the rule above): `program`
  was joined for `department` and is now read only in a condition that cannot run, so its
  (inner) join goes.
- **Filters nobody asked for, one of which cannot run.** `FROM airport AS t1 JOIN city AS t2
  ON t1.city_code = t2.city_code JOIN country AS t3 ON ... WHERE t1.airport_name ILIKE
  'Orlando International Airport' AND t2.city_name ILIKE 'IL' AND t3.country_name ILIKE
  'United States'` for "Which state code is Orlando International Airport in?": the WHERE's
  comparisons with a text the question never says go when one of them cannot run (here
  `country` is no dataset), and so does each inner join then read only in its own condition,
  when that condition cannot run or its table is no dataset. Only with the question (`mend`'s
  third argument); filters that all run are left alone (`'WH-RTM'` for "Rotterdam" is right).
- **Unix seconds in a date function.** `strftime('%m', departure_time)` of a column that
  holds Unix seconds (tools/catalog.py): the column is read as `to_timestamp(departure_time)`.
- **The year of a column of years.** `strftime('%Y', year)` or `EXTRACT(YEAR FROM year)` of
  an integer column that holds years (tools/checker/dates.py): the column itself.

Two more rules run before any query runs (`reroute_joins`), because the queries they mend
are valid and run, with the wrong rows, and a third when the data says so
(`filter_where_stored`, called by tools/literals.py with the column that stores a filter's text):

- **A join of two different keys.** `FROM domain AS d JOIN publication AS p ON d.did =
  p.jid` equates a domain's key with a journal's: it runs, and pairs each domain with the
  publications of the journal that happens to have the same number. When both columns are
  keys (by name: a table's singular with `_id`, `_code`, `_no` or `_number`, or its initial
  with `id`, held by that table) of two different tables, and exactly one other dataset
  holds the two tables' own keys (`domain_publication`: `did`, `pid`), or else the two
  columns the condition names (of several, the one whose own key is one of them), the join
  goes through it: `JOIN domain_publication ON d.did =
  domain_publication.did JOIN publication AS p ON domain_publication.pid = p.pid`.
- **A join of a number with a text.** `course_offering.semester = semester.semester`, where
  the first holds integers (a semester's id) and the second text (`Fall`): SQLite finds no
  pair, PostgreSQL refuses it. When the text side's table has one own key (by name, as
  above) of the number's type, the condition reads that key: `course_offering.semester =
  semester.semester_id`.
- **A text filtered on a column that does not store it.** `organization.name = 'Machine
  Learning'`, where `domain.name` stores it: the filter reads the storing column, through
  its alias when the SELECT reads its table, else with the table joined from the one table
  of the SELECT that holds its key, or that one dataset links to it by both tables' keys
  (`author` through `domain_author`); more than one way, or none, leaves it alone.

Pure functions of the query text and the catalog. A query that does not parse, or that none
of the rules change, comes back as it was."""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import sqlglot
from sqlglot import exp

from datawell.tools.catalog import Catalog, TableInfo, unix_seconds
from datawell.tools.checker.allowed import QL_DIALECT
from datawell.tools.checker.dates import column_holds, date_columns
from datawell.tools.coverage import PREFIX, singular
from datawell.tools.names import GENERIC, parts


@dataclass(frozen=True)
class Mended:
    query: str
    changes: list[str] = field(default_factory=list)  # what changed, in words


@dataclass
class Source:
    node: exp.Table
    info: TableInfo

    def has(self, column: str) -> bool:
        return column.lower() in {c.lower() for c in self.info.columns}


def filter_where_stored(query: str, catalog: Catalog, text: str, holder: tuple[str, str], stored: str) -> Mended:
    """The query with its comparisons of a column with `text` (`=`, of a SELECT that reads the
    column's table) read on the column `holder` (table, column) that stores it instead, as
    `stored` (its spelling there): through
    the holder's alias when the SELECT reads that table, else with the holder joined from the one
    table of the SELECT that holds its key (`author.oid` for organization) or that one dataset
    links to it by both keys (`domain_author` from author to domain); unchanged when no path,
    or more than one, leads there."""
    name, column = holder

    def refilter(
        select: exp.Select, sources: dict[str, Source], catalog: Catalog, defined: set[str], tree: exp.Expr
    ) -> list[str]:
        found = [
            eq
            for eq in select.find_all(exp.EQ)
            if eq.find_ancestor(exp.Select) is select and eq.find_ancestor(exp.Join) is None
            if isinstance(eq.this, exp.Column) and isinstance(eq.expression, exp.Literal)
            if eq.expression.is_string and eq.expression.this == text
        ]
        info = catalog.table(name)
        if not found or info is None or not sources:
            return []
        alias = next((a for a, s in sources.items() if s.info.name == name), None)
        if alias is not None:
            spelled = sources[alias].node.alias_or_name
            if len(sources) == 1 and all(not eq.this.table for eq in found):
                spelled = ""  # the only table's columns, unqualified as written
        elif (path := _path_to(catalog, sources, info)) is not None:
            spelled = _join_path(select, sources, info, path, defined)
        else:
            return []
        said = ", ".join(dict.fromkeys(eq.this.sql(dialect=QL_DIALECT) for eq in found))
        for eq in found:
            eq.set("this", exp.column(_exact(info, column), table=spelled or None))
            eq.set("expression", exp.Literal.string(stored))
        return [f"{said} holds no {text!r}; {name}.{column} holds {stored!r}: the filter reads it"]

    return _apply(query, catalog, refilter)


# A way from a table of the SELECT (by alias) to another: its column holding the other's key,
# or a dataset holding both tables' own keys with the two names.
_Path = tuple[str, str | tuple[TableInfo, tuple[str, str]]]


def _path_to(catalog: Catalog, sources: dict[str, Source], far: TableInfo) -> _Path | None:
    read = {s.info.name for s in sources.values()}
    paths: list[_Path] = []
    for alias, source in sources.items():
        keys = [k for k in key_names(far) if source.has(k)]
        if keys:
            paths.append((alias, keys[0]))
        elif (bridge := _bridge(catalog, read, source.info, far, "", "")) is not None:
            paths.append((alias, bridge))
    return paths[0] if len(paths) == 1 else None


def _join_path(select: exp.Select, sources: dict[str, Source], far: TableInfo, path: _Path, defined: set[str]) -> str:
    """Joins `far` along `path`; the name its columns are read through."""
    alias, way = path
    near = sources[alias].node.alias_or_name
    if isinstance(way, str):
        key = _exact(far, way)
        table, spelled = _new_table(far.name, defined)
        select.join(
            table, on=exp.EQ(this=exp.column(key, table=near), expression=exp.column(key, table=spelled)), copy=False
        )
        return spelled
    bridge, (near_key, far_key) = way
    link, linked = _new_table(bridge.name, defined)
    on = exp.EQ(
        this=exp.column(_exact(sources[alias].info, near_key), table=near),
        expression=exp.column(near_key, table=linked),
    )
    select.join(link, on=on, copy=False)
    table, spelled = _new_table(far.name, defined)
    on = exp.EQ(this=exp.column(far_key, table=linked), expression=exp.column(_exact(far, far_key), table=spelled))
    select.join(table, on=on, copy=False)
    return spelled


Rule = Callable[[exp.Select, dict[str, Source], Catalog, set[str], exp.Expr], list[str]]


def _apply(query: str, catalog: Catalog, rule: Rule) -> Mended:
    """`rule` run on each SELECT of the query (with the datasets it reads and every name
    defined in the query), and what it changed; the query as it was when nothing changed."""
    try:
        tree = sqlglot.parse_one(query, read=QL_DIALECT)
    except sqlglot.errors.SqlglotError:
        return Mended(query)
    changes: list[str] = []
    defined = aliases(tree)
    for select in list(tree.find_all(exp.Select)):
        changes += rule(select, sources_of(select, catalog), catalog, defined, tree)
    return Mended(tree.sql(dialect=QL_DIALECT), list(dict.fromkeys(changes))) if changes else Mended(query)


def sources_of(select: exp.Select, catalog: Catalog) -> dict[str, Source]:
    """The datasets a SELECT reads directly, by the alias its columns use (lower case)."""
    found: dict[str, Source] = {}
    by_name = {t.name.lower(): t for t in catalog.tables}
    for node in _joined_tables(select):
        if not node.db and (info := by_name.get(node.name.lower())):
            found[node.alias_or_name.lower()] = Source(node, info)
    return found


def _joined_tables(select: exp.Select) -> list[exp.Table]:
    """The tables of the SELECT's FROM and joins (not its subqueries')."""
    from_ = select.args.get("from_")
    nodes = [from_.this] if from_ is not None else []
    nodes += [join.this for join in select.args.get("joins") or []]
    return [n for n in nodes if isinstance(n, exp.Table)]


def aliases(tree: exp.Expr) -> set[str]:
    """Every name a column may be qualified with anywhere in the query: tables, their aliases,
    subqueries' and CTEs' names (an outer query's alias is a correlated subquery's to use)."""
    named = [t.alias_or_name for t in tree.find_all(exp.Table)]
    named += [s.alias for s in tree.find_all(exp.Subquery) if s.alias]
    named += [c.alias for c in tree.find_all(exp.CTE) if c.alias]
    return {n.lower() for n in named}


def _own_columns(select: exp.Select) -> list[exp.Column]:
    """The columns this SELECT reads itself (not those of its subqueries)."""
    return [c for c in select.find_all(exp.Column) if c.name and c.find_ancestor(exp.Select) is select]


def drop_phantom_joins(select: exp.Select, sources: dict[str, Source], catalog: Catalog, tree: exp.Expr) -> list[str]:
    """A join of a table no dataset is named, on a column it shares by name with a table of
    the SELECT that also has every other column read through it: the join is dropped and
    those columns are read from that table."""
    changes: list[str] = []
    known = {t.name.lower() for t in catalog.tables} | {c.alias_or_name.lower() for c in tree.find_all(exp.CTE)}
    for join in list(select.args.get("joins") or []):
        node, condition = join.this, join.args.get("on")
        if (
            not isinstance(node, exp.Table)
            or node.db
            or node.name.lower() in known
            or not isinstance(condition, exp.EQ)
        ):
            continue
        alias = node.alias_or_name.lower()
        sides = [c for c in (condition.left, condition.right) if isinstance(c, exp.Column)]
        if len(sides) != 2 or sides[0].name.lower() != sides[1].name.lower():
            continue
        other = next((c.table for c in sides if c.table.lower() != alias), "")
        holder = sources.get(other.lower())
        read = [c for c in _own_columns(select) if c.table.lower() == alias and c.find_ancestor(exp.Join) is not join]
        if holder is None or not all(holder.has(c.name) for c in read):
            continue
        for column in read:
            column.set("table", exp.to_identifier(other))
        join.pop()
        changes.append(
            f"no dataset is named {node.name}: its {', '.join(dict.fromkeys(c.name for c in read)) or 'join'} "
            f"read from {holder.info.name}"
        )
    return changes


def _unknown_columns(select: exp.Select, sources: dict[str, Source]) -> Iterator[tuple[exp.Column, Source]]:
    """The columns of the SELECT that no table of it has (not its outputs' names), each with
    the table it is read through: its qualifier's, or the only one."""
    named = _output_names(select)
    for column in _own_columns(select):
        qualifier = column.table.lower()
        owner = sources.get(qualifier) if qualifier else next(iter(sources.values())) if len(sources) == 1 else None
        if owner is None or column.name.lower() in named or any(s.has(column.name) for s in sources.values()):
            continue
        yield column, owner


def near_column_names(select: exp.Select, sources: dict[str, Source]) -> list[str]:
    """A column no table of the SELECT has, read through a table (its qualifier's, or the only
    one) with exactly one column named nearly the same: read by that name."""
    changes: list[str] = []
    for column, owner in _unknown_columns(select, sources):
        close = difflib.get_close_matches(column.name.lower(), [c.lower() for c in owner.info.columns], 2, 0.85)
        if len(close) != 1:
            continue
        right = next(c for c in owner.info.columns if c.lower() == close[0])
        changes.append(f"{owner.info.name} has no {column.name}: read {right}")
        column.set("this", exp.to_identifier(right))
    return changes


def column_named_by_question(select: exp.Select, sources: dict[str, Source], question: str) -> list[str]:
    """A column no table of the SELECT has, read through a table (its qualifier's, or the only
    one) with several columns that share a word of its name (`airport_code`: `from_airport`,
    `to_airport`): read as the one whose own words and description the question says most
    (`depart from each airport code`: from_airport, "the departure location"), when one does.
    Runs after the other rules: a dataset that holds the name, and links to the table, is
    joined first."""
    changes: list[str] = []
    said = _stems(question)
    for column, owner in _unknown_columns(select, sources):
        words = {w for w in parts(column.name) if w not in GENERIC}
        sharing = [c for c in owner.info.columns if words & set(parts(c))]
        scored = sorted(((_told(said, owner.info, c, words), c) for c in sharing), reverse=True)
        if len(scored) < 2 or scored[0][0] == scored[1][0] or scored[0][0] == 0:
            continue
        right = scored[0][1]
        changes.append(f"{owner.info.name} has no {column.name}: read {right}, which the question describes")
        column.set("this", exp.to_identifier(right))
    return changes


def _told(said: set[str], info: TableInfo, column: str, shared: set[str]) -> int:
    """How many of the question's stems `said` a column's words other than `shared`, and its
    description, say."""
    return len(said & _stems(" ".join([*(set(parts(column)) - shared), info.column_descriptions.get(column, "")])))


def _stems(text: str) -> set[str]:
    """A text's words cut to the letters two words share to count as one (coverage.PREFIX:
    `departures`, `depart`: depar); short words whole."""
    return {w[:PREFIX] for w in re.findall(r"[a-z]+", text.lower()) if w not in GENERIC}


def swap_tables(select: exp.Select, sources: dict[str, Source], catalog: Catalog) -> list[str]:
    changes: list[str] = []
    read = {s.info.name for s in sources.values()}
    columns = _own_columns(select)
    for alias, source in sources.items():
        used = {c.name.lower() for c in columns if c.table.lower() == alias}
        missing = sorted(c for c in used if not source.has(c))
        if not missing:
            continue
        holding = [t for t in catalog.tables if t.name not in read and used <= {c.lower() for c in t.columns}]
        named_alike = [t for t in holding if set(parts(t.dataset_name)) & set(parts(source.info.dataset_name))]
        chosen = holding if len(holding) == 1 else named_alike
        if len(chosen) != 1:
            continue
        new = chosen[0]
        if not source.node.alias:
            source.node.set("alias", exp.TableAlias(this=exp.to_identifier(source.node.name)))
        source.node.set("this", exp.to_identifier(new.name))
        sources[alias] = Source(source.node, new)
        read.add(new.name)
        changes.append(
            f"{source.info.name} has no {', '.join(missing)}: read {new.name}, which has {', '.join(sorted(used))}"
        )
    return changes


def _equi_joins(
    select: exp.Select, sources: dict[str, Source]
) -> Iterator[tuple[exp.Join, str, tuple[exp.Column, exp.Column]]]:
    """Each join of a dataset of the SELECT on `x = y` of its own column and one of another
    table of the SELECT: the join, its dataset's alias, and the columns (its own first)."""
    for join in list(select.args.get("joins") or []):
        condition = join.args.get("on")
        target = next((a for a, s in sources.items() if s.node is join.this), None)
        if target is None or not isinstance(condition, exp.EQ):
            continue
        sides = [c for c in (condition.left, condition.right) if isinstance(c, exp.Column)]
        inner = next((c for c in sides if c.table.lower() == target), None)
        outer = next((c for c in sides if c.table.lower() != target and c.table.lower() in sources), None)
        if len(sides) == 2 and inner is not None and outer is not None:
            yield join, target, (inner, outer)


def _through(
    select: exp.Select, join: exp.Join, bridge: str, defined: set[str], near: tuple[str, str], far: tuple[str, str]
) -> None:
    """`join` read through dataset `bridge`, joined before it with the same kind: on
    `near_alias.column = bridge.column`, then `bridge.column = far_alias.column` (`near` and
    `far` are each an alias and a column)."""
    (near_alias, near_column), (far_alias, far_column) = near, far
    table, alias = _new_table(bridge, defined)
    on = exp.EQ(this=exp.column(near_column, table=near_alias), expression=exp.column(near_column, table=alias))
    joins = select.args["joins"]
    joins.insert(joins.index(join), exp.Join(this=table, on=on, kind=join.args.get("kind"), side=join.args.get("side")))
    join.set("on", exp.EQ(this=exp.column(far_column, table=alias), expression=exp.column(far_column, table=far_alias)))


def bridge_joins(select: exp.Select, sources: dict[str, Source], catalog: Catalog, defined: set[str]) -> list[str]:
    """A join whose condition `a.x = b.x` reads a column `b`'s table lacks and `a`'s has, when
    one dataset links them (`_the_link`): the join reads it between them (`a.x = w.x`, then
    `w.k = b.k`), with the same join kind."""
    changes: list[str] = []
    read = {s.info.name for s in sources.values()}
    for join, target, (inner, outer) in _equi_joins(select, sources):
        if inner.name.lower() != outer.name.lower():
            continue
        lacking = sources[target]
        if lacking.has(inner.name) or not sources[outer.table.lower()].has(outer.name):
            continue
        link = _the_link(catalog, read, lacking.info, {inner.name.lower()})
        if link is None:
            continue
        bridge, key = link
        read.add(bridge.name)
        _through(select, join, bridge.name, defined, (outer.table, inner.name), (target, key))
        changes.append(
            f"{lacking.info.name} has no {inner.name}: joined through {bridge.name}, which has {inner.name} and {key}"
        )
    return changes


def reroute_crossed_keys(
    select: exp.Select, sources: dict[str, Source], catalog: Catalog, defined: set[str], tree: exp.Expr
) -> list[str]:
    changes: list[str] = []
    read = {s.info.name for s in sources.values()}
    for join, target, (inner, outer) in _equi_joins(select, sources):
        if inner.name.lower() == outer.name.lower():
            continue
        near, far = sources[outer.table.lower()], sources[target]
        keyed = (_keyed_by(catalog, outer.name), _keyed_by(catalog, inner.name))
        if not keyed[0] or not keyed[1] or keyed[0] & keyed[1]:
            continue
        bridge = _bridge(catalog, read, near.info, far.info, outer.name, inner.name)
        if bridge is None:
            continue
        table, (near_key, far_key) = bridge
        read.add(table.name)
        _through(select, join, table.name, defined, (outer.table, near_key), (inner.table, far_key))
        changes.append(
            f"{outer.sql(dialect=QL_DIALECT)} and {inner.sql(dialect=QL_DIALECT)} are keys of different tables: "
            f"{near.info.name} and {far.info.name} joined through {table.name} ({near_key}, {far_key})"
        )
    return changes


NUMBERS = frozenset(["integer", "real"])


def reroute_mistyped_joins(select: exp.Select, sources: dict[str, Source]) -> list[str]:
    """Each join of a number column with a text column read on the text table's one own key
    of the number's type (see the module's docstring)."""
    changes: list[str] = []
    for _, _, sides in _equi_joins(select, sources):
        kinds = [_kind(sources[c.table.lower()].info, c.name) for c in sides]
        number = next((k for k in kinds if k in NUMBERS), None)
        if "text" not in kinds or number is None:
            continue
        text_side, number_side = (sides[0], sides[1]) if kinds[0] == "text" else (sides[1], sides[0])
        info = sources[text_side.table.lower()].info
        keys = [_exact(info, k) for k in key_names(info) if _kind(info, k) == number]
        if len(keys) != 1:
            continue
        said = text_side.sql(dialect=QL_DIALECT)
        text_side.set("this", exp.to_identifier(keys[0]))
        changes.append(
            f"{number_side.sql(dialect=QL_DIALECT)} holds numbers and {said} text: joined on {info.name}'s key {keys[0]}"
        )
    return changes


def _kind(info: TableInfo, column: str) -> str:
    return info.columns.get(_exact(info, column), "")


def _keyed_by(catalog: Catalog, column: str) -> set[str]:
    """The tables whose key a column of this name is, by its name (`key_names`)."""
    name = column.lower()
    return {table.name for table in catalog.tables if name in key_names(table)}


def key_names(table: TableInfo) -> set[str]:
    """A table's own key, by its name, among its columns: its singular with `_id`, `_code`,
    `_no` or `_number`; else its name's last word's; else, for a one-word name, its initial
    with `id`."""
    columns = {c.lower() for c in table.columns}
    whole = singular(table.name.lower())
    for stem in (whole, singular(whole.rsplit("_", 1)[-1])):  # `offering_id` of course_offering
        if names := {f"{stem}_{suffix}" for suffix in ("id", "code", "no", "number")} & columns:
            return names
    if "_" in whole:  # domain_journal is a link, not a thing with a key
        return set()
    return {f"{whole[:1]}id"} & columns  # academic's `aid` of author, `pid` of publication


def _bridge(
    catalog: Catalog, read: set[str], near: TableInfo, far: TableInfo, near_column: str, far_column: str
) -> tuple[TableInfo, tuple[str, str]] | None:
    """The one dataset not read yet that holds both tables' own keys, else the one that holds
    both columns the join named, with the two column names (the near table's first)."""
    own = (key_names(near), key_names(far))
    pairs = [(a, b) for a in own[0] for b in own[1] if a != b]
    for pair in [*pairs, (near_column.lower(), far_column.lower())]:
        holders = [t for t in catalog.tables if t.name not in read and set(pair) <= {c.lower() for c in t.columns}]
        if len(holders) > 1:  # the one whose own key is one of the two: course_offering's offering_id
            keyed = [t for t in holders if key_names(t) & set(pair)]
            if len(keyed) != 1:
                return None  # more than one path: the model's is as good a guess as any
            holders = keyed
        if holders:
            return holders[0], (_exact(holders[0], pair[0]), _exact(holders[0], pair[1]))
    return None


def join_missing_table(
    select: exp.Select, sources: dict[str, Source], catalog: Catalog, defined: set[str]
) -> list[str]:
    """Columns read through a table (by its alias, or by bare name when it is the SELECT's only
    table) that neither it nor any other table of the SELECT has: when one dataset not read
    yet has all of them and shares exactly one column `k` with the table, it is joined on `k`
    and the names are read through it (in a one-table query every name is qualified, as a name
    both tables have would be ambiguous)."""
    alone = len(sources) == 1 and not select.args.get("joins")
    outputs = _output_names(select)
    read = {s.info.name for s in sources.values()}
    changes: list[str] = []
    for alias, source in list(sources.items()):
        mine = [
            c
            for c in _own_columns(select)
            if (c.table.lower() == alias or (alone and not c.table))
            and c.name.lower() not in outputs
            and c.find_ancestor(exp.Join) is None
        ]
        missing = {c.name.lower() for c in mine if not any(s.has(c.name) for s in sources.values())}
        if not missing:
            continue
        names = {name: name for name in missing}  # as the query reads it -> as the joined dataset has it
        link = _the_link(catalog, read, source.info, missing)
        if link is None and (prefixed := _prefixed(catalog, missing)) is not None:
            table_name, names = prefixed
            link = _the_link(catalog, read, source.info, set(names.values()), only=table_name)
        if link is None:
            continue
        joined, key = link
        read.add(joined.name)
        spelled = source.node.alias_or_name  # as the query writes it
        table, other = _new_table(joined.name, defined)
        select.join(
            table, on=exp.EQ(this=exp.column(key, table=spelled), expression=exp.column(key, table=other)), copy=False
        )
        for column in mine:
            name = column.name.lower()
            if name not in missing:
                column.set("table", exp.to_identifier(spelled))
            elif names[name] == name:
                column.set("table", exp.to_identifier(other))
            else:  # `warehouse_name` is warehouses.name, and keeps its name as an output
                renamed = exp.column(names[name], table=other)
                keep = isinstance(column.parent, exp.Select) and column in column.parent.expressions
                column.replace(exp.alias_(renamed, column.name) if keep else renamed)
        said = ", ".join(n if names[n] == n else f"{n} ({joined.name}.{names[n]})" for n in sorted(missing))
        changes.append(f"{source.info.name} has no {said}: joined {joined.name} on {key}")
    return changes


def _prefixed(catalog: Catalog, missing: set[str]) -> tuple[str, dict[str, str]] | None:
    """When every missing name is a dataset's name (or its singular) and one of its columns
    (`warehouse_name`: `warehouses.name`), that dataset and the column each name stands for."""
    found: dict[str, set[tuple[str, str]]] = {}
    for name in missing:
        found[name] = {
            (table.name, column.lower())
            for table in catalog.tables
            for column in table.columns
            for prefix in {table.name.lower(), singular(table.name.lower())}
            if name == f"{prefix}_{column.lower()}"
        }
    tables = {table for pairs in found.values() for table, _ in pairs}
    if len(tables) != 1 or any(len(pairs) != 1 for pairs in found.values()):
        return None
    return tables.pop(), {name: next(iter(pairs))[1] for name, pairs in found.items()}


def _new_table(name: str, defined: set[str]) -> tuple[exp.Table, str]:
    """A table node for dataset `name`, aliased `name_via` when the query already uses `name`,
    with the name its columns are to be read through (now taken)."""
    alias = name if name.lower() not in defined else f"{name}_via"
    defined.add(alias.lower())
    table = exp.Table(this=exp.to_identifier(name))
    if alias != name:
        table.set("alias", exp.TableAlias(this=exp.to_identifier(alias)))
    return table, alias


def _output_names(select: exp.Select) -> set[str]:
    """The names the SELECT gives its outputs (`AS n`), which ORDER BY may read as columns."""
    return {e.alias.lower() for e in select.expressions if e.alias}


def _the_link(
    catalog: Catalog, skipped: set[str], lacking: TableInfo, needed: set[str], only: str | None = None
) -> tuple[TableInfo, str] | None:
    """The one dataset (`only` that one), not among `skipped`, that has every `needed` column
    (lower case) and shares exactly one other column with `lacking` (not `id`: two tables'
    `id` are each its own rows), with that column; None when there is not exactly one."""
    theirs = {c.lower() for c in lacking.columns}
    links = []
    for table in catalog.tables:
        if table.name in skipped or (only is not None and table.name != only):
            continue
        columns = {c.lower() for c in table.columns}
        shared = (columns & theirs) - needed - {"id"}  # `id` is each table's own row, no link
        if needed <= columns and len(shared) == 1:
            links.append((table, shared.pop()))
    return links[0] if len(links) == 1 else None


def requalify_columns(select: exp.Select, sources: dict[str, Source], defined: set[str]) -> list[str]:
    """A column read through an alias whose table lacks it, or through an alias the query never
    defines (`p.unit_price_eur` with no `p`), when one table of the SELECT has it."""
    changes: list[str] = []
    for column in _own_columns(select):
        qualifier = column.table.lower()
        mine = sources.get(qualifier)
        if not qualifier or column.find_ancestor(exp.Join) is not None:
            continue
        if (mine is None and qualifier in defined) or (mine is not None and mine.has(column.name)):
            continue
        others = [alias for alias, s in sources.items() if s.has(column.name)]
        if len(others) == 1:
            changes.append(f"{column.table}.{column.name} read as {others[0]}.{column.name}")
            column.set("table", exp.to_identifier(others[0]))
    return changes


def qualifiers_read(tree: exp.Expr) -> set[str]:
    """The qualifiers the query reads a column through outside join conditions."""
    return {c.table.lower() for c in tree.find_all(exp.Column) if c.find_ancestor(exp.Join) is None}


def drop_dead_joins(select: exp.Select, sources: dict[str, Source], tree: exp.Expr, read_for: set[str]) -> list[str]:
    """An inner join that cannot run, because its condition reads a column its table lacks, of a
    dataset the query was read through for columns that the rules above moved to another
    table, and that is now read nothing else of: the join goes. When that dataset is the
    FROM's, the inner join it is read in takes its place. (A join the model wrote for no
    column at all may stand for a filter it forgot: that one is left to the model.)"""
    changes: list[str] = []
    for alias, source in list(sources.items()):
        if alias not in read_for:
            continue
        joins = select.args.get("joins") or []
        conditions = [j for j in joins if j.args.get("on") is not None]
        read = [c for c in tree.find_all(exp.Column) if c.table.lower() == alias]
        mine = [j for j in conditions if any(c.find_ancestor(exp.Join) is j for c in read)]
        if len(mine) != 1 or any(c.find_ancestor(exp.Join) is not mine[0] for c in read):
            continue
        join = mine[0]
        if not inner_join(join):
            continue
        lacking = [c for c in join.args["on"].find_all(exp.Column) if not _runs(c, sources)]
        if not lacking:
            continue
        if join.this is source.node:
            join.pop()
        elif select.args["from_"].this is source.node:
            select.args["from_"].set("this", join.this.copy())
            join.pop()
        else:
            continue
        del sources[alias]
        said = ", ".join(dict.fromkeys(c.sql(dialect=QL_DIALECT) for c in lacking))
        changes.append(f"the join of {source.info.name} could not run ({said}) and nothing else read it: dropped")
    return changes


def drop_invented_filters(select: exp.Select, sources: dict[str, Source], question: str) -> list[str]:
    """Conditions of the WHERE (joined by AND) that compare a column with a text the question
    never says (`city_name ILIKE 'IL'`, `country_name = 'United States'` for "Which state code
    is Orlando International Airport in?"), when one of them cannot run: they all go, and so
    does each inner join then read for nothing but its own condition that cannot run or of a
    table no dataset is named."""
    where = select.args.get("where")
    if where is None:
        return []
    tables = {t.alias_or_name.lower() for t in _joined_tables(select)}
    conditions = list(where.this.flatten()) if isinstance(where.this, exp.And) else [where.this]
    invented = [c for c in conditions if _compares_unsaid_text(c, question)]

    def runs(column: exp.Column) -> bool:
        qualifier = column.table.lower()
        if qualifier in sources:
            return sources[qualifier].has(column.name)
        if qualifier in tables:  # a table of the SELECT that is no dataset
            return False
        return bool(qualifier) or any(s.has(column.name) for s in sources.values())

    if all(runs(c) for condition in invented for c in condition.find_all(exp.Column)):
        return []
    dropped = {c.table.lower() for condition in invented for c in condition.find_all(exp.Column)}
    kept = [c for c in conditions if not any(c is i for i in invented)]
    select.set("where", exp.Where(this=exp.and_(*kept)) if kept else None)
    said = "; ".join(c.sql(dialect=QL_DIALECT) for c in invented)
    changes = [f"filters on text the question never mentions, one of which could not run, dropped: {said}"]
    for join in reversed(select.args.get("joins") or []):
        node, condition = join.this, join.args.get("on")
        alias = node.alias_or_name.lower() if isinstance(node, exp.Table) else ""
        if alias not in dropped or condition is None or not inner_join(join):
            continue
        read = [c for c in select.find_all(exp.Column) if c.table.lower() == alias]
        if any(c.find_ancestor(exp.Join) is not join for c in read):
            continue
        if alias in sources and all(runs(c) for c in condition.find_all(exp.Column)):
            continue
        join.pop()
        sources.pop(alias, None)
        changes.append(f"the join of {node.name}, read for nothing else: dropped")
    return changes


def unsaid_filters(query: str, question: str) -> list[str]:
    """The query's comparisons of a column with a text the question never says (see
    `_compares_unsaid_text`), as SQL; [] when it does not parse."""
    try:
        tree = sqlglot.parse_one(query, read=QL_DIALECT)
    except sqlglot.errors.SqlglotError:
        return []
    found = tree.find_all(exp.EQ, exp.Like, exp.ILike)
    return [c.sql(dialect=QL_DIALECT) for c in found if _compares_unsaid_text(c, question)]


def _compares_unsaid_text(condition: exp.Expr, question: str) -> bool:
    """`column = 'X'`, `column LIKE '%X%'` or `ILIKE`, where the question never says X (as
    whole words, in any case, or in the plural)."""
    if not isinstance(condition, (exp.EQ, exp.Like, exp.ILike)):
        return False
    sides = (condition.this, condition.expression)
    column = next((s for s in sides if isinstance(s, exp.Column)), None)
    text = next((s for s in sides if isinstance(s, exp.Literal) and s.is_string), None)
    if column is None or text is None:
        return False
    said = text.this.strip("%_ ").replace("%", " ").strip()
    return bool(said) and not re.search(rf"(?<!\w){re.escape(said)}(?:e?s)?(?!\w)", question, re.IGNORECASE)


def inner_join(join: exp.Join) -> bool:
    """Whether the join is an inner one (`JOIN` or `INNER JOIN`): dropping an outer join would
    lose the rows it keeps."""
    return not join.args.get("side") and join.args.get("kind") in (None, "INNER")


def _runs(column: exp.Column, sources: dict[str, Source]) -> bool:
    """Whether a join condition's column can be read: its qualifier's dataset has it (a
    qualifier that is no dataset of the SELECT, or none, is given the benefit of the doubt)."""
    source = sources.get(column.table.lower())
    return source is None or source.has(column.name)


def epoch_to_timestamps(select: exp.Select, sources: dict[str, Source]) -> list[str]:
    changes: list[str] = []
    for _, column in list(date_columns(select)):  # listed first: the loop replaces what it walks
        if column.find_ancestor(exp.Select) is not select:
            continue
        holder = _holder(column, sources)
        if holder is None or not _holds_seconds(holder.info, column.name):
            continue
        column.replace(exp.UnixToTime(this=column.copy()))
        changes.append(f"{column.sql(dialect=QL_DIALECT)} holds Unix seconds: read as to_timestamp()")
    return changes


def years_as_stored(select: exp.Select, sources: dict[str, Source]) -> list[str]:
    """`strftime('%Y', year)` or `EXTRACT(YEAR FROM year)` of a column that holds years as
    integers: the year is the column as stored."""
    changes: list[str] = []
    for function, column in list(date_columns(select)):  # listed first: the loop replaces what it walks
        if column.find_ancestor(exp.Select) is not select or not _takes_the_year(function):
            continue
        holder = _holder(column, sources)
        if holder is None or column_holds(holder.info, _exact(holder.info, column.name)) != "years":
            continue
        said = function.sql(dialect=QL_DIALECT)
        function.replace(column.copy())
        changes.append(f"{column.sql(dialect=QL_DIALECT)} holds years: {said} read as the column")
    return changes


def _takes_the_year(function: exp.Expr) -> bool:
    if isinstance(function, exp.Extract):
        return function.name.upper() == "YEAR"
    if isinstance(function, exp.Anonymous) and function.name.lower() == "strftime":
        form = function.expressions[0] if function.expressions else None
        return isinstance(form, exp.Literal) and form.this == "%Y" and len(function.expressions) == 2
    return False


def _holder(column: exp.Column, sources: dict[str, Source]) -> Source | None:
    """The one table of the SELECT the column is read from (by its qualifier, or the only
    table that has it), else None."""
    holders = [s for a, s in sources.items() if s.has(column.name) and column.table.lower() in ("", a)]
    return holders[0] if len(holders) == 1 else None


def _exact(info: TableInfo, name: str) -> str:
    """The column's name as the table spells it."""
    return next((c for c in info.columns if c.lower() == name.lower()), name)


def _holds_seconds(info: TableInfo, name: str) -> bool:
    exact = _exact(info, name)
    hint = info.hints.get(exact)
    return hint is not None and unix_seconds(exact, info.column_descriptions.get(exact, ""), hint)
