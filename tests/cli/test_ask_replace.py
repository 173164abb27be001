"""`datawell ask` shows the corrected answer when the service replaces a streamed one (issue 27)."""

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
