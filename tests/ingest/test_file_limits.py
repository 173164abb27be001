"""Files that would exhaust the worker fail at once with a message naming the limit and
its setting; an odd but valid encoding is read, not refused with a wrong reason."""

from __future__ import annotations

import io
import json
import zipfile

from datawell.llm.scripted import ScriptedChatModel
from datawell.services import Services
from tests.conftest import Account
from tests.ingest.support import attempt, create_dataset, drain, pdf_bytes, rows_of, upload, xlsx_bytes


async def ingest_one(services: Services, filename: str, data: bytes):  # type: ignore[no-untyped-def]
    ingestion_id = await upload(services, "alice", filename, data)
    assert await drain(services) == [ingestion_id]
    return await attempt(services, ingestion_id)


def zip_bomb_xlsx() -> bytes:
    """A valid workbook whose sheet unpacks to 20 MB from a few KB (one cell past Excel's own limit)."""
    workbook = zipfile.ZipFile(io.BytesIO(xlsx_bytes([["order_id", "customer"], [1, "placeholder"]])))
    packed = io.BytesIO()
    with zipfile.ZipFile(packed, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as bomb:
        for member in workbook.infolist():
            content = workbook.read(member).replace(b"placeholder", b"a" * 20_000_000)
            bomb.writestr(member.filename, content)
    with zipfile.ZipFile(packed) as archive:
        sizes = [(m.file_size, m.compress_size) for m in archive.infolist()]
    assert max(size / packed_size for size, packed_size in sizes) > 500
    return packed.getvalue()


async def test_a_zip_bomb_workbook_fails_before_it_is_unpacked(client, services: Services, alice: Account) -> None:
    await create_dataset(client, alice)
    done = await ingest_one(services, "bomb.xlsx", zip_bomb_xlsx())
    assert done.status == "FAILED"
    assert "times its packed size" in done.status_message
    assert "DATAWELL_INGEST_MAX_UNPACK_RATIO" in done.status_message
    assert await rows_of(services, "alice") == []


async def test_a_workbook_past_the_unpacked_size_fails(client, services: Services, alice: Account) -> None:
    await create_dataset(client, alice)
    services.settings.ingest_max_unpacked_bytes = 2000
    done = await ingest_one(services, "orders.xlsx", xlsx_bytes([["order_id"], [1]]))
    assert done.status == "FAILED"
    assert done.status_message.startswith("the workbook unpacks to ")
    assert "DATAWELL_INGEST_MAX_UNPACKED_BYTES" in done.status_message


async def test_json_nested_past_pythons_parser_fails_clearly(client, services: Services, alice: Account) -> None:
    await create_dataset(client, alice)
    deep = '[{"order_id": 1, "customer": ' + "[" * 1100 + "]" * 1100 + "}]"
    done = await ingest_one(services, "deep.json", deep.encode())
    assert done.status == "FAILED"
    assert "more than 64 levels deep (DATAWELL_INGEST_MAX_JSON_DEPTH)" in done.status_message
    assert "retry" not in done.status_message


async def test_json_lines_past_the_depth_limit_name_the_line(client, services: Services, alice: Account) -> None:
    await create_dataset(client, alice)
    services.settings.ingest_max_json_depth = 3
    shallow = {"order_id": 1, "customer": {"name": {"first": "Ada"}}}
    deep = {"order_id": 2, "customer": {"name": {"first": ["Bob"]}}}
    done = await ingest_one(services, "o.jsonl", f"{json.dumps(shallow)}\n{json.dumps(deep)}\n".encode())
    assert done.status == "FAILED"
    assert done.status_message.startswith("line 2: the JSON nests objects or arrays more than 3 levels deep")


async def test_utf16_without_a_bom_is_read(client, services: Services, alice: Account) -> None:
    await create_dataset(client, alice)
    text = "order_id,customer,total\n1,Åsa,2.5\n2,Bob,3\n"
    for number, encoding in enumerate(("utf-16-le", "utf-16-be")):
        done = await ingest_one(services, f"o{number}.csv", text.encode(encoding))
        assert done.status == "SUCCEEDED", done.status_message
    rows = await rows_of(services, "alice")
    assert sorted((r["order_id"], r["customer"]) for r in rows) == [(1, "Åsa"), (1, "Åsa"), (2, "Bob"), (2, "Bob")]


async def test_a_pdf_past_the_page_limit_fails_before_extraction(
    client, services: Services, alice: Account, chat_model: ScriptedChatModel
) -> None:
    await create_dataset(client, alice)
    services.settings.ingest_max_pdf_pages = 2
    done = await ingest_one(services, "long.pdf", pdf_bytes(["one", "two", "three"]))
    assert done.status == "FAILED"
    assert done.status_message.startswith("the PDF has 3 pages, more than the 2 one ingestion reads")
    assert chat_model.calls == []


async def test_a_document_past_the_character_limit_fails_before_the_model_sees_it(
    client, services: Services, alice: Account, chat_model: ScriptedChatModel
) -> None:
    await create_dataset(client, alice)
    services.settings.ingest_max_document_chars = 1000
    done = await ingest_one(services, "notes.txt", b"Ada ordered a book.\n" * 200)
    assert done.status == "FAILED"
    assert "more than 1,000 characters of text" in done.status_message
    assert "DATAWELL_INGEST_MAX_DOCUMENT_CHARS" in done.status_message
    assert chat_model.calls == []


async def test_the_model_sees_a_sample_of_a_wide_file(
    client, services: Services, alice: Account, chat_model: ScriptedChatModel
) -> None:
    await create_dataset(client, alice)
    columns = ["order_id", "customer"] + [f"extra_{i}_" + "x" * 300 for i in range(3000)]
    values = ["1", "Ada"] + ["v" * 1000] * 3000
    data = (",".join(columns) + "\n" + ",".join(values) + "\n").encode()
    assert len(data) > 3_000_000
    done = await ingest_one(services, "wide.csv", data)
    assert done.status == "SUCCEEDED", done.status_message
    [prompt] = chat_model.prompts()
    assert len(prompt) < services.settings.ingest_max_prompt_chars + 5000
    assert "- order_id: 1" in prompt and "more columns, not shown" in prompt


async def test_a_csv_with_a_nul_fails_naming_its_line(client, services: Services, alice: Account) -> None:
    """PostgreSQL keeps no NUL in text: the attempt used to end in "internal error"."""
    await create_dataset(client, alice)
    done = await ingest_one(services, "nul.csv", b"order_id,customer\n1,Ada\n2,B\x00b\n3,Cy\n")
    assert done.status == "FAILED"
    assert done.status_message.startswith("line 3: a field holds a NUL character")
