"""The direct read path's conversions and its refusal of a database it cannot share."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from datawell.storage.direct import DirectReads, json_value, timestamp


def test_sqlite_text_and_postgresql_values_give_the_same_utc_timestamp() -> None:
    expected = datetime(2026, 11, 23, 10, 0, 0, 123456, tzinfo=UTC)
    assert timestamp("2026-11-23 10:00:00.123456") == expected  # as SQLAlchemy writes it to SQLite
    assert timestamp(expected.astimezone(timezone(timedelta(hours=2)))) == expected
    assert timestamp(expected).tzinfo is UTC


def test_json_columns_are_parsed() -> None:
    assert json_value('{"a": "b"}') == {"a": "b"}
    assert json_value(None) is None


def test_an_in_memory_sqlite_database_is_refused() -> None:
    # A second connection to ":memory:" would be another, empty database.
    with pytest.raises(ValueError, match="SQLite database file"):
        DirectReads("sqlite+aiosqlite:///:memory:")
