"""Voting on candidates' result sets (graphs/nl2ql/voting.py)."""

from __future__ import annotations

from datawell.graphs.nl2ql.voting import Ran, vote
from datawell.tools.ql import QueryResult


def ran(rank: int, query: str, rows: list[dict[str, object]]) -> Ran:
    return Ran(rank, QueryResult(query=query, rows=rows, truncated=False))


def test_the_majority_result_wins_whatever_its_columns_are_named() -> None:
    winner, agreeing = vote(
        [
            ran(0, "a", [{"n": 1}]),
            ran(1, "b", [{"count": 2, "__metadata": {"id": 1}}]),
            ran(2, "c", [{"total": 2}]),
        ]
    )
    assert (winner.result.query, agreeing) == ("b", 2)


def test_a_tie_goes_to_the_most_likely_candidate() -> None:
    winner, agreeing = vote([ran(1, "b", [{"n": 2}]), ran(0, "a", [{"n": 1}])])
    assert (winner.result.query, agreeing) == ("a", 1)


def test_row_order_does_not_split_a_result_set() -> None:
    winner, agreeing = vote(
        [ran(0, "a", [{"x": 1}]), ran(1, "b", [{"x": 1}, {"x": 2}]), ran(2, "c", [{"x": 2}, {"x": 1}])]
    )
    assert (winner.result.query, agreeing) == ("b", 2)
