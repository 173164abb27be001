"""Execution-guided self-consistency (issue 27).

For a question the query writer is asked `k` times at once (through the normal model
interface, so the scheduler and the embedded runtime's parallel slots serve the calls side by
side over the cached prompt prefix). Each candidate query is checked and run as the caller;
the answer is the result set most candidates agree on, ties going to the most likely
candidate (the earliest: the first reply is the model's own first choice, written at the
stage's temperature; the others sample at `query_candidate_temperature`). A candidate the
checker refuses is not repaired while another one runs: only when no candidate runs does the
usual repair loop start, from the first candidate.

`k` is the setting `query_candidates` (default 1: one call, no voting, until the dev suite
has been measured at k = 1, 3, 5 on the idle machine)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from langchain_core.language_models import BaseChatModel

from datawell.errors import QueryError
from datawell.tools.ql import QueryResult


def sampling(model: BaseChatModel, temperature: float) -> BaseChatModel:
    """The model with a sampling temperature for candidates after the first (the embedded
    model writes SQL at temperature 0, where k candidates would be one); a model without a
    temperature field (a scripted one) is used as it is."""
    if "temperature" not in type(model).model_fields:
        return model
    return model.model_copy(update={"temperature": temperature})


@dataclass(frozen=True)
class Ran:
    """A candidate that ran: its place among the replies (0: the most likely) and result."""

    rank: int
    result: QueryResult


def result_key(rows: list[dict[str, Any]]) -> str:
    """The result set as a comparable value: the rows' visible values, in order, whatever the
    columns are named (two queries that alias a count differently agree)."""
    values = [[v for k, v in row.items() if not k.startswith("__")] for row in rows]
    return json.dumps(sorted(json.dumps(v, default=str, sort_keys=True) for v in values))


def vote(ran: list[Ran]) -> tuple[Ran, int]:
    """The candidate whose result set most candidates share (ties: the lowest rank), and
    how many share it."""
    groups: dict[str, list[Ran]] = {}
    for candidate in sorted(ran, key=lambda c: c.rank):
        groups.setdefault(result_key(candidate.result.rows), []).append(candidate)
    best = max(groups.values(), key=lambda g: (len(g), -g[0].rank))
    return best[0], len(best)


async def run_candidates(queries: list[str], run: Callable[[str], Awaitable[QueryResult]]) -> list[Ran]:
    """Check and run each distinct candidate once (a repeated query counts for each reply
    that wrote it); those refused or failing are left out."""
    distinct = list(dict.fromkeys(queries))
    outcomes = await asyncio.gather(*(run(q) for q in distinct), return_exceptions=True)
    by_query: dict[str, QueryResult] = {}
    for query, outcome in zip(distinct, outcomes, strict=True):
        if isinstance(outcome, QueryResult):
            by_query[query] = outcome
        elif not isinstance(outcome, QueryError):
            raise outcome
    return [Ran(rank, by_query[q]) for rank, q in enumerate(queries) if q in by_query]
