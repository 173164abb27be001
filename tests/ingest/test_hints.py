"""Ingestion keeps the catalog's value hints current: every publish (columnar and row path),
a takeover after the publishing worker died, and a clear refresh them. A first ingestion
takes them from the batches it writes, with no pass over the table: exactly what that pass
would find."""

from __future__ import annotations

import json
from typing import Any

import pytest
import sqlalchemy as sa

from datawell.ingest import columnar
from datawell.ingest.pipeline import Ingest
from datawell.ingest.worker import Lease, Worker
from datawell.services import Services
from datawell.storage import hints
from datawell.storage.tables import DatasetHints
from tests.conftest import Account
from tests.ingest.support import attempt, create_dataset, dataset_ref, drain, upload
from tests.ingest.test_worker import expire_leases

CLEAR = "/api/v1/data/alice/sales/orders/clear"


def orders_csv(*customers: str) -> bytes:
    lines = "".join(f"{i},{c},{i}.5,true,2024-03-0{i}\n" for i, c in enumerate(customers, 1))
    return ("order_id,customer,total,paid,placed_at\n" + lines).encode()


async def stored(services: Services, name: str = "orders") -> dict[str, Any] | None:
    """The dataset's stored hints, read as the catalog would find them (no computing)."""
    dataset = await dataset_ref(services, "alice", name)
    async with services.db.read() as session:
        found = await session.execute(sa.select(DatasetHints.hints).where(DatasetHints.dataset_id == dataset.record.id))
        return found.scalar_one_or_none()


async def test_each_ingestion_and_a_clear_refresh_the_hints(client, services: Services, alice: Account) -> None:
    await create_dataset(client, alice)
    await upload(services, "alice", "orders.csv", orders_csv("Ada", "Bob", "Ada"))
    await drain(services)
    first = await stored(services)
    assert first is not None and first["rows"] == 3
    assert first["columns"]["customer"]["values"] == ["Ada", "Bob"]
    assert first["columns"]["placed_at"] == {"type": "timestamp", "low": "2024-03-01", "high": "2024-03-03",
                                             "format": "YYYY-MM-DD"}  # fmt: skip

    await upload(services, "alice", "more.jsonl", b'{"order_id": 9, "customer": "Cy", "total": 1000}\n')
    await drain(services)  # the row path
    second = await stored(services)
    assert second is not None and second["rows"] == 4
    assert second["columns"]["customer"]["values"] == ["Ada", "Bob", "Cy"]
    assert (second["columns"]["total"]["low"], second["columns"]["total"]["high"]) == (1.5, 1000.0)

    assert (await client.post(CLEAR, headers=alice.headers)).status_code == 200
    assert await stored(services) == {"rows": 0, "columns": {name: {"type": kind} for name, kind in [
        ("order_id", "integer"), ("customer", "text"), ("total", "real"), ("paid", "boolean"), ("placed_at", "timestamp"),
    ]}}  # fmt: skip


async def test_a_worker_taking_over_a_published_attempt_refreshes_the_hints(
    client, services: Services, alice: Account
) -> None:
    await create_dataset(client, alice)
    await upload(services, "alice", "orders.csv", orders_csv("Ada", "Bob"))
    claimed = await Worker(services, "first").claim()
    assert claimed is not None
    job, dataset = claimed
    await Ingest(services, job, dataset, Lease(services, job.id, "first"), services.settings.data_dir).run()
    async with services.db.session() as session:  # as if it died between publishing and the hints
        await session.execute(sa.delete(DatasetHints))
    await expire_leases(services)
    assert await Worker(services, "second").run_once() == job.id
    again = await stored(services)
    assert again is not None and again["rows"] == 2


READINGS = {
    "dataDescription": "Readings of every kind",
    "schemaDefinition": {
        "n": "a count", "x": "a measure", "ok": "a flag", "day": "a day", "at": "a moment", "kind": "a kind",
        "label": "a label", "note": "a remark", "code": "a code", "late": "a number, then text", "unused": "never filled",
    },
}  # fmt: skip
ROWS = 12_000  # more than hints.SAMPLE: the text columns are known by a sample
RARE_AT = 11_000  # after the sample: `code` looks like a category of two values until here


