"""Fixtures shared by the ingestion tests."""

from __future__ import annotations

from typing import Any

import pytest

from datawell.ingest import pipeline


@pytest.fixture
def row_reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The attempts that took the row path."""
    taken: list[str] = []
    write_rows = pipeline.Ingest.write_rows

    async def spy(self: pipeline.Ingest, *args: Any) -> Any:
        taken.append(self.attempt.id)
        return await write_rows(self, *args)

    monkeypatch.setattr(pipeline.Ingest, "write_rows", spy)
    return taken
