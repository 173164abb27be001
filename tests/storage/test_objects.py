"""The object store on its own: both backends keep and assemble objects the same way; the
local store's part URLs are refused when forged or expired."""

from __future__ import annotations

import hashlib
import time
import tracemalloc
from collections.abc import AsyncIterator
from pathlib import Path
from urllib.parse import parse_qsl, urlsplit

import httpx
import pytest

from datawell.errors import Conflict, Forbidden, InvalidInput, NotFound
from datawell.storage.objects import LocalObjectStore, ObjectStore, StoredPart
from datawell.storage.s3 import S3ObjectStore

PART = 5 * 1024 * 1024  # S3's smallest non-final part; the service itself uses 8 MiB


def local_store(tmp_path: Path) -> LocalObjectStore:
    return LocalObjectStore(tmp_path / "objects", signing_key=b"k" * 32, part_url_base="http://testserver/parts")


@pytest.fixture(params=["local", "s3"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> ObjectStore:
    if request.param == "local":
        return local_store(tmp_path)
    endpoint = request.getfixturevalue("moto_endpoint")
    return S3ObjectStore.connect(request.getfixturevalue("s3_bucket"), endpoint_url=endpoint, region="us-east-1")


async def chunks(data: bytes, size: int = 65536) -> AsyncIterator[bytes]:
    for start in range(0, len(data), size):
        yield data[start : start + size]


def query_of(url: str) -> dict[str, str]:
    return dict(parse_qsl(urlsplit(url).query))


async def send_part(store: ObjectStore, url: str, data: bytes) -> str:
    """PUT one part the way a client would: to the local store's handler or to the S3 URL."""
    if isinstance(store, LocalObjectStore):
        _, upload_id, number, size = store.verify_part_url(query_of(url))
        return await store.write_part(upload_id, number, size, chunks(data))
    async with httpx.AsyncClient(trust_env=False) as http:
        response = await http.put(url, content=data)
    assert response.status_code == 200, response.text
    return response.headers["etag"]


async def test_put_download_size_delete(store: ObjectStore, tmp_path: Path) -> None:
    await store.put("a/b.csv", b"x,y\n1,2\n")
    assert await store.size("a/b.csv") == 8
    await store.download("a/b.csv", tmp_path / "copy")
    assert (tmp_path / "copy").read_bytes() == b"x,y\n1,2\n"
    await store.delete("a/b.csv")
    with pytest.raises(NotFound):
        await store.size("a/b.csv")
    with pytest.raises(NotFound):
        await store.download("a/b.csv", tmp_path / "again")


async def test_a_downloaded_object_keeps_its_bytes_when_the_object_is_replaced(
    store: ObjectStore, tmp_path: Path
) -> None:
    """The local store links the object into the attempt's folder instead of copying it: the
    object must then never change in place under that link."""
    await store.put("a/b.csv", b"old\n")
    await store.download("a/b.csv", tmp_path / "copy")
    await store.put("a/b.csv", b"new, longer\n")
    assert (tmp_path / "copy").read_bytes() == b"old\n"
    await store.download("a/b.csv", tmp_path / "again")
    assert (tmp_path / "again").read_bytes() == b"new, longer\n"
    await store.delete("a/b.csv")
    assert (tmp_path / "copy").read_bytes() == b"old\n"


async def test_multipart_assembles_the_parts_in_order(store: ObjectStore, tmp_path: Path) -> None:
    parts = [b"a" * PART, b"b" * PART, b"tail"]
    upload_id = await store.start_multipart("up/file.bin")
    urls = await store.part_urls("up/file.bin", upload_id, [len(p) for p in parts], time.time() + 60)
    assert len(urls) == 3
    # Sent out of order: the part number, not the arrival, decides the place.
    etags = {n: await send_part(store, urls[n - 1], parts[n - 1]) for n in (3, 1, 2)}
    stored = await store.stored_parts("up/file.bin", upload_id)
    assert {n: p.size for n, p in stored.items()} == {1: PART, 2: PART, 3: 4}
    assert {n: p.etag for n, p in stored.items()} == etags
    assert etags[1].strip('"') == hashlib.md5(parts[0]).hexdigest()
    await store.complete_multipart("up/file.bin", upload_id, [stored[n] for n in (1, 2, 3)])
    await store.download("up/file.bin", tmp_path / "whole")
    assert (tmp_path / "whole").read_bytes() == b"".join(parts)
    with pytest.raises(NotFound):
        await store.stored_parts("up/file.bin", upload_id)


async def test_abort_deletes_every_part(store: ObjectStore) -> None:
    upload_id = await store.start_multipart("up/gone.bin")
    [url] = await store.part_urls("up/gone.bin", upload_id, [10], time.time() + 60)
    await send_part(store, url, b"0123456789")
    assert len(await store.stored_parts("up/gone.bin", upload_id)) == 1
    await store.abort_multipart("up/gone.bin", upload_id)
    with pytest.raises(NotFound):
        await store.stored_parts("up/gone.bin", upload_id)
    with pytest.raises(NotFound):
        await store.size("up/gone.bin")
    await store.abort_multipart("up/gone.bin", upload_id)  # a second abort finds nothing to do


async def test_s3_part_urls_sign_the_part_size(moto_endpoint: str, s3_bucket: str) -> None:
    store = S3ObjectStore.connect(s3_bucket, endpoint_url=moto_endpoint, region="us-east-1")
    upload_id = await store.start_multipart("k")
    urls = await store.part_urls("k", upload_id, [PART, 3], time.time() + 600)
    queries = [query_of(u) for u in urls]
    assert [q["partNumber"] for q in queries] == ["1", "2"]
    assert all(q["uploadId"] == upload_id for q in queries)
    assert all(q["X-Amz-SignedHeaders"] == "content-length;host" for q in queries)
    assert 590 <= int(queries[0]["X-Amz-Expires"]) <= 600


class TestLocalPartUrls:
    async def signed(self, store: LocalObjectStore, expires: float | None = None) -> dict[str, str]:
        urls = await store.part_urls("k/f.csv", "abc123", [100, 7], expires or time.time() + 60)
        assert urls[1].startswith("http://testserver/parts?")
        return query_of(urls[1])

    async def test_a_signed_url_names_its_part(self, tmp_path: Path) -> None:
        store = local_store(tmp_path)
        assert store.verify_part_url(await self.signed(store)) == ("k/f.csv", "abc123", 2, 7)

    @pytest.mark.parametrize(
        ("field", "value"),
        [
            ("key", "k/other.csv"),
            ("uploadId", "abc124"),
            ("partNumber", "1"),
            ("size", "100"),
            ("expires", "9999999999"),
            ("signature", "é"),
        ],
    )
    async def test_changing_any_signed_field_is_refused(self, tmp_path: Path, field: str, value: str) -> None:
        store = local_store(tmp_path)
        query = {**await self.signed(store), field: value}
        with pytest.raises(Forbidden, match="signature does not match"):
            store.verify_part_url(query)

    async def test_another_signing_key_is_refused(self, tmp_path: Path) -> None:
        query = await self.signed(local_store(tmp_path))
        other = LocalObjectStore(tmp_path / "objects", signing_key=b"x" * 32)
        with pytest.raises(Forbidden, match="signature does not match"):
            other.verify_part_url(query)

    async def test_missing_fields_are_refused(self, tmp_path: Path) -> None:
        store = local_store(tmp_path)
        query = await self.signed(store)
        del query["signature"]
        with pytest.raises(Forbidden, match="not a signed part URL"):
            store.verify_part_url(query)
        with pytest.raises(Forbidden, match="not a signed part URL"):
            store.verify_part_url({**query, "signature": "x", "size": "seven"})

    async def test_an_expired_url_is_refused(self, tmp_path: Path) -> None:
        store = local_store(tmp_path)
        query = await self.signed(store, expires=time.time() + 60)
        store.clock = lambda: time.time() + 61
        with pytest.raises(Forbidden, match="expired"):
            store.verify_part_url(query)


class TestLocalParts:
    async def test_a_part_of_the_wrong_size_stores_nothing(self, tmp_path: Path) -> None:
        store = local_store(tmp_path)
        upload_id = await store.start_multipart("k")
        for body in (b"short", b"much too long"):
            with pytest.raises(InvalidInput, match="exactly 10 bytes"):
                await store.write_part(upload_id, 1, 10, chunks(body, 3))
        assert await store.stored_parts("k", upload_id) == {}
        assert list(store.upload_dir(upload_id).iterdir()) == []

    async def test_a_part_sent_again_replaces_the_first(self, tmp_path: Path) -> None:
        store = local_store(tmp_path)
        upload_id = await store.start_multipart("k")
        await store.write_part(upload_id, 1, 3, chunks(b"one"))
        second = await store.write_part(upload_id, 1, 3, chunks(b"two"))
        [part] = (await store.stored_parts("k", upload_id)).values()
        assert part.etag == second
        await store.complete_multipart("k", upload_id, [part])
        assert store.path("k").read_bytes() == b"two"

    async def test_writing_to_an_aborted_upload_is_a_conflict(self, tmp_path: Path) -> None:
        store = local_store(tmp_path)
        upload_id = await store.start_multipart("k")
        await store.abort_multipart("k", upload_id)
        with pytest.raises(Conflict):
            await store.write_part(upload_id, 1, 3, chunks(b"one"))
        assert not store.upload_dir(upload_id).exists()

    async def test_upload_ids_cannot_leave_the_parts_folder(self, tmp_path: Path) -> None:
        store = local_store(tmp_path)
        with pytest.raises(NotFound):
            store.upload_dir("../objects")

    async def test_assembly_streams_instead_of_loading_the_file(self, tmp_path: Path) -> None:
        store = local_store(tmp_path)
        upload_id = await store.start_multipart("big")
        size = 8 * 1024 * 1024
        for number in range(1, 9):
            (store.upload_dir(upload_id) / f"{number:05d}.e{number}").write_bytes(bytes([number]) * size)
        parts = [StoredPart(n, size, f'"e{n}"') for n in range(1, 9)]
        tracemalloc.start()
        try:
            await store.complete_multipart("big", upload_id, parts)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert store.path("big").stat().st_size == 8 * size
        assert peak < 4 * 1024 * 1024  # 64 MiB assembled through one 1 MiB buffer
