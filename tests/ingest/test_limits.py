"""Header handling in linear time, and the shape limits of delimited files: each ends the
attempt FAILED with a message naming its setting."""

from __future__ import annotations

import time

from datawell.ingest.batches import column_names
from datawell.services import Services
from tests.conftest import Account
from tests.ingest.support import attempt, create_dataset, drain, rows_of, upload


def test_renaming_repeated_header_names_is_linear() -> None:
    started = time.perf_counter()
    names = column_names(["a"] * 100_000)
    assert time.perf_counter() - started < 2  # the quadratic-or-worse renaming took minutes
    assert names[:3] == ["a", "a_2", "a_3"] and names[-1] == "a_100000"
    assert len(set(names)) == 100_000
    assert column_names(["a", "a_2", "a", "a"]) == ["a", "a_2", "a_3", "a_4"]


async def test_a_header_of_one_name_repeated_is_ingested_at_once(client, services: Services, alice: Account) -> None:
    await create_dataset(client, alice)
    header = ",".join(["order_id"] + ["a"] * 4000)
    ingestion_id = await upload(services, "alice", "wide.csv", f"{header}\n1{',x' * 4000}\n".encode())
    started = time.perf_counter()
    await drain(services)
    assert time.perf_counter() - started < 30
    done = await attempt(services, ingestion_id)
    assert done.status == "SUCCEEDED", done.status_message
    assert [r["order_id"] for r in await rows_of(services, "alice")] == [1]


async def failed_message(services: Services, name: str, data: bytes) -> str:
    ingestion_id = await upload(services, "alice", name, data)
    await drain(services)
    failed = await attempt(services, ingestion_id)
    assert failed.status == "FAILED"
    assert await rows_of(services, "alice") == []
    return failed.status_message


async def test_too_many_columns_fail_naming_the_setting(client, services: Services, alice: Account) -> None:
    await create_dataset(client, alice)
    services.settings.ingest_max_columns = 50
    message = await failed_message(services, "w.csv", (",".join(f"c{i}" for i in range(51)) + "\n").encode())
    assert message.startswith("the file has 51 columns, more than the 50 a file may have")
    assert "DATAWELL_INGEST_MAX_COLUMNS" in message


async def test_a_too_long_header_fails_naming_the_setting(client, services: Services, alice: Account) -> None:
    await create_dataset(client, alice)
    services.settings.ingest_max_header_chars = 100
    message = await failed_message(services, "h.csv", b"order_id," + b"x" * 200 + b"\n1,2\n")
    assert message.startswith("the header line is longer than 100 characters")
    assert "DATAWELL_INGEST_MAX_HEADER_CHARS" in message


async def test_a_too_long_field_fails_with_its_line(client, services: Services, alice: Account) -> None:
    await create_dataset(client, alice)
    services.settings.ingest_max_field_chars = 1000
    data = b"order_id,customer\n1,Ada\n2," + b"y" * 1001 + b"\n"
    message = await failed_message(services, "f.csv", data)
    assert message.startswith("line 3: a field is longer than 1,000 characters")
    assert "DATAWELL_INGEST_MAX_FIELD_CHARS" in message
