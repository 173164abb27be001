"""`reroute_mistyped_joins`, a before-run rule: it runs on each SELECT of every query, with the
datasets the SELECT reads (moved out of tools/mend.py as it was, issue 47): the query it mends
runs on SQLite, with no rows.

**A join of a number with a text.** `course_offering.semester = semester.semester`, where
the first holds integers (a semester's id) and the second text (`Fall`): SQLite finds no
pair, PostgreSQL refuses it. When the text side's table has one own key (by name:
`joins.key_names`) of the number's type, the condition reads that key:
`course_offering.semester = semester.semester_id`.
"""

from __future__ import annotations

from sqlglot import exp

from datawell.tools.catalog import TableInfo
from datawell.tools.checker.allowed import QL_DIALECT
from datawell.tools.rewrite.joins import equi_joins, key_names
from datawell.tools.rewrite.sql import Source, spelling

NUMBERS = frozenset(["integer", "real"])


def reroute_mistyped_joins(select: exp.Select, sources: dict[str, Source]) -> list[str]:
    """Each join of a number column with a text column read on the text table's one own key
    of the number's type (see the module's docstring)."""
    changes: list[str] = []
    for _, _, sides in equi_joins(select, sources):
        kinds = [_kind(sources[c.table.lower()].info, c.name) for c in sides]
        number = next((k for k in kinds if k in NUMBERS), None)
        if "text" not in kinds or number is None:
            continue
        text_side, number_side = (sides[0], sides[1]) if kinds[0] == "text" else (sides[1], sides[0])
        info = sources[text_side.table.lower()].info
        keys = [spelling(info, k) for k in key_names(info) if _kind(info, k) == number]
        if len(keys) != 1:
            continue
        said = text_side.sql(dialect=QL_DIALECT)
        text_side.set("this", exp.to_identifier(keys[0]))
        changes.append(
            f"{number_side.sql(dialect=QL_DIALECT)} holds numbers and {said} text: joined on {info.name}'s key {keys[0]}"
        )
    return changes


def _kind(info: TableInfo, column: str) -> str:
    return info.columns.get(spelling(info, column), "")