def reading(i: int) -> list[str]:
    return [
        str(i - 500),
        "" if i % 7 == 0 else str(i / 4),
        ["true", "false", ""][i % 3],
        f"2024-{1 + i % 12:02d}-{1 + i % 28:02d}",  # dates only
        f"2024-05-01 {i % 24:02d}:{i % 60:02d}:00",
        "" if i % 50 == 0 else ["red", "green", "blue"][i % 3],  # a category, with nulls
        f"L{i % 37}",  # many values, some more frequent than others
        f"remark number {i} " + "x" * (i % 50),  # free text, long values cut
        "RARE" if i == RARE_AT else ["A", "B"][i % 2],
        "n/a" if i == 4321 else str(i),  # text only after the first batches were written as integers
    ]


def readings_csv(rows: range) -> bytes:
    lines = [",".join(READINGS["schemaDefinition"])[: -len(",unused")]]  # no column fills `unused`
    return "\n".join(lines + [",".join(reading(i)) for i in rows]).encode() + b"\n"


async def as_computed(services: Services, name: str) -> None:
    """The stored hints are what the SQL pass over the published table finds."""
    found = await stored(services, name)
    assert found is not None
    dataset = await dataset_ref(services, "alice", name)
    assert hints.TableHints.model_validate(found) == await hints.compute(services.rows, dataset.record)


async def ingest(services: Services, name: str, filename: str, data: bytes) -> str:
    ingestion_id = await upload(services, "alice", filename, data, dataset=name)
    assert await drain(services) == [ingestion_id]
    done = await attempt(services, ingestion_id)
    assert done.status == "SUCCEEDED", done.status_message
    return ingestion_id


@pytest.fixture
def no_scan(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """A first ingestion must not read its table for the hints: the SQL pass fails it."""

    async def scan(*args: Any) -> hints.TableHints:
        raise AssertionError("the hints of a first ingestion were computed by a pass over the table")

    monkeypatch.setattr(hints, "compute", scan)
    return monkeypatch


async def test_a_first_ingestion_takes_the_hints_from_its_batches(
    client, services: Services, alice: Account, no_scan: pytest.MonkeyPatch, row_reads: list[str]
) -> None:
    services.settings.ingest_batch_rows = 1000
    await create_dataset(client, alice, "readings", READINGS)
    await ingest(services, "readings", "readings.csv", readings_csv(range(ROWS)))
    assert row_reads == []  # the columnar path, written again once `late` turned to text
    no_scan.undo()
    await as_computed(services, "readings")
    found = await stored(services, "readings")
    assert found is not None and found["rows"] == ROWS
    columns = found["columns"]
    assert columns["code"] == {"type": "text", "distinct": 3, "values": ["B", "A", "RARE"]}
    assert columns["kind"] == {"type": "text", "nulls": 240, "distinct": 3, "values": ["green", "blue", "red"]}
    assert columns["note"]["distinct_at_least"] == 10_000 and columns["unused"] == {"type": "text", "nulls": ROWS}
    assert (columns["day"]["format"], columns["at"]["format"]) == ("YYYY-MM-DD", "YYYY-MM-DD HH:MM:SS")
    assert columns["late"]["type"] == "text"

    # An append keeps the pass over the table: the hints are of both files' rows.
    await ingest(services, "readings", "more.csv", readings_csv(range(ROWS, ROWS + 50)))
    await as_computed(services, "readings")
    assert (await stored(services, "readings") or {})["rows"] == ROWS + 50


async def test_a_file_that_falls_back_to_the_row_path_counts_only_its_rows(
    client, services: Services, alice: Account, no_scan: pytest.MonkeyPatch, row_reads: list[str]
) -> None:
    """Batches were written the columnar way before a nested value sent the file to the row
    path, which stages it again: the hints count each row once."""
    services.settings.ingest_batch_rows = 20
    no_scan.setattr(columnar, "BLOCK_BYTES", 2048)  # several blocks: the nested value is in a late one
    await create_dataset(client, alice, "readings", READINGS)
    records = [dict(zip(READINGS["schemaDefinition"], reading(i), strict=False)) for i in range(300)]
    records[250]["note"] = {"nested": [1, 2]}
    data = "\n".join(json.dumps({k: v for k, v in r.items() if v != ""}) for r in records).encode()
    ingestion_id = await ingest(services, "readings", "readings.jsonl", data)
    assert row_reads == [ingestion_id]
    no_scan.undo()
    await as_computed(services, "readings")
    assert (await stored(services, "readings") or {})["rows"] == 300
