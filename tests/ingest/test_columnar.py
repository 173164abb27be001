"""Parquet and JSON Lines through the columnar path give exactly the rows, types and errors
of the row path (which reads every file the columnar path cannot vouch for)."""

from __future__ import annotations

import io
import json
from datetime import date, datetime, timedelta, timezone
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from datawell.ingest import columnar, pipeline, staging
from datawell.services import Services
from tests.conftest import Account
from tests.ingest.support import attempt, create_dataset, dataset_ref, drain, rows_of, upload

SCHEMA = {
    "dataDescription": "Readings",
    "schemaDefinition": {
        "n": "a number",
        "x": "a real",
        "ok": "a flag",
        "at": "a time",
        "day": "a day",
        "label": "a label",
        "tag": "a tag",
        "extra": "anything",
    },
}


def parquet(table: pa.Table) -> bytes:
    buffer = io.BytesIO()
    pq.write_table(table, buffer, row_group_size=2)
    return buffer.getvalue()


PARQUET = parquet(
    pa.table(
        {
            "n": pa.array([1, None, 3, -4], pa.int32()),
            "x": [1.5, 2.0, None, -0.25],
            "ok": [True, False, None, True],
            "at": pa.array(
                [datetime(2024, 3, 1, 12, tzinfo=timezone(timedelta(hours=2))), None, None, datetime(2024, 1, 1)],
                pa.timestamp("ms", "Europe/Paris"),
            ),
            "day": [date(2024, 2, 29), None, date(1999, 12, 31), date(2000, 1, 1)],
            "label": pa.array(["a", "b", "", "a"]).dictionary_encode(),
            "tag": ["007", " 12 ", None, "x"],
            "extra": [Decimal("1.10"), Decimal("2.00"), None, Decimal("3.5")],
        }
    )
)
JSONL = (
    "\n".join(
        json.dumps(record)
        for record in [
            {"n": 1, "x": 1, "ok": True, "at": "2024-03-01T12:00:00+02:00", "day": "2024-02-29", "label": "a"},
            {"n": 2, "x": 2.5, "ok": False, "at": None, "label": "", "tag": "007", "extra": 1e5},
            {"n": -3, "x": -0.25, "ok": None, "at": "2024-01-01", "day": "1999-12-31", "label": "é\u2028", "tag": "x"},
        ]
    )
    + "\n\n"
).encode()


async def ingest(services: Services, name: str, filename: str, data: bytes) -> Any:
    ingestion_id = await upload(services, "alice", filename, data, dataset=name)
    assert await drain(services) == [ingestion_id]
    return await attempt(services, ingestion_id)


async def fields_and_types(services: Services, name: str) -> tuple[list[dict[str, Any]], dict[str, str]]:
    rows = [{k: v for k, v in row.items() if not k.startswith("__")} for row in await rows_of(services, "alice", name)]
    return rows, (await dataset_ref(services, "alice", name)).record.field_types


@pytest.mark.parametrize(("filename", "data"), [("r.parquet", PARQUET), ("r.jsonl", JSONL)])
async def test_same_rows_and_types_as_the_row_path(
    client,
    services: Services,
    alice: Account,
    row_reads: list[str],
    monkeypatch: pytest.MonkeyPatch,
    filename: str,
    data: bytes,
) -> None:
    await create_dataset(client, alice, "columnar", SCHEMA)
    await create_dataset(client, alice, "rows", SCHEMA)
    done = await ingest(services, "columnar", filename, data)
    assert done.status == "SUCCEEDED", done.status_message
    assert row_reads == []  # the columnar path took it
    monkeypatch.setattr(pipeline, "columnar", lambda table, mapped: None)
    assert (await ingest(services, "rows", filename, data)).status == "SUCCEEDED"
    assert await fields_and_types(services, "columnar") == await fields_and_types(services, "rows")
    # A second file into the typed dataset: converted to the stored types the same way too.
    monkeypatch.undo()
    assert (await ingest(services, "columnar", filename, data)).status == "SUCCEEDED"
    monkeypatch.setattr(pipeline, "columnar", lambda table, mapped: None)
    assert (await ingest(services, "rows", filename, data)).status == "SUCCEEDED"
    columnar_rows, types = await fields_and_types(services, "columnar")
    assert (columnar_rows, types) == await fields_and_types(services, "rows")
    assert len(columnar_rows) == 2 * (4 if filename.endswith("parquet") else 3)
    assert types["n"] == "integer" and types["ok"] == "boolean" and types["at"] == "timestamp"


async def test_nested_json_lines_fall_back_to_the_row_path_and_its_limits(
    client, services: Services, alice: Account, row_reads: list[str]
) -> None:
    await create_dataset(client, alice, "readings", SCHEMA)
    data = b'{"n": 1, "extra": {"a": [1, 2]}}\n{"n": 2, "extra": null}\n'
    done = await ingest(services, "readings", "r.jsonl", data)
    assert done.status == "SUCCEEDED", done.status_message
    assert row_reads == [done.id]
    rows, _ = await fields_and_types(services, "readings")
    assert [r["extra"] for r in rows] == ['{"a": [1, 2]}', None]
    deep = b'{"n": 1, "extra": ' + b"[" * 100 + b"]" * 100 + b"}\n"
    failed = await ingest(services, "readings", "deep.jsonl", deep)
    assert failed.status == "FAILED"
    assert "nest" in failed.status_message and "DATAWELL_INGEST_MAX_JSON_DEPTH" in failed.status_message


