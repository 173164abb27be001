"""Rows become visible only when their ingestion publishes."""

from __future__ import annotations

import pytest

from datawell.config import Settings
from datawell.storage.rows import Published, RowStore
from datawell.storage.tables import Dataset


@pytest.fixture
async def rows(database_url: str):
    store = RowStore(database_url)
    yield store
    await store.close()


def dataset() -> Dataset:
    return Dataset(
        id="d1",
        name="orders",
        table_name="ds_test_orders",
        schema_definition={"order_id": "id", "total": "amount", "paid": "paid?"},
        field_types={"order_id": "integer", "total": "real", "paid": "boolean"},
    )


async def test_staged_rows_are_invisible_until_published(rows: RowStore) -> None:
    ds = dataset()
    await rows.stage(ds, "11111111-1111-1111-1111-111111111111")
    await rows.write(ds, "11111111-1111-1111-1111-111111111111", [{"order_id": 1, "total": 2.5, "paid": True}] * 3)
    assert await rows.count(ds) == 0
    assert await rows.publish(ds, "11111111-1111-1111-1111-111111111111", source="a.csv") == Published(3, renamed=True)
    assert await rows.count(ds) == 3


async def test_restaging_drops_what_a_dead_worker_left(rows: RowStore) -> None:
    ds, ingestion = dataset(), "22222222-2222-2222-2222-222222222222"
    await rows.stage(ds, ingestion)
    await rows.write(ds, ingestion, [{"order_id": 1}] * 5)
    await rows.stage(ds, ingestion)
    await rows.write(ds, ingestion, [{"order_id": 1}] * 2)
    assert (await rows.publish(ds, ingestion, source="a.csv")).rows == 2
    assert await rows.count(ds) == 2


async def test_discard_and_clear(rows: RowStore) -> None:
    ds = dataset()
    await rows.stage(ds, "33333333-3333-3333-3333-333333333333")
    await rows.write(ds, "33333333-3333-3333-3333-333333333333", [{"order_id": 1}])
    await rows.discard(ds, "33333333-3333-3333-3333-333333333333")
    assert await rows.count(ds) == 0
    await rows.stage(ds, "44444444-4444-4444-4444-444444444444")
    await rows.write(ds, "44444444-4444-4444-4444-444444444444", [{"order_id": 1}] * 4)
    await rows.publish(ds, "44444444-4444-4444-4444-444444444444", source="a.csv")
    assert await rows.clear(ds) == 4
    assert await rows.count(ds) == 0


@pytest.mark.parametrize("large", [False, True])
async def test_bulk_writes_append_in_order_with_time_ordered_ids(rows: RowStore, large: bool) -> None:
    """Both SQLite writers (in process; ADBC in a child process) and PostgreSQL's COPY give the
    same rows, ids ascending in the order written; a second publish appends. Each row carries
    its own attempt's ingestion id and file, published by rename (the first) or appended."""
    import uuid

    import sqlalchemy as sa

    from datawell.storage.arrow_values import arrow_rows

    ds, first, second = dataset(), str(uuid.uuid4()), str(uuid.uuid4())
    for ingestion, start in ((first, 0), (second, 100)):
        await rows.stage(ds, ingestion)
        writer = rows.writer(ingestion, large=large)
        for part in range(2):
            batch = [{"order_id": start + part * 10 + i, "total": i / 2, "paid": i % 2 == 0} for i in range(10)]
            await writer.append(arrow_rows(batch, ds.field_types))
        await writer.close()
        published = await rows.publish(ds, ingestion, source=f"{start}'s orders.csv")
        assert published == Published(20, renamed=ingestion == first)
    read = await rows.published_after(ds, second, ["order_id", "paid"], "", 100)
    assert [values for _, values in read] == [(100 + i, i % 2 == 0) for i in range(20)]
    table = rows.table(ds)
    query = sa.select(table.c["__ingestion_id"], table.c["__source"], sa.func.count()).group_by(
        table.c["__ingestion_id"], table.c["__source"]
    )
    async with rows.engine.connect() as connection:
        origins = set((await connection.execute(query)).tuples())
    assert origins == {(first, "0's orders.csv", 20), (second, "100's orders.csv", 20)}
    assert all(uuid.UUID(row_id).version == 7 for row_id, _ in read)
    assert await rows.count(ds) == 40


async def test_a_table_made_before_lean_stages_takes_appends_by_name(rows: RowStore) -> None:
    """Tables made before issue 19 have the internal columns first and a key on `__id`; a
    stage (ids and fields only) is appended to them column by column, origins included."""
    import sqlalchemy as sa

    ds = dataset()
    old = sa.Table(
        ds.table_name,
        sa.MetaData(),
        sa.Column("__id", sa.String(36), primary_key=True),
        sa.Column("__ingestion_id", sa.String(36)),
        sa.Column("__source", sa.Text()),
        sa.Column("order_id", sa.BigInteger()),
        sa.Column("total", sa.Float()),
        sa.Column("paid", sa.Boolean()),
    )
    async with rows.engine.begin() as connection:
        await connection.run_sync(old.create)
        await connection.execute(
            old.insert().values(__id="0", __ingestion_id="before", __source="old.csv", order_id=1, total=1.5, paid=True)
        )
    ingestion = "55555555-5555-5555-5555-555555555555"
    await rows.stage(ds, ingestion)
    await rows.write(ds, ingestion, [{"order_id": 2, "total": 2.5, "paid": False}])
    assert (await rows.publish(ds, ingestion, source="new.csv")).rows == 1
    query = sa.select(old.c["__ingestion_id"], old.c["__source"], old.c["order_id"], old.c["paid"]).order_by("order_id")
    async with rows.engine.connect() as connection:
        found = (await connection.execute(query)).tuples().all()
    assert found == [("before", "old.csv", 1, True), (ingestion, "new.csv", 2, False)]


