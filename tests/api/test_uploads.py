"""Multipart uploads as a client sees them, against the local object store (parts go through
the service) and against S3 (moto on loopback; parts go straight to its presigned URLs)."""

from __future__ import annotations

import asyncio
import hashlib
import time
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path
from urllib.parse import parse_qsl, urlencode, urlsplit

import boto3
import httpx
import pytest
from sqlalchemy import select

from datawell.config import Settings
from datawell.ingest.worker import running_worker
from datawell.services import Services
from datawell.storage.access import Permission, set_grant
from datawell.storage.objects import LocalObjectStore
from datawell.storage.tables import Ingestion, Upload, utcnow
from datawell.storage.uploads import ABANDONED_AFTER, COMPLETING_LEASE, sweep_abandoned, sweep_closed_parts
from tests.conftest import Account

PART = 8388608
MAX_SIZE = PART * 10000
ORDERS = {"dataDescription": "Orders", "schemaDefinition": {"order_id": "Order number", "total": "Amount"}}
BASE = "/api/v1/upload/multipart/alice/sales/orders"


@pytest.fixture(params=["local", "s3"])
def backend(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture
def settings(settings: Settings, backend: str, request: pytest.FixtureRequest) -> Settings:
    if backend == "local":
        return settings
    return settings.model_copy(
        update={
            "object_store": "s3",
            "s3_endpoint_url": request.getfixturevalue("moto_endpoint"),
            "s3_bucket": request.getfixturevalue("s3_bucket"),
        }
    )


@pytest.fixture
async def outside() -> AsyncIterator[httpx.AsyncClient]:
    """A plain HTTP client for presigned S3 URLs (no bearer token, no proxies)."""
    async with httpx.AsyncClient(trust_env=False, timeout=60) as http:
        yield http


@pytest.fixture
async def orders(client: httpx.AsyncClient, alice: Account) -> None:
    response = await client.post("/api/v1/ingest/new/sales/orders", json=ORDERS, headers=alice.headers)
    assert response.status_code == 201


def content(size: int) -> bytes:
    """Distinct bytes in every part, so a misplaced part changes the result."""
    block = hashlib.sha256(str(size).encode()).digest() * 4096
    return (block * (size // len(block) + 1))[:size]


async def prepare(client: httpx.AsyncClient, account: Account, size: int, filename: str = "orders.csv", base=BASE):
    return await client.post(f"{base}/prepare", json={"filename": filename, "size": size}, headers=account.headers)


async def put(client: httpx.AsyncClient, outside: httpx.AsyncClient, url: str, data: bytes) -> httpx.Response:
    """PUT to a part URL with no bearer token: through the app for local URLs, over loopback to moto for S3."""
    http = client if url.startswith(str(client.base_url)) else outside
    return await http.put(url, content=data)


async def send_all(client, outside, prepared: dict, data: bytes, numbers=None) -> list[dict]:
    parts, offset = [], 0
    for number, item in enumerate(prepared["presignedUrls"], start=1):
        chunk = data[offset : offset + item["size"]]
        offset += item["size"]
        if numbers is not None and number not in numbers:
            continue
        response = await put(client, outside, item["url"], chunk)
        assert response.status_code == 200, response.text
        parts.append({"partNumber": number, "etag": response.headers["etag"]})
    return parts


async def upload_row(services: Services, upload_id: str) -> Upload:
    async with services.db.session() as session:
        upload = await session.get(Upload, upload_id)
        assert upload is not None
        return upload


async def parts_left(services: Services, key: str, upload_id: str) -> int | None:
    """Parts the store still holds for the upload; None when it holds no such upload at all."""
    store = services.objects
    if isinstance(store, LocalObjectStore):
        folder = store.upload_dir(upload_id)
        return len(list(folder.iterdir())) if folder.exists() else None
    s3 = boto3.client("s3", endpoint_url=services.settings.s3_endpoint_url, region_name="us-east-1")
    listing = s3.list_multipart_uploads(Bucket=services.settings.s3_bucket)
    if not any(u["UploadId"] == upload_id for u in listing.get("Uploads", [])):
        return None
    return len(s3.list_parts(Bucket=services.settings.s3_bucket, Key=key, UploadId=upload_id).get("Parts", []))


async def test_three_part_upload_end_to_end(
    client, outside, services: Services, alice: Account, orders, tmp_path: Path
) -> None:
    size = 2 * PART + 12345
    data = content(size)
    response = await prepare(client, alice, size)
    assert response.status_code == 200, response.text
    prepared = response.json()
    assert prepared["partSize"] == PART
    assert prepared["key"].endswith("/orders.csv")
    assert [p["size"] for p in prepared["presignedUrls"]] == [PART, PART, 12345]
    for number, item in enumerate(prepared["presignedUrls"], start=1):
        query = dict(parse_qsl(urlsplit(item["url"]).query))
        assert query["partNumber"] == str(number)
        assert query["uploadId"] == prepared["uploadId"]

    parts = await send_all(client, outside, prepared, data)
    assert parts[0]["etag"].strip('"') == hashlib.md5(data[:PART]).hexdigest()
    assert await parts_left(services, prepared["key"], prepared["uploadId"]) == 3

    body = {"uploadId": prepared["uploadId"], "key": prepared["key"], "parts": parts}
    done = await client.post(f"{BASE}/complete", json=body, headers=alice.headers)
    assert done.status_code == 202, done.text
    result = done.json()
    assert result == {"id": result["id"], "uploadId": prepared["uploadId"], "key": prepared["key"], "status": "QUEUED"}

    await services.objects.download(prepared["key"], tmp_path / "assembled")
    assert (tmp_path / "assembled").read_bytes() == data
    assert await parts_left(services, prepared["key"], prepared["uploadId"]) is None
    assert (await upload_row(services, prepared["uploadId"])).status == "COMPLETED"
    async with services.db.session() as session:
        [ingestion] = (await session.execute(select(Ingestion))).scalars().all()
    assert ingestion.id == result["id"]
    assert ingestion.status == "QUEUED"
    assert ingestion.object_key == prepared["key"]
    assert ingestion.name == "orders.csv"
    assert ingestion.expected_total_bytes == size

    again = await client.post(f"{BASE}/complete", json=body, headers=alice.headers)
    assert again.status_code == 409
    assert "completed" in again.json()["message"]


async def test_complete_without_parts_uses_what_was_stored(client, outside, services, alice, orders) -> None:
    prepared = (await prepare(client, alice, 5, filename="tiny data.csv")).json()
    assert prepared["key"].endswith("/tiny_data.csv")
    assert len(prepared["presignedUrls"]) == 1
    await send_all(client, outside, prepared, b"a,b\n1")
    body = {"uploadId": prepared["uploadId"], "key": prepared["key"]}
    done = await client.post(f"{BASE}/complete", json=body, headers=alice.headers)
    assert done.status_code == 202, done.text
    assert await services.objects.size(prepared["key"]) == 5


async def test_abort_deletes_every_part(client, outside, services: Services, alice: Account, orders) -> None:
    size = PART + 10
    prepared = (await prepare(client, alice, size)).json()
    await send_all(client, outside, prepared, content(size))
    assert await parts_left(services, prepared["key"], prepared["uploadId"]) == 2

    body = {"uploadId": prepared["uploadId"], "key": prepared["key"]}
    response = await client.post(f"{BASE}/abort", json=body, headers=alice.headers)
    assert response.status_code == 200, response.text
    assert response.json() == {**body, "status": "ABORTED"}
    assert await parts_left(services, prepared["key"], prepared["uploadId"]) is None
    assert (await upload_row(services, prepared["uploadId"])).status == "ABORTED"

    for action in ("abort", "complete"):
        refused = await client.post(f"{BASE}/{action}", json=body, headers=alice.headers)
        assert refused.status_code == 409
        assert refused.json()["message"] == f"upload {prepared['uploadId']} is aborted, not open"


async def test_complete_with_missing_parts_names_them(client, outside, services, alice, orders) -> None:
    size = 3 * PART + 1
    data = content(size)
    prepared = (await prepare(client, alice, size)).json()
    await send_all(client, outside, prepared, data, numbers={1, 4})
    body = {"uploadId": prepared["uploadId"], "key": prepared["key"]}
    response = await client.post(f"{BASE}/complete", json=body, headers=alice.headers)
    assert response.status_code == 422
    error = response.json()
    assert error["message"] == "the upload is incomplete: part(s) 2-3 of 4 are missing"
    assert [s["message"] for s in error["sub_errors"]] == [
        f"part 2: not uploaded ({PART} bytes expected)",
        f"part 3: not uploaded ({PART} bytes expected)",
    ]
    assert (await upload_row(services, prepared["uploadId"])).status == "OPEN"

    # The upload stays open: send what was missing and complete.
    await send_all(client, outside, prepared, data, numbers={2, 3})
    done = await client.post(f"{BASE}/complete", json=body, headers=alice.headers)
    assert done.status_code == 202, done.text
    assert await services.objects.size(prepared["key"]) == size


async def test_complete_checks_the_etags_it_is_given(client, outside, alice, orders) -> None:
    prepared = (await prepare(client, alice, 4)).json()
    await send_all(client, outside, prepared, b"abcd")
    parts = [{"partNumber": 1, "etag": '"0123"'}, {"partNumber": 2, "etag": "x"}]
    body = {"uploadId": prepared["uploadId"], "key": prepared["key"], "parts": parts}
    response = await client.post(f"{BASE}/complete", json=body, headers=alice.headers)
    assert response.status_code == 422
    codes = [s["code"] for s in response.json()["sub_errors"]]
    assert codes == ["unknown_part", "etag_mismatch"]


async def test_the_largest_file_is_10000_parts(client, alice: Account, orders, backend: str) -> None:
    too_large = await prepare(client, alice, MAX_SIZE + 1)
    assert too_large.status_code == 422
    assert str(MAX_SIZE) in too_large.json()["message"]
    assert too_large.json()["sub_errors"][0]["code"] == "too_large"
    if backend == "s3":
        return  # presigning 10000 S3 URLs takes seconds; the local store shows the count
    largest = await prepare(client, alice, MAX_SIZE)
    assert largest.status_code == 200
    urls = largest.json()["presignedUrls"]
    assert len(urls) == 10000
    assert {u["size"] for u in urls} == {PART}


async def test_prepare_validates_its_body(client, alice: Account, orders) -> None:
    response = await client.post(f"{BASE}/prepare", json={"filename": "", "size": 0}, headers=alice.headers)
    assert response.status_code == 422
    assert sorted(s["message"].split(":")[0] for s in response.json()["sub_errors"]) == ["filename", "size"]


async def test_access_rules(client, services: Services, alice: Account, bob: Account, orders) -> None:
    assert (await client.post(f"{BASE}/prepare", json={"filename": "f", "size": 1})).status_code == 401
    assert (await prepare(client, bob, 10)).status_code == 403
    async with services.db.session() as session:
        await set_grant(session, "alice", "sales", "bob", Permission.READ)
    denied = await prepare(client, bob, 10)
    assert denied.status_code == 403
    assert denied.json()["error_code"] == "FORBIDDEN"
    async with services.db.session() as session:
        await set_grant(session, "alice", "sales", "bob", Permission.WRITE)
    assert (await prepare(client, bob, 10)).status_code == 200
    missing_dataset = await prepare(client, alice, 10, base="/api/v1/upload/multipart/alice/sales/nope")
    assert missing_dataset.status_code == 404
    missing_namespace = await prepare(client, alice, 10, base="/api/v1/upload/multipart/alice/nons/orders")
    assert missing_namespace.status_code == 404


async def test_abort_and_complete_need_write_access(client, alice: Account, bob: Account, orders) -> None:
    prepared = (await prepare(client, alice, 10)).json()
    body = {"uploadId": prepared["uploadId"], "key": prepared["key"]}
    for action in ("abort", "complete"):
        assert (await client.post(f"{BASE}/{action}", json=body, headers=bob.headers)).status_code == 403


async def test_unknown_upload_or_wrong_key_is_404(client, alice: Account, orders) -> None:
    other = await client.post("/api/v1/ingest/new/sales/customers", json=ORDERS, headers=alice.headers)
    assert other.status_code == 201
    prepared = (await prepare(client, alice, 10)).json()
    cases = [
        (BASE, {"uploadId": "nope", "key": prepared["key"]}),
        (BASE, {"uploadId": prepared["uploadId"], "key": prepared["key"] + "x"}),
        ("/api/v1/upload/multipart/alice/sales/customers", {"uploadId": prepared["uploadId"], "key": prepared["key"]}),
    ]
    for base, body in cases:
        for action in ("abort", "complete"):
            response = await client.post(f"{base}/{action}", json=body, headers=alice.headers)
            assert response.status_code == 404, (base, body, action)
            assert response.json()["error_code"] == "NOT_FOUND"


class TestS3:
    @pytest.fixture
    def backend(self) -> str:
        return "s3"

    async def test_a_part_of_the_wrong_size_is_caught_at_complete(self, client, outside, alice, orders) -> None:
        prepared = (await prepare(client, alice, 10)).json()
        # moto does not check signatures, so the signed Content-Length does not stop this part.
        assert (await put(client, outside, prepared["presignedUrls"][0]["url"], b"123")).status_code == 200
        body = {"uploadId": prepared["uploadId"], "key": prepared["key"]}
        response = await client.post(f"{BASE}/complete", json=body, headers=alice.headers)
        assert response.status_code == 422
        assert response.json()["sub_errors"][0]["message"] == "part 1: stored 3 bytes, expected 10 bytes"

    async def test_the_service_serves_no_part_urls(self, client, alice: Account, orders) -> None:
        response = await client.put("/api/v1/upload/parts?key=a", content=b"x")
        assert response.status_code == 404


class TestLocalPartUrls:
    """The part route of the local store: authenticated by signature only."""

    @pytest.fixture
    def backend(self) -> str:
        return "local"

    async def prepared(self, client, alice: Account, size: int = 10) -> dict:
        response = await prepare(client, alice, size)
        assert response.status_code == 200
        return response.json()

    async def test_no_bearer_token_is_needed(self, client, services, alice, orders) -> None:
        prepared = await self.prepared(client, alice)
        response = await client.put(prepared["presignedUrls"][0]["url"], content=b"0123456789")
        assert response.status_code == 200
        assert response.headers["etag"] == f'"{hashlib.md5(b"0123456789").hexdigest()}"'
        assert response.json() == {"partNumber": 1, "size": 10, "etag": response.headers["etag"]}
        assert await parts_left(services, prepared["key"], prepared["uploadId"]) == 1

    @pytest.mark.parametrize(
        ("field", "value"), [("signature", "0" * 64), ("size", "11"), ("partNumber", "2"), ("expires", "99999999999")]
    )
    async def test_a_forged_url_is_403_and_stores_nothing(self, client, services, alice, orders, field, value) -> None:
        prepared = await self.prepared(client, alice)
        url = prepared["presignedUrls"][0]["url"]
        query = {**dict(parse_qsl(urlsplit(url).query)), field: value}
        forged = url.split("?")[0] + "?" + urlencode(query)
        body = b"0" * int(query["size"])
        response = await client.put(forged, content=body)
        assert response.status_code == 403
        assert response.json()["error_code"] == "FORBIDDEN"
        assert "signature does not match" in response.json()["message"]
        assert await parts_left(services, prepared["key"], prepared["uploadId"]) == 0

    async def test_an_expired_url_is_403_and_stores_nothing(self, client, services, alice, orders) -> None:
        prepared = await self.prepared(client, alice)
        store = services.objects
        assert isinstance(store, LocalObjectStore)
        store.clock = lambda: time.time() + services.settings.presign_ttl_seconds + 5
        response = await client.put(prepared["presignedUrls"][0]["url"], content=b"0123456789")
        assert response.status_code == 403
        assert "expired" in response.json()["message"]
        assert await parts_left(services, prepared["key"], prepared["uploadId"]) == 0

    async def test_a_url_without_its_signature_is_403(self, client, alice, orders) -> None:
        response = await client.put("/api/v1/upload/parts?key=a&uploadId=b&partNumber=1", content=b"x")
        assert response.status_code == 403
        assert "not a signed part URL" in response.json()["message"]

    @pytest.mark.parametrize("body", [b"", b"012345678", b"0123456789A"])
    async def test_a_body_of_the_wrong_size_is_422_and_stores_nothing(self, client, services, alice, orders, body):
        prepared = await self.prepared(client, alice)
        response = await client.put(prepared["presignedUrls"][0]["url"], content=body)
        assert response.status_code == 422
        assert response.json()["sub_errors"][0]["code"] == "wrong_part_size"
        assert "exactly 10 bytes" in response.json()["message"]
        assert await parts_left(services, prepared["key"], prepared["uploadId"]) == 0

    async def test_a_streamed_body_of_the_wrong_size_is_422(self, client, services, alice, orders) -> None:
        prepared = await self.prepared(client, alice)

        async def stream() -> AsyncIterator[bytes]:  # no Content-Length: the size is counted
            for _ in range(4):
                yield b"abc"

        response = await client.put(prepared["presignedUrls"][0]["url"], content=stream())
        assert response.status_code == 422
        assert await parts_left(services, prepared["key"], prepared["uploadId"]) == 0

    async def test_a_part_for_a_closed_upload_is_409(self, client, services, alice, orders) -> None:
        prepared = await self.prepared(client, alice)
        body = {"uploadId": prepared["uploadId"], "key": prepared["key"]}
        assert (await client.post(f"{BASE}/abort", json=body, headers=alice.headers)).status_code == 200
        response = await client.put(prepared["presignedUrls"][0]["url"], content=b"0123456789")
        assert response.status_code == 409
        assert await parts_left(services, prepared["key"], prepared["uploadId"]) is None


async def test_openapi_documents_the_upload_routes(client) -> None:
    paths = (await client.get("/api/v1/openapi.json")).json()["paths"]
    for action in ("prepare", "abort", "complete"):
        assert "post" in paths[f"/api/v1/upload/multipart/{{username}}/{{namespace}}/{{datasetName}}/{action}"]
    assert paths["/api/v1/upload/parts"]["put"]["security"] == []


async def set_upload(services: Services, upload_id: str, **values) -> None:
    async with services.db.session() as session:
        upload = await session.get(Upload, upload_id)
        assert upload is not None
        for name, value in values.items():
            setattr(upload, name, value)


async def queued(services: Services) -> list[Ingestion]:
    async with services.db.session() as session:
        return list((await session.execute(select(Ingestion))).scalars())


class TestACompletionThatDied:
    """The process answering complete died after claiming the upload: the client got no
    answer and the upload was left COMPLETING. Once the lease has passed, complete again works."""

    async def test_before_assembling_the_parts(self, client, outside, services, alice, orders, tmp_path) -> None:
        size = PART + 7
        data = content(size)
        prepared = (await prepare(client, alice, size)).json()
        await send_all(client, outside, prepared, data)
        await set_upload(services, prepared["uploadId"], status="COMPLETING", status_changed_at=utcnow())
        body = {"uploadId": prepared["uploadId"], "key": prepared["key"]}

        busy = await client.post(f"{BASE}/complete", json=body, headers=alice.headers)
        assert busy.status_code == 409
        assert "is being completed since" in busy.json()["message"]
        assert "complete again after" in busy.json()["message"]

        await set_upload(services, prepared["uploadId"], status_changed_at=utcnow() - COMPLETING_LEASE)
        done = await client.post(f"{BASE}/complete", json=body, headers=alice.headers)
        assert done.status_code == 202, done.text
        await services.objects.download(prepared["key"], tmp_path / "assembled")
        assert (tmp_path / "assembled").read_bytes() == data
        assert [i.id for i in await queued(services)] == [done.json()["id"]]
        assert (await upload_row(services, prepared["uploadId"])).status == "COMPLETED"

    async def test_after_assembling_the_parts(self, client, outside, services, alice, orders, tmp_path) -> None:
        size = PART + 7
        data = content(size)
        prepared = (await prepare(client, alice, size)).json()
        await send_all(client, outside, prepared, data)
        key, upload_id = prepared["key"], prepared["uploadId"]
        stored = await services.objects.stored_parts(key, upload_id)
        await services.objects.complete_multipart(key, upload_id, [stored[1], stored[2]])
        await set_upload(services, upload_id, status="COMPLETING", status_changed_at=utcnow() - COMPLETING_LEASE)

        done = await client.post(f"{BASE}/complete", json={"uploadId": upload_id, "key": key}, headers=alice.headers)
        assert done.status_code == 202, done.text
        await services.objects.download(key, tmp_path / "assembled")
        assert (tmp_path / "assembled").read_bytes() == data
        assert [i.id for i in await queued(services)] == [done.json()["id"]]
        assert await parts_left(services, key, upload_id) is None


async def test_abandoned_uploads_are_swept(client, outside, services: Services, alice: Account, orders) -> None:
    old = (await prepare(client, alice, 10)).json()
    fresh = (await prepare(client, alice, 10)).json()
    for prepared in (old, fresh):
        await send_all(client, outside, prepared, b"0123456789")
    await set_upload(services, old["uploadId"], expires_at=utcnow() - ABANDONED_AFTER - timedelta(minutes=1))

    assert await sweep_abandoned(services.db, services.objects) == 1
    assert (await upload_row(services, old["uploadId"])).status == "ABORTED"
    assert await parts_left(services, old["key"], old["uploadId"]) is None
    assert (await upload_row(services, fresh["uploadId"])).status == "OPEN"
    assert await parts_left(services, fresh["key"], fresh["uploadId"]) == 1
    assert await sweep_abandoned(services.db, services.objects) == 0


async def test_a_running_worker_sweeps(client, outside, services: Services, alice: Account, orders) -> None:
    old = (await prepare(client, alice, 10)).json()
    await send_all(client, outside, old, b"0123456789")
    await set_upload(services, old["uploadId"], expires_at=utcnow() - ABANDONED_AFTER - timedelta(minutes=1))
    async with running_worker(services):
        for _ in range(100):
            # Aborted is committed before the parts are deleted: stopping the worker between
            # the two puts the upload back to open, so wait for both.
            aborted = (await upload_row(services, old["uploadId"])).status == "ABORTED"
            if aborted and await parts_left(services, old["key"], old["uploadId"]) is None:
                break
            await asyncio.sleep(0.1)
    assert (await upload_row(services, old["uploadId"])).status == "ABORTED"
    assert await parts_left(services, old["key"], old["uploadId"]) is None


async def test_parts_left_behind_by_a_closed_upload_are_swept(
    client, outside, services: Services, alice: Account, orders
) -> None:
    """A part PUT still in flight when its upload was aborted can land after the abort
    deleted the parts; here the abort's deletion is skipped to leave such a part."""
    closed = (await prepare(client, alice, 10)).json()
    still_open = (await prepare(client, alice, 10)).json()
    for prepared in (closed, still_open):
        await send_all(client, outside, prepared, b"0123456789")
    await set_upload(services, closed["uploadId"], status="ABORTED")

    assert await sweep_closed_parts(services.db, services.objects) == 1
    assert await parts_left(services, closed["key"], closed["uploadId"]) is None
    assert await parts_left(services, still_open["key"], still_open["uploadId"]) == 1
    assert await sweep_closed_parts(services.db, services.objects) == 0


async def test_a_client_leaving_mid_part_is_no_service_error(
    client, service, services: Services, alice: Account, orders, backend, caplog: pytest.LogCaptureFixture
) -> None:
    if backend == "s3":
        return  # S3 serves its part URLs itself
    prepared = (await prepare(client, alice, 10)).json()
    target = urlsplit(prepared["presignedUrls"][0]["url"])
    messages = [
        {"type": "http.request", "body": b"01234", "more_body": True},
        {"type": "http.disconnect"},
    ]
    sent: list[dict] = []

    async def receive() -> dict:
        return messages.pop(0) if messages else {"type": "http.disconnect"}

    async def send(message: dict) -> None:
        sent.append(message)

    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "PUT",
        "scheme": "http",
        "path": target.path,
        "raw_path": target.path.encode(),
        "query_string": target.query.encode(),
        "headers": [(b"host", b"testserver"), (b"content-length", b"10")],
        "client": ("127.0.0.1", 1),
        "server": ("testserver", 80),
    }
    await service.asgi(scope, receive, send)
    assert not [r for r in caplog.records if r.levelname in ("ERROR", "CRITICAL")]
    assert await parts_left(services, prepared["key"], prepared["uploadId"]) == 0
