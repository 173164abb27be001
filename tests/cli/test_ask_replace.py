"""`datawell ask` shows each rewrite rule that changed a step's query, with the query before and
after (issue 47). The answer it prints is the checked one: tests/cli/test_ask_checked.py."""

from __future__ import annotations

import pytest

from datawell.commands.ask import print_run


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
