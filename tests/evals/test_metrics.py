"""Metrics: BIRD execution accuracy, numbers in answers, links, standard errors."""

from __future__ import annotations

import math

import pytest

from datawell.evals import metrics


def rows(*values: tuple[object, ...], names: str = "ab") -> list[dict[str, object]]:
    return [dict(zip(names, v, strict=False)) for v in values]


def test_sets_ignore_order_duplicates_and_column_names() -> None:
    gold = rows((1, "x"), (2, "y"))
    assert metrics.results_match([{"n": 2, "s": "y"}, {"n": 1, "s": "x"}], gold, ordered=False)
    assert metrics.results_match(rows((2, "y"), (1, "x"), (1, "x")), gold, ordered=False)  # BIRD compares sets
    assert not metrics.results_match(rows((1, "x")), gold, ordered=False)


def test_order_matters_only_when_asked() -> None:
    gold = rows((1,), (2,), (3,))
    assert not metrics.results_match(rows((3,), (2,), (1,)), gold, ordered=True)
    assert metrics.results_match(rows((1,), (2,), (3,)), gold, ordered=True)


def test_column_order_is_strict_unless_ignored() -> None:
    gold = rows(("x", 1), ("y", 2))
    swapped = rows((1, "x"), (2, "y"))
    assert not metrics.results_match(swapped, gold, ordered=False)
    assert metrics.results_match(swapped, gold, ordered=False, any_column_order=True)
    assert not metrics.results_match(rows((1, "x", 0), names="abc"), gold, ordered=False, any_column_order=True)


def test_extra_columns_pass_only_when_allowed_and_every_gold_column_is_there() -> None:
    gold = rows(("Nature", 3), ("Science", 1))
    wider = rows((3, "Nature", 2), (1, "Science", 7), names="nab")  # count, name, and an id the gold lacks
    assert not metrics.results_match(wider, gold, ordered=False, any_column_order=True)
    assert metrics.results_match(wider, gold, ordered=False, extra_columns=True)
    assert metrics.results_match(wider, gold, ordered=True, extra_columns=True)
    # The values must still sit in the same rows, and every gold column must be found.
    crossed = rows((1, "Nature", 2), (3, "Science", 7), names="nab")
    assert not metrics.results_match(crossed, gold, ordered=False, extra_columns=True)
    missing = rows((3, "Nature X", 2), (1, "Science", 7), names="nab")
    assert not metrics.results_match(missing, gold, ordered=False, extra_columns=True)
    # Order still counts when the gold orders.
    assert not metrics.results_match(list(reversed(wider)), gold, ordered=True, extra_columns=True)


@pytest.mark.parametrize(
    ("predicted", "kind"),
    [
        ([], "empty"),
        (rows((1,), (2,), names="a"), "columns missing"),  # the gold's second column is not there
        (rows((2, "y"), (1, "x")), "order"),  # the right rows, asked in order, in another
        (rows((1, "x"), (2, "y"), (3, "z")), "more rows"),
        (rows((1, "x")), "fewer rows"),
        (rows((1, "x"), (2, "z")), "other values"),
    ],
)
def test_a_mismatch_is_named_by_its_kind(predicted: list[dict[str, object]], kind: str) -> None:
    gold = rows((1, "x"), (2, "y"))
    assert not metrics.results_match(predicted, gold, ordered=True)
    assert metrics.mismatch(predicted, gold, ordered=True) == kind


def test_a_wider_result_in_another_order_is_named_by_its_order_under_extra_columns() -> None:
    gold = rows(("Nature", 3), ("Science", 1))
    wider = rows((1, "Science", 7), (3, "Nature", 2), names="nab")
    assert metrics.mismatch(wider, gold, ordered=True, extra_columns=True) == "order"
    assert metrics.mismatch(wider, gold, ordered=True) == "other values"  # without: the extra column counts


def test_internal_fields_and_number_types_do_not_matter() -> None:
    predicted = [{"__metadata": {"score": 0.9}, "n": 3.0, "ok": True, "avg": 1 / 3}]
    gold = [{"n": 3, "ok": 1, "avg": 0.3333333333}]
    assert metrics.results_match(predicted, gold, ordered=True)


def test_gold_query_orders_only_at_the_top_level() -> None:
    assert metrics.query_orders("SELECT a FROM t ORDER BY a DESC LIMIT 3")
    assert not metrics.query_orders("SELECT a FROM (SELECT a FROM t ORDER BY a) AS s")
    assert not metrics.query_orders("SELECT category, COUNT(*) FROM products GROUP BY category")


def test_rows_contain_is_case_insensitive_for_text() -> None:
    found = rows(("Camping Stove", 1), ("Tent", 2))
    assert metrics.rows_contain(found, ["camping stove", 2]) == []
    assert metrics.rows_contain(found, ["Skillet"]) == ["Skillet"]


@pytest.mark.parametrize(
    ("text", "expected", "tolerance", "found"),
    [
        ("Kaito spent 2,007.15 euros", 2007.15, 0, 2007.15),
        ("about 2007 euros", 2007.15, 1, 2007.0),
        ("about 2005 euros", 2007.15, 1, None),
        ("8.9% of orders", 8.89, 0.1, 8.9),
        ("it was -9.5 °C", -9.5, 0, -9.5),
        ("−9.5 degrees", -9.5, 0, -9.5),
        ("21 orders in 2024-03", 3, 0, 3.0),
        ("version v2", 2, 0, None),
    ],
)
def test_numbers_in_answers(text: str, expected: float, tolerance: float, found: float | None) -> None:
    assert metrics.numeric_match(text, expected, tolerance) == found


def test_link_scores_ignore_direction_and_report_match_types() -> None:
    gold = [("r/o.c", "r/c.code", "ExactMatch"), ("r/o.sku", "r/p.sku", "ExactMatch")]
    predicted = [("r/c.code", "r/o.c", "FuzzyMatch"), ("r/o.id", "r/p.id", "ExactMatch")]
    score = metrics.link_scores(predicted, gold)
    assert (score.precision, score.recall, score.f1) == (0.5, 0.5, 0.5)
    assert score.match_type_agreement == 0.0
    perfect = metrics.link_scores(gold, gold)
    assert perfect.f1 == 1.0 and perfect.match_type_agreement == 1.0
    nothing = metrics.link_scores([], gold)
    assert (nothing.precision, nothing.recall, nothing.f1) == (0.0, 0.0, 0.0)


def test_standard_error() -> None:
    passes = metrics.estimate([1, 1, 0, 1])
    assert passes.mean == 0.75 and math.isclose(passes.se, math.sqrt(0.75 * 0.25 / 4))
    scores = metrics.estimate([0.5, 1.0, 0.0])
    assert math.isclose(scores.se, math.sqrt(0.25 / 3))
    assert metrics.estimate([]).n == 0 and metrics.estimate([0.4]).se == 0.0
    assert metrics.percentile([5, 1, 3, 2, 4], 0.5) == 3 and metrics.percentile([5, 1, 3, 2, 4], 0.95) == 5
