"""Fixtures shared by the ingestion tests."""

from __future__ import annotations

from typing import Any

import pytest

from datawell.ingest import staging


@pytest.fixture
def row_reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The attempts that took the row path."""
    taken: list[str] = []
    write_rows = staging.Staging.write_rows

    async def spy(self: staging.Staging, *args: Any) -> Any:
        taken.append(self.attempt_id)
        return await write_rows(self, *args)

    monkeypatch.setattr(staging.Staging, "write_rows", spy)
    return taken
