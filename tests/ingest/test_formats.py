"""Every format, end to end: a file in the object store, a queued attempt, the worker, the rows."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest
from pydantic import BaseModel

from datawell.ingest.mapping import ColumnMapping, FieldSource
from datawell.llm.scripted import ScriptedChatModel
from datawell.services import Services
from datawell.storage.vectors import ROWS
from tests.conftest import Account
from tests.ingest.support import (
    attempt,
    create_dataset,
    dataset_ref,
    drain,
    parquet_bytes,
    pdf_bytes,
    rows_of,
    upload,
    xlsx_bytes,
)

EXPECTED = [
    {"order_id": 1, "customer": "Ada", "total": 12.5, "paid": True},
    {"order_id": 2, "customer": "Bob", "total": 3.0, "paid": False},
]


class ExtractedRecords(BaseModel):
    """What the model answers for a document passage (the pipeline asks for this class name)."""

    records: list[dict[str, Any]]


@pytest.fixture
def chat_model() -> ScriptedChatModel:
    return ScriptedChatModel([])


def without_internal(rows: list[dict[str, Any]], *fields: str) -> list[dict[str, Any]]:
    keys = fields or ("order_id", "customer", "total", "paid")
    return sorted(({k: r[k] for k in keys} for r in rows), key=lambda r: str(r[keys[0]]))


async def ingest_one(services: Services, filename: str, data: bytes) -> Any:
    ingestion_id = await upload(services, "alice", filename, data)
    assert await drain(services) == [ingestion_id]
    return await attempt(services, ingestion_id)


async def test_csv(client, services: Services, alice: Account) -> None:
    await create_dataset(client, alice)
    data = b"order_id,customer,total,paid,placed_at\n1,Ada,12.5,true,2024-03-01T10:00:00Z\n2,Bob,3,false,2024-03-02\n"
    done = await ingest_one(services, "orders.csv", data)
    assert done.status == "SUCCEEDED", done.status_message
    assert done.processed_rows == 2
    assert done.processed_bytes == len(data)
    assert done.status_message.startswith("ingested 2 rows from orders.csv")
    rows = await rows_of(services, "alice")
    assert without_internal(rows) == EXPECTED
    stamps = sorted(r["placed_at"].replace(tzinfo=r["placed_at"].tzinfo or UTC) for r in rows)
    assert stamps == [datetime(2024, 3, 1, 10, tzinfo=UTC), datetime(2024, 3, 2, tzinfo=UTC)]
    ref = await dataset_ref(services, "alice")
    assert ref.record.field_types == {
        "order_id": "integer",
        "customer": "text",
        "total": "real",
        "paid": "boolean",
        "placed_at": "timestamp",
    }
    assert done.mapping["method"] == "similarity"  # the empty script: the model failed, names matched


async def test_tsv_in_cp1252_with_other_column_names(client, services: Services, alice: Account) -> None:
    await create_dataset(client, alice)
    data = "Order ID\tCustomer Name\tTotal (EUR)\tPaid\nX-1\tMüller\t12,5\tyes\n".encode("cp1252")
    done = await ingest_one(services, "orders.tsv", data)
    assert done.status == "SUCCEEDED", done.status_message
    [row] = await rows_of(services, "alice")
    assert row["customer"] == "Müller"
    assert row["order_id"] == "X-1"
    assert row["total"] == 12.5  # a decimal comma: read as a number (ingest/values.py)
    assert row["paid"] is True
    assert done.mapping["fields"] == {
        "order_id": "Order ID",
        "customer": "Customer Name",
        "total": "Total (EUR)",
        "paid": "Paid",
        "placed_at": None,
    }


async def test_semicolon_csv_with_quotes_and_bom(client, services: Services, alice: Account) -> None:
    await create_dataset(client, alice)
    data = '\ufefforder_id;customer;total\n1;"Ada; Lovelace";"1.5"\n\n2;"Multi\nline";2\n'.encode()
    done = await ingest_one(services, "export.csv", data)
    assert done.status == "SUCCEEDED", done.status_message
    rows = await rows_of(services, "alice")
    assert without_internal(rows, "order_id", "customer", "total") == [
        {"order_id": 1, "customer": "Ada; Lovelace", "total": 1.5},
        {"order_id": 2, "customer": "Multi\nline", "total": 2.0},
    ]


async def test_json_array(client, services: Services, alice: Account) -> None:
    await create_dataset(client, alice)
    records = [
        {"order_id": 1, "customer": "Ada", "total": 12.5, "paid": True, "extra": {"a": 1}},
        {"order_id": 2, "customer": "Bob", "total": 3, "paid": False},
    ]
    done = await ingest_one(services, "orders.json", json.dumps(records, indent=2).encode())
    assert done.status == "SUCCEEDED", done.status_message
    assert without_internal(await rows_of(services, "alice")) == EXPECTED


async def test_json_lines(client, services: Services, alice: Account) -> None:
    await create_dataset(client, alice)
    lines = [
        {"order_id": 1, "customer": "Ada", "total": 12.5, "paid": True},
        {"order_id": 2, "customer": "Bob", "total": 3.0, "paid": False},
    ]
    data = ("\n".join(json.dumps(r) for r in lines) + "\n\n").encode()
    done = await ingest_one(services, "orders.jsonl", data)
    assert done.status == "SUCCEEDED", done.status_message
    assert without_internal(await rows_of(services, "alice")) == EXPECTED


async def test_parquet(client, services: Services, alice: Account) -> None:
    await create_dataset(client, alice)
    data = parquet_bytes(
        {
            "order_id": [1, 2],
            "customer": ["Ada", "Bob"],
            "total": [12.5, 3.0],
            "paid": [True, False],
            "placed_at": [datetime(2024, 3, 1, tzinfo=UTC), None],
        }
    )
    done = await ingest_one(services, "orders.parquet", data)
    assert done.status == "SUCCEEDED", done.status_message
    assert without_internal(await rows_of(services, "alice")) == EXPECTED
    ref = await dataset_ref(services, "alice")
    assert ref.record.field_types["total"] == "real"  # floats stay real even when whole
    assert ref.record.field_types["placed_at"] == "timestamp"


async def test_xlsx(client, services: Services, alice: Account) -> None:
    await create_dataset(client, alice)
    data = xlsx_bytes(
        [
            [],
            ["order_id", "customer", "total", "paid", "placed_at"],
            [1, "Ada", 12.5, True, datetime(2024, 3, 1, 10)],
            [None, None, None, None, None],
            [2, "Bob", 3.0, False, None],
        ]
    )
    done = await ingest_one(services, "orders.xlsx", data)
    assert done.status == "SUCCEEDED", done.status_message
    assert without_internal(await rows_of(services, "alice")) == EXPECTED


async def test_the_models_mapping_is_used_and_recorded(
    client, services: Services, alice: Account, chat_model: ScriptedChatModel
) -> None:
    await create_dataset(client, alice)
    chat_model.script.append(
        ColumnMapping(
            fields=[
                FieldSource(field="order_id", column="ref"),
                FieldSource(field="customer", column="who"),
                FieldSource(field="total", column="AMOUNT"),
                FieldSource(field="paid", column=None),
            ]
        )
    )
    done = await ingest_one(services, "odd.csv", b"ref,who,amount\n7,Ada,1.25\n")
    assert done.status == "SUCCEEDED", done.status_message
    assert done.mapping["method"] == "model"
    assert done.mapping["fields"] == {
        "order_id": "ref",
        "customer": "who",
        "total": "amount",
        "paid": None,
        "placed_at": None,
    }
    [row] = await rows_of(services, "alice")
    assert (row["order_id"], row["customer"], row["total"], row["paid"]) == (7, "Ada", 1.25, None)
    [prompt] = chat_model.prompts()
    assert "- who: Ada" in prompt and "order_id: Order number" in prompt


async def test_an_invalid_model_mapping_falls_back_to_names(
    client, services: Services, alice: Account, chat_model: ScriptedChatModel
) -> None:
    await create_dataset(client, alice)
    chat_model.script.append(ColumnMapping(fields=[FieldSource(field="order_id", column="no such column")]))
    done = await ingest_one(services, "orders.csv", b"order_id,customer\n1,Ada\n")
    assert done.status == "SUCCEEDED", done.status_message
    assert done.mapping["method"] == "similarity"
    assert "no column 'no such column'" in done.mapping["note"]
    assert done.mapping["fields"]["customer"] == "customer"


async def test_no_matching_column_fails_with_the_names(client, services: Services, alice: Account) -> None:
    await create_dataset(client, alice)
    done = await ingest_one(services, "other.csv", b"colour,weight\nred,3\n")
    assert done.status == "FAILED"
    assert "colour, weight" in done.status_message and "order_id" in done.status_message


async def test_text_is_extracted_by_the_model_per_chunk(
    client, services: Services, alice: Account, chat_model: ScriptedChatModel
) -> None:
    await create_dataset(client, alice)
    chat_model.script.append(
        ExtractedRecords(
            records=[
                {"order_id": 1, "customer": "Ada", "total": "12.5", "paid": True},
                {"order_id": "2", "customer": "Bob", "total": 3, "paid": "no"},
            ]
        )
    )
    text = b"Ada ordered on the 1st (order 1) for 12.50 EUR and paid.\n\nBob's order 2 came to 3 EUR, unpaid.\n"
    done = await ingest_one(services, "notes.txt", text)
    assert done.status == "SUCCEEDED", done.status_message
    assert without_internal(await rows_of(services, "alice")) == EXPECTED
    assert done.mapping == {"format": "text", "method": "extraction", "passages": 1, "records": 2}
    [prompt] = chat_model.prompts()
    assert "Bob's order 2 came to 3 EUR" in prompt and "line" in prompt


async def test_markdown(client, services: Services, alice: Account, chat_model: ScriptedChatModel) -> None:
    await create_dataset(client, alice)
    chat_model.script.append(ExtractedRecords(records=[{"order_id": 1, "customer": "Ada"}]))
    done = await ingest_one(services, "notes.md", b"# Orders\n\n* order 1 by **Ada**\n")
    assert done.status == "SUCCEEDED", done.status_message
    [row] = await rows_of(services, "alice")
    assert (row["order_id"], row["customer"]) == (1, "Ada")


async def test_pdf_pages(client, services: Services, alice: Account, chat_model: ScriptedChatModel) -> None:
    await create_dataset(client, alice)
    chat_model.script.append(ExtractedRecords(records=[{"order_id": 1, "customer": "Ada", "total": 12.5}]))
    done = await ingest_one(services, "invoice.pdf", pdf_bytes(["Invoice 1", "Customer: Ada", "Total 12.50 EUR"]))
    assert done.status == "SUCCEEDED", done.status_message
    [prompt] = chat_model.prompts()
    assert "pages 1-3" in prompt and "Customer: Ada" in prompt
    [row] = await rows_of(services, "alice")
    assert row["total"] == 12.5


async def test_extracted_values_that_do_not_fit_are_left_empty(
    client, services: Services, alice: Account, chat_model: ScriptedChatModel
) -> None:
    await create_dataset(client, alice)
    await ingest_one(services, "first.csv", b"order_id,total\n1,2.5\n")
    chat_model.script.append(ExtractedRecords(records=[{"order_id": "about five", "total": 4}]))
    done = await ingest_one(services, "notes.txt", b"about five orders, 4 EUR\n")
    assert done.status == "SUCCEEDED", done.status_message
    assert "1 extracted values did not fit" in done.status_message
    rows = await rows_of(services, "alice")
    assert sorted((r["order_id"] is None, r["total"]) for r in rows) == [(False, 2.5), (True, 4.0)]


async def test_a_model_failure_on_a_document_fails_the_attempt(client, services: Services, alice: Account) -> None:
    await create_dataset(client, alice)
    done = await ingest_one(services, "notes.txt", b"some text\n")
    assert done.status == "FAILED"
    assert done.status_message.startswith("line 1: the model could not extract records")
    assert await rows_of(services, "alice") == []


async def test_rows_text_is_embedded(client, services: Services, alice: Account) -> None:
    await create_dataset(client, alice)
    done = await ingest_one(services, "orders.csv", b"order_id,customer\n1,Ada Lovelace\n2,\n")
    assert done.status == "SUCCEEDED", done.status_message
    ref = await dataset_ref(services, "alice")
    assert await services.vectors.count(ROWS, ref.record.id) == 1  # the row with no text has no vector
    [query] = await services.embedder.embed(["Ada Lovelace"])
    [hit] = await services.vectors.search(ROWS, ref.record.id, query, limit=5)
    rows = {r["__id"]: r for r in await rows_of(services, "alice")}
    assert rows[hit.id]["customer"] == "Ada Lovelace"
    assert hit.payload == {"dataset_id": ref.record.id, "ingestion_id": done.id, "text": "customer: Ada Lovelace"}