@pytest.mark.parametrize("large", [False, True])
async def test_a_bulk_write_that_the_database_refuses_fails_the_writer(rows: RowStore, large: bool) -> None:
    """A batch the database refuses (here: its stage was dropped) fails the write or the close
    with the database's own words, whichever process or thread did the writing."""
    from datawell.storage.arrow_values import arrow_rows

    ds, ingestion = dataset(), "66666666-6666-6666-6666-666666666666"
    await rows.stage(ds, ingestion)
    await rows.discard(ds, ingestion)
    writer = rows.writer(ingestion, large=large)
    with pytest.raises(Exception, match="stg_66666666"):
        try:
            for _ in range(3):
                await writer.append(arrow_rows([{"order_id": 1, "total": 1.0, "paid": True}] * 10, ds.field_types))
        finally:
            await writer.close()


async def test_a_started_writer_process_serves_one_stage_after_another(rows: RowStore) -> None:
    """The SQLite writer process a worker starts ahead (`prepare_writer`) takes the large stages
    one after another, is free again after each (no second one is started meanwhile), and is
    let go when a stage fails in it."""
    import uuid

    from datawell.storage.arrow_values import arrow_rows

    if rows.path is None:
        assert rows.prepare_writer() is None  # PostgreSQL: COPY needs no process
        return
    started = rows.prepare_writer()
    assert started is not None and rows.writer_ready() and rows.prepare_writer() is started
    ds = dataset()
    for start in (0, 100):
        ingestion = str(uuid.uuid4())
        await rows.stage(ds, ingestion)
        writer = rows.writer(ingestion, large=True)
        await writer.append(arrow_rows([{"order_id": start + i} for i in range(5)], ds.field_types))
        assert not rows.writer_ready()  # taken by the writer
        assert rows.prepare_writer() is None  # and no spare started while it writes (its memory)
        await writer.close()
        assert rows.writer_process is started and started.ready and started.alive()
        await rows.publish(ds, ingestion, source="a.csv")
    assert await rows.count(ds) == 10
    refused = str(uuid.uuid4())  # never staged: the child fails, and goes
    writer = rows.writer(refused, large=True)
    with pytest.raises(RuntimeError, match="stg_"):
        try:
            await writer.append(arrow_rows([{"order_id": 1}], ds.field_types))
        finally:
            await writer.close()
    assert rows.writer_process is None and not started.alive()
    again = rows.prepare_writer()
    assert again is not None and again is not started
    await rows.close()
    assert not again.alive()


async def test_staged_rows_reach_the_database_file_only_at_the_checkpoint_after_publishing(rows: RowStore) -> None:
    """SQLite: the writer process leaves its rows in the write-ahead log (no copy into the
    database, and no sync of it, inside the attempt); publishing commits them there, readable
    at once; `checkpoint_soon` copies them into the database file afterwards."""
    import os
    import uuid

    from datawell.storage.arrow_values import arrow_rows

    if rows.path is None:
        return  # PostgreSQL checkpoints on its own
    ds, ingestion = dataset(), str(uuid.uuid4())
    assert rows.prepare_writer() is not None
    await rows.stage(ds, ingestion)
    writer = rows.writer(ingestion, large=True)
    for start in range(0, 40_000, 20_000):  # about 1,000 pages: past SQLite's autocheckpoint
        await writer.append(arrow_rows([{"order_id": start + i, "total": 0.5} for i in range(20_000)], ds.field_types))
    await writer.close()
    database = os.path.getsize(rows.path)
    assert await rows.publish(ds, ingestion, source="a.csv") == Published(40_000, renamed=True)
    assert await rows.count(ds) == 40_000
    assert os.path.getsize(rows.path) == database  # still only in the log
    assert os.path.getsize(rows.path + "-wal") > 1_000_000
    rows.checkpoint_soon()
    assert rows.checkpointing is not None
    await rows.checkpointing
    assert os.path.getsize(rows.path) > database + 1_000_000
    assert await rows.count(ds) == 40_000


async def test_a_writer_process_that_cannot_start_is_not_restarted_at_every_poll(rows: RowStore, tmp_path) -> None:
    """The worker asks for a started writer process at every poll; one that ended before it
    ever started (here: its database's folder is missing) is not started again for a minute."""
    if rows.path is None:
        return
    rows.path = str(tmp_path / "missing" / "rows.db")
    first = rows.prepare_writer()
    assert first is not None
    first.process.wait(timeout=30)
    assert rows.prepare_writer() is None and rows.writer_process is None


async def test_the_service_returns_freed_arrow_memory_at_once(settings: Settings) -> None:
    """Issue 26: mimalloc, pyarrow's default, kept what each reading and writing thread freed (a
    3,000,000-row ingestion held ≈ 100 MB more); the service uses jemalloc with no decay."""
    import pyarrow as pa

    from datawell.services import build_services

    services = await build_services(settings)
    try:
        assert pa.default_memory_pool().backend_name == "jemalloc"
    finally:
        await services.close()
