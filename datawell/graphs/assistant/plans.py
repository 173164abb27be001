"""Repairs of the plans small models write: one SQL query split into clause "steps", or a
query's clauses written as steps in words, become one step each."""

from __future__ import annotations

import re

SQL_CLAUSE = re.compile(
    r"^(select|from|join|inner|left|right|full|cross|where|group|order|having|limit|union|with|and|or|on)\b", re.I
)
# A step that only comments on the query before it ("This query joins …").
QUERY_COMMENTARY = re.compile(r"^(this|the|that|above)\s+(query|sql|statement)\b", re.I)
SQL_STEP = "Run this query: "
# A step that is one clause of the query before it, in words ("Filter …", "Group the
# results by …", "Sort …"): small models plan a query as a list of them.
CLAUSE_IN_WORDS = re.compile(
    r"^(then\s+)?(filter|group|order|sort|sum|count|average|aggregate|join|limit|rank|keep|exclude|select)\b", re.I
)


def join_sql_fragments(steps: list[str]) -> list[str]:
    """Small models sometimes write one SQL query as a list of clause "steps" (SELECT …,
    FROM …, GROUP BY …), often followed by a step that explains it. Consecutive clause
    lines become one step that states the query (`SQL_STEP` + the query); an explanation
    right after it is dropped, since running it would only repeat the query."""
    joined: list[str] = []
    fragment: list[str] = []
    for step in (s.strip() for s in steps):
        if not step:
            continue
        if SQL_CLAUSE.match(step) and (fragment or step.lower().startswith(("select", "with"))):
            fragment.append(step)
            continue
        if fragment:
            joined.append(SQL_STEP + " ".join(fragment))
            fragment = []
        if joined and joined[-1].startswith(SQL_STEP) and QUERY_COMMENTARY.match(step):
            continue
        joined.append(step)
    if fragment:
        joined.append(SQL_STEP + " ".join(fragment))
    return joined


def merge_clause_steps(steps: list[str]) -> list[str]:
    """Steps that are clauses of the step before them, in words (see `CLAUSE_IN_WORDS`),
    join that step: one instruction, one query. A plan of five such steps took five query
    writer calls and ran out of time, while the first step's query already answered it."""
    merged: list[str] = []
    for step in steps:
        if merged and not merged[-1].startswith(SQL_STEP) and CLAUSE_IN_WORDS.match(step):
            merged[-1] = f"{merged[-1].rstrip('.')}; {step[0].lower()}{step[1:]}"
        else:
            merged.append(step)
    return merged


def proposed_query(instruction: str) -> str:
    """The query a plan step already states, which the step checks and runs before asking
    the query writer (one model call fewer); "" for a plain-English step."""
    return instruction.removeprefix(SQL_STEP) if instruction.startswith(SQL_STEP) else ""