@pytest.mark.parametrize(
    ("filename", "bad", "message"),
    [
        (
            "bad.parquet",
            parquet(pa.table({"n": [1, 2], "ok": ["yes", "maybe"]})),
            "row 2: field 'ok' expects true/false (or yes/no), got 'maybe'",
        ),
        ("bad.jsonl", b'{"n": 1}\n{"n": 2.5}\n', "line 2: field 'n' expects a whole number, got '2.5'"),
        ("broken.jsonl", b'{"n": 1}\n{"n": 2,\n', "line 2: not valid JSON"),
        ("broken.parquet", PARQUET[: len(PARQUET) // 2], "the file is not a readable Parquet file"),
    ],
)
async def test_bad_files_end_with_the_row_paths_message(
    client, services: Services, alice: Account, filename: str, bad: bytes, message: str
) -> None:
    await create_dataset(client, alice, "readings", SCHEMA)
    first = await ingest(services, "readings", "good.parquet", parquet(pa.table({"n": [1], "ok": [True]})))
    assert first.status == "SUCCEEDED", first.status_message
    done = await ingest(services, "readings", filename, bad)
    assert done.status == "FAILED"
    assert message in done.status_message
    assert "Traceback" not in done.status_message


async def test_types_that_change_after_the_first_batch_are_written_again_from_the_spool(
    client, services: Services, alice: Account, row_reads: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A first ingestion writes on the types its first batch suggests while it infers the
    rest; when a later batch changes them (integer → real, empty → integer, integer → text)
    the stage is written again with the final types: the same rows as the row path, no
    duplicates."""
    services.settings.ingest_batch_rows = 2
    rewrites: list[str] = []
    write_typed = staging.Staging.write_typed

    async def spy(self: staging.Staging, batches: Any) -> int:
        rewrites.append(self.attempt_id)
        return await write_typed(self, batches)

    monkeypatch.setattr(staging.Staging, "write_typed", spy)
    data = b"n,x,tag,label\n1,,1,a\n2,,2,b\n2.5,7,x,c\n4,8,3,d\n5,,4,e\n"
    await create_dataset(client, alice, "columnar", SCHEMA)
    await create_dataset(client, alice, "rows", SCHEMA)
    done = await ingest(services, "columnar", "r.csv", data)
    assert done.status == "SUCCEEDED", done.status_message
    assert row_reads == [] and rewrites == [done.id]
    monkeypatch.setattr(pipeline, "columnar", lambda table, mapped: None)
    assert (await ingest(services, "rows", "r.csv", data)).status == "SUCCEEDED"
    rows, types = await fields_and_types(services, "columnar")
    assert (rows, types) == await fields_and_types(services, "rows")
    assert [r["n"] for r in rows] == [1.0, 2.0, 2.5, 4.0, 5.0]
    assert (types["n"], types["x"], types["tag"]) == ("real", "integer", "text")


def test_blocks_are_regrouped_into_batches_the_first_as_it_comes() -> None:
    """The first block is typed and written at once (its first rows cut off), later ones wait
    until a batch is full; no row is lost, doubled or moved."""
    from datawell.ingest.columnar import first_small, regrouped

    def block(first: int, rows: int) -> tuple[pa.RecordBatch, int]:
        return pa.RecordBatch.from_pydict({"n": list(range(first, first + rows))}), first + rows

    blocks = [block(0, 3), block(3, 4), block(7, 5), block(12, 1)]
    batches = list(first_small(regrouped(iter(blocks), 5), 2))
    assert [b.num_rows for b, _ in batches] == [2, 1, 5, 5]
    assert [n for b, _ in batches for n in b.column("n").to_pylist()] == list(range(13))
    assert [position for _, position in batches] == [3, 3, 12, 13]


async def test_a_csv_of_several_blocks_goes_to_the_started_writer_process(
    client, services: Services, alice: Account, row_reads: list[str]
) -> None:
    """A CSV of a few MB whose `n` is empty for its first block and integers after: parsed in
    blocks, staged by the writer process the worker started (SQLite), rewritten from the spool
    when the later blocks change `n`'s type, every row once and in order."""
    services.settings.ingest_embed_rows = False  # the rows' vectors are another test's
    started = services.rows.prepare_writer()
    lines = [f"{'' if i < 20_000 else i},{i / 4},label {i} of the file" for i in range(60_000)]
    data = ("n,x,label\n" + "\n".join(lines) + "\n").encode()
    assert len(data) > 2 * columnar.CSV_BLOCK_BYTES
    await create_dataset(client, alice, "blocks", SCHEMA)
    done = await ingest(services, "blocks", "r.csv", data)
    assert done.status == "SUCCEEDED", done.status_message
    assert row_reads == []
    rows, types = await fields_and_types(services, "blocks")
    assert (types["n"], types["x"], types["label"]) == ("integer", "real", "text")
    assert len(rows) == 60_000
    assert [r["label"] for r in rows] == [f"label {i} of the file" for i in range(60_000)]
    assert rows[19_999]["n"] is None and rows[20_000]["n"] == 20_000
    if started is not None:  # SQLite: the started process wrote the stage and is free again
        assert services.rows.writer_process is started and started.ready
