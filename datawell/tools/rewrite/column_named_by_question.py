"""`column_named_by_question`, an on-refusal rule: it runs on each SELECT of a query the
checker refused, with the datasets the SELECT reads (moved out of tools/mend.py as it was,
issue 47); the last of them.

**A name the question picks among several.** `SELECT airport_code ... FROM flight`, where
`flight` has no `airport_code` but `from_airport` and `to_airport` share its word: read as
the one whose other words and description the question says most ("depart from": from_airport,
"the departure location"), when one says more than the others and no dataset was joined for it.
"""

from __future__ import annotations

from sqlglot import exp

from datawell.tools.catalog import TableInfo
from datawell.tools.names import GENERIC, parts
from datawell.tools.rewrite.lexicon import stems
from datawell.tools.rewrite.sql import Source, unknown_columns


def column_named_by_question(select: exp.Select, sources: dict[str, Source], question: str) -> list[str]:
    """A column no table of the SELECT has, read through a table (its qualifier's, or the only
    one) with several columns that share a word of its name (`airport_code`: `from_airport`,
    `to_airport`): read as the one whose own words and description the question says most
    (`depart from each airport code`: from_airport, "the departure location"), when one does.
    Runs after the other rules: a dataset that holds the name, and links to the table, is
    joined first."""
    changes: list[str] = []
    said = stems(question)
    for column, owner in unknown_columns(select, sources):
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
    return len(said & stems(" ".join([*(set(parts(column)) - shared), info.column_descriptions.get(column, "")])))
