"""`datawell ask` shows the corrected answer when the service replaces a streamed one (issue 27),
and each rewrite rule that changed a step's query, with the query before and after (issue 47)."""

from __future__ import annotations

import pytest

from datawell.commands.ask import print_run


def test_a_replacing_delta_prints_the_corrected_answer(capsys: pytest.CaptureFixture[str]) -> None:
    print_run(
        [
            ("answer-delta", {"text": "There was 1 order."}),
            ("answer-delta", {"text": "There were no orders (0).", "replace": True}),
            ("answer", {"text": "There were no orders (0)."}),
        ]
    )
    out = capsys.readouterr().out
    assert out.endswith("A (checked against the results): There were no orders (0).\n")


def test_each_rule_that_changed_a_steps_query_is_printed_with_the_query_before_and_after(
    capsys: pytest.CaptureFixture[str],
) -> None:
    written = "SELECT city, COUNT(*) AS n FROM customers GROUP BY city LIMIT 10"
    ran = "SELECT city, COUNT(*) AS n FROM customers GROUP BY city"
    change = {"rule": "drop_unasked_limit", "before": written, "after": ran, "reason": "dropped LIMIT 10"}
    print_run([("step", {"index": 1, "query": ran, "modelQuery": written, "changes": [change], "data": []})])

    lines = capsys.readouterr().out.splitlines()
    assert lines[1:] == [
        f"step 1: {ran}",
        "  rule drop_unasked_limit: dropped LIMIT 10",
        f"    before: {written}",
        f"    after:  {ran}",
    ]
