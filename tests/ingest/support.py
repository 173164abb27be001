"""Helpers for ingestion tests: datasets, uploaded files, running the worker, reading rows."""

from __future__ import annotations

import io
import uuid
from typing import Any

import httpx
import sqlalchemy as sa

from datawell.ingest.worker import Worker
from datawell.services import Services
from datawell.storage.access import find_namespace
from datawell.storage.datasets import DatasetRef, get_dataset
from datawell.storage.ingestions import enqueue
from datawell.storage.tables import Ingestion
from datawell.storage.users import find_user
from tests.conftest import Account

ORDERS = {
    "dataDescription": "Orders placed in the web shop",
    "schemaDefinition": {
        "order_id": "Order number",
        "customer": "Customer name",
        "total": "Amount in EUR",
        "paid": "Whether the order is paid",
        "placed_at": "When the order was placed",
    },
}


async def create_dataset(
    client: httpx.AsyncClient, account: Account, name: str = "orders", body: dict[str, Any] | None = None
) -> None:
    response = await client.post(f"/api/v1/ingest/new/sales/{name}", json=body or ORDERS, headers=account.headers)
    assert response.status_code == 201, response.text


async def dataset_ref(services: Services, owner: str, name: str = "orders") -> DatasetRef:
    async with services.db.session() as session:
        namespace = await find_namespace(session, owner, "sales")
        assert namespace is not None
        return await get_dataset(session, namespace, name)


async def upload(
    services: Services, owner: str, filename: str, data: bytes, dataset: str = "orders", *, put: bool = True
) -> str:
    """The file lands in the object store and a QUEUED attempt points at it (what an upload's
    `complete` does); returns the attempt's id."""
    key = f"uploads/{uuid.uuid4().hex}/{filename}"
    if put:
        await services.objects.put(key, data)
    async with services.db.session() as session:
        namespace = await find_namespace(session, owner, "sales")
        assert namespace is not None
        ref = await get_dataset(session, namespace, dataset)
        user = await find_user(session, owner)
        assert user is not None
        return (await enqueue(session, ref.record, key, filename, len(data), user)).id


async def drain(services: Services, name: str = "test-worker") -> list[str]:
    """Run every queued attempt to its end with one worker; their ids."""
    worker = Worker(services, name)
    done = []
    while (found := await worker.run_once()) is not None:
        done.append(found)
    return done


async def attempt(services: Services, ingestion_id: str) -> Ingestion:
    async with services.db.session() as session:
        return await session.get_one(Ingestion, ingestion_id)


async def rows_of(services: Services, owner: str, name: str = "orders") -> list[dict[str, Any]]:
    """The dataset's published rows, in the order they were read (by __source then insertion)."""
    ref = await dataset_ref(services, owner, name)
    table = services.rows.table(ref.record)
    async with services.rows.engine.connect() as connection:
        exists = await connection.run_sync(lambda c: sa.inspect(c).has_table(table.name))
        if not exists:
            return []
        result = await connection.execute(sa.select(table))
        return [dict(r) for r in result.mappings()]


def csv_bytes(text: str, encoding: str = "utf-8") -> bytes:
    return text.encode(encoding)


def xlsx_bytes(rows: list[list[Any]]) -> bytes:
    import openpyxl

    workbook = openpyxl.Workbook()
    sheet = workbook.active
    assert sheet is not None
    for row in rows:
        sheet.append(row)
    buffer = io.BytesIO()
    workbook.save(buffer)
    return buffer.getvalue()


def parquet_bytes(columns: dict[str, list[Any]]) -> bytes:
    import pyarrow as pa
    import pyarrow.parquet as pq

    buffer = io.BytesIO()
    pq.write_table(pa.table(columns), buffer)
    return buffer.getvalue()


def pdf_bytes(pages: list[str]) -> bytes:
    """A minimal valid PDF with one line of Helvetica text per page line."""
    objects: list[bytes] = []
    page_ids = [4 + 2 * i for i in range(len(pages))]
    objects.append(b"<< /Type /Catalog /Pages 2 0 R >>")
    kids = " ".join(f"{p} 0 R" for p in page_ids)
    objects.append(f"<< /Type /Pages /Kids [{kids}] /Count {len(pages)} >>".encode())
    objects.append(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    for i, text in enumerate(pages):
        lines = []
        for n, line in enumerate(text.splitlines()):
            escaped = line.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")
            lines.append(f"BT /F1 12 Tf 72 {750 - 16 * n} Td ({escaped}) Tj ET")
        stream = "\n".join(lines).encode("latin-1")
        objects.append(
            f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >> "
            f"/Contents {page_ids[i] + 1} 0 R >>".encode()
        )
        objects.append(b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream")
    out = io.BytesIO()
    out.write(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(out.tell())
        out.write(b"%d 0 obj\n" % number + body + b"\nendobj\n")
    xref = out.tell()
    out.write(b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1))
    for offset in offsets:
        out.write(b"%010d 00000 n \n" % offset)
    out.write(b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref))
    return out.getvalue()
