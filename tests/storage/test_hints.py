"""Value hints: what SQL aggregates over a dataset's rows tell a query writer, stored and read
back by the catalog."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import sqlalchemy as sa

from datawell.services import Services
from datawell.storage import access, hints
from datawell.storage.datasets import find_dataset
from datawell.storage.tables import DatasetHints
from datawell.storage.users import create_user
from tests.tools.conftest import load

FIELDS = {
    "country": "text", "name": "text", "label": "text", "amount": "real", "qty": "integer",
    "day": "timestamp", "note": "text", "empty": "text", "ok": "boolean",
}  # fmt: skip
REMARK = "a very long remark " * 5


def company(i: int) -> dict[str, Any]:
    return {
        "country": ["DE", "DE", "DE", "FR", "FR", "US"][i % 6],
        "name": f"Company {i:02d}",
        "label": f"L{i % 15}",
        "amount": 3.5 + i * 10,
        "qty": i,
        "day": datetime(2024, 1, 2, tzinfo=UTC) + timedelta(days=i),
        "note": REMARK if i % 3 == 0 else None,
        "empty": None,
        "ok": i % 2 == 0,
    }


async def companies(services: Services, count: int = 30) -> Any:
    async with services.db.session() as session:
        user = await create_user(session, "carol")
        namespace = await access.ensure_namespace(session, user, "firms")
    rows = [company(i) for i in range(count)]
    await load(services, namespace, user, "companies", {f: "" for f in FIELDS}, FIELDS, rows)
    return user, namespace


async def test_hints_per_column_type(services: Services) -> None:
    user, namespace = await companies(services)
    [table] = (await services.query_tools.catalog(user, namespace)).tables
    assert table.row_count == 30
    assert table.hints["country"].values == ["DE", "FR", "US"]  # every value, the most frequent first
    assert table.hints["label"].distinct == 15 and table.hints["label"].values == ["L0", "L1", "L10"]
    assert table.hints["note"].values == [REMARK[:39] + "…"] and table.hints["note"].nulls == 20
    lines = (await services.query_tools.catalog(user, namespace)).render().splitlines()
    assert lines[2:] == [
        "Table companies (30 rows): companies of the shop",
        "  country text: one of 'DE', 'FR', 'US'",
        "  name text: unique, e.g. 'Company 00', 'Company 01', 'Company 02'",
        "  label text: 15 distinct, e.g. 'L0', 'L1', 'L10'",
        "  amount real: 3.5 to 293.5",
        "  qty integer: 0 to 29",
        "  day timestamp: 2024-01-02 to 2024-01-31 (YYYY-MM-DD)",
        "  note text: one of 'a very long remark a very long remark a…'; 67% null",
        "  empty text: always null",
        "  ok boolean",
    ]


async def test_old_datasets_get_their_hints_once_then_the_catalog_reads_them(services: Services) -> None:
    user, namespace = await companies(services)  # published without hints, as before they existed
    async with services.db.read() as session:
        assert (await session.execute(sa.select(DatasetHints))).first() is None
    assert (await services.query_tools.catalog(user, namespace)).tables[0].row_count == 30
    async with services.db.read() as session:
        [stored] = (await session.execute(sa.select(DatasetHints.hints))).scalars()
    assert stored["rows"] == 30

    # Rows published behind the hints' back are not seen: the catalog reads the stored hints.
    await load_more(services, namespace)
    assert (await services.query_tools.catalog(user, namespace)).tables[0].row_count == 30
    async with services.db.read() as session:
        dataset = await find_dataset(session, namespace, "companies")
    assert dataset is not None
    await hints.refresh(services.db, services.rows, dataset.record)
    assert (await services.query_tools.catalog(user, namespace)).tables[0].row_count == 31


async def load_more(services: Services, namespace: Any) -> None:
    async with services.db.read() as session:
        dataset = await find_dataset(session, namespace, "companies")
    assert dataset is not None
    await services.rows.stage(dataset.record, "more")
    await services.rows.write(dataset.record, "more", [company(99)])
    await services.rows.publish(dataset.record, "more", source="more.csv")


async def test_a_refresh_that_began_earlier_never_overwrites_a_later_one(services: Services) -> None:
    user, namespace = await companies(services)
    [table] = (await services.query_tools.catalog(user, namespace)).tables
    later = datetime.now(UTC) + timedelta(hours=1)
    async with services.db.session() as session:
        await session.execute(sa.update(DatasetHints).values(hints={"rows": 7, "columns": {}}, computed_at=later))
    async with services.db.read() as session:
        dataset = await find_dataset(session, namespace, "companies")
    assert dataset is not None
    await hints.refresh(services.db, services.rows, dataset.record)
    assert (await services.query_tools.catalog(user, namespace)).tables[0].row_count == 7
    assert table.row_count == 30


async def test_large_tables_group_a_sample_yet_find_every_value_of_a_category(
    services: Services, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(hints, "SAMPLE", 13)  # as if the table were far larger than the sample
    user, namespace = await companies(services)
    rare = [{"country": "DE"}] * 20 + [{"country": "LU"}]  # LU comes after the sample
    await load(services, namespace, user, "regions", {"country": ""}, {"country": "text"}, rare)
    catalog = await services.query_tools.catalog(user, namespace)
    lines = catalog.render().splitlines()
    assert "  country text: one of 'DE', 'FR', 'US'" in lines  # the sample held every value
    assert "  name text: 13+ distinct, e.g. 'Company 00', 'Company 01', 'Company 02'" in lines
    assert "  country text: one of 'DE', 'LU'" in lines


EDGES = {"word": "text", "tag": "text", "at": "timestamp", "x": "real", "none": "integer"}
WORDS = [
    "é",
    "z",
    "Z",
    "a",
    "ä",
    "Ω",
    "zz",
    "É",
    "b",
    "ß",
    "A",
    "aa",
    "😀",
    "é ",
    "e",
]  # orders that differ by collation


def edge(i: int) -> dict[str, Any]:
    return {
        "word": WORDS[i % len(WORDS)] if i % 4 else WORDS[i % 3],
        "tag": "rare" if i == 35 else ["on", "off", None][i % 3],
        # midnight to the second (SQLite's notion of a date), not to the microsecond (PostgreSQL's)
        "at": datetime(1969, 12, 31 - i % 3, tzinfo=UTC) + timedelta(microseconds=500 * (i % 2)),
        "x": None if i % 5 == 0 else -1.5 * i,
    }


@pytest.fixture
async def rows_store(database_url: str) -> Any:
    from datawell.storage.rows import RowStore

    store = RowStore(database_url)
    yield store
    await store.close()


@pytest.mark.parametrize("count", [0, 40])
async def test_hints_from_the_batches_are_those_of_the_published_table(
    rows_store: Any, monkeypatch: pytest.MonkeyPatch, count: int
) -> None:
    """Batches of uneven sizes, a sample that ends inside a batch followed by a value it did
    not see, text ordered by the store's collation, dates with fractions of a second."""
    from datawell.storage.arrow_values import arrow_rows
    from datawell.storage.tables import Dataset

    monkeypatch.setattr(hints, "SAMPLE", 20)
    ds = Dataset(id="d1", name="edges", table_name="ds_test_edges", schema_definition=dict.fromkeys(EDGES, ""),
                 field_types=EDGES)  # fmt: skip
    await rows_store.stage(ds, "edges")
    writer, observed = rows_store.writer("edges"), hints.BatchHints(rows_store.dialect)
    for start, end in [(0, 3), (3, 11), (11, 12), (12, count)][: 4 if count else 0]:
        batch = arrow_rows([edge(i) for i in range(start, end)], EDGES)
        observed.observe(batch)
        await writer.append(batch)
    await writer.close()
    assert (await rows_store.publish(ds, "edges", source="edges.csv")).renamed
    found = await hints.observed(rows_store, ds, observed)
    assert found == await hints.compute(rows_store, ds)
    assert found is not None and found.rows == count
