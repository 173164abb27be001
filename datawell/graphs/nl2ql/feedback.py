"""What the next attempt of the nl2ql graph is told: of a query the checker refused or that
failed when it ran (`failure_feedback`, `blind_feedback`), and of a result that ran but may
not answer the question (`doubt`). Moved out of nodes.py (issue 47) to keep it in bounds."""

from __future__ import annotations

import re
from typing import Any

from datawell.errors import QueryError


def failure_feedback(query: str, exc: QueryError, what: str = "was refused", hints: list[str] | None = None) -> str:
    """What the next attempt is told of a failed query: the query, then its problems."""
    lines = [f"Your previous query was:\n{query}", *_problems(exc, f"It {what}", hints)]
    return "\n".join([*lines, "Write a corrected query that follows the rules."])


def blind_feedback(exc: QueryError, what: str = "was refused", hints: list[str] | None = None) -> str:
    """The problems of a failed query without the query itself. Shown its refused query, the
    small query writer tends to send it back word for word, at any temperature; told only
    what was wrong, it writes the query anew (see `generate`)."""
    lines = _problems(exc, f"A first query {what}", hints)
    return "\n".join([*lines, "Write a query that avoids these problems and follows the rules."])


def _problems(exc: QueryError, opening: str, hints: list[str] | None) -> list[str]:
    lines = [f"{opening}: {exc.message}", *(f"- {s.message}" for s in exc.sub_errors)]
    if exc.detail:
        lines.append(exc.detail)
    if hints:
        lines.append("What the whole catalog says of those names:")
        lines += [f"- {hint}" for hint in hints]
    return lines


# Words of a question that asks for the largest, smallest, first or last items.
EXTREMES = re.compile(
    r"\b(top|most|least|highest|lowest|largest|smallest|biggest|best|worst|first|last|latest|earliest|"
    r"cheapest|fewest|maximum|minimum)\b",
    re.I,
)
ORDERED = re.compile(r"\border\s+by\b|\b(max|min)\s*\(", re.I)


def doubt(question: str, query: str, rows: list[dict[str, Any]]) -> str:
    """Why a result that ran may still not answer the question, or "" when nothing looks
    wrong: no rows, only NULLs, or a question about extremes answered without ordering."""
    if not rows:
        return (
            "It ran but returned no rows. If the question expects rows, compare the filter values with the "
            "values the catalog shows (spelling, case, date format) and check the joins."
        )
    if all(value is None for row in rows for key, value in row.items() if not key.startswith("__")):
        return "It ran but every value it returned is NULL: check the columns and the joins."
    if EXTREMES.search(question) and not ORDERED.search(query):
        return "The question asks for the top or extreme items, but the query has no ORDER BY (or MAX/MIN)."
    return ""
