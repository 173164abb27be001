"""The object store: where uploaded files land. `local` (a folder, default, here) and `s3` (any
S3-compatible store through boto3, `storage/s3.py`). The ingestion worker reads objects only through
`download`; uploads arrive through multipart sessions whose parts the client sends straight
to presigned URLs, so file bytes never pass through a JSON request."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import json
import os
import shutil
import time
import uuid
from collections.abc import AsyncIterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol
from urllib.parse import urlencode

from datawell.errors import Conflict, Forbidden, InvalidInput, NotFound, SubError

COPY_BUFFER = 1024 * 1024
WRITE_BUFFER = 1024 * 1024
# A closed upload's parts folder is renamed to `<DELETING><uploadId>.<random>` before it is deleted.
DELETING = ".deleting-"


@dataclass(frozen=True)
class StoredPart:
    """A part the store holds for an open multipart upload."""

    number: int
    size: int
    etag: str


def normalize_etag(etag: str) -> str:
    """ETags compare without quotes, weak prefix or case (S3 quotes them, clients vary)."""
    etag = etag.strip()
    etag = etag.removeprefix("W/")
    return etag.strip('"').lower()


class ObjectStore(Protocol):
    async def put(self, key: str, data: bytes) -> None: ...

    async def download(self, key: str, destination: Path) -> None:
        """Copy the object to a local file (raises NotFound when there is no such object)."""
        ...

    async def size(self, key: str) -> int: ...

    async def delete(self, key: str) -> None: ...

    async def start_multipart(self, key: str) -> str:
        """Open a multipart upload of `key`; returns its upload id."""
        ...

    async def part_urls(self, key: str, upload_id: str, sizes: Sequence[int], expires_at: float) -> list[str]:
        """One presigned PUT URL per part (part numbers from 1), valid until `expires_at` (unix time)."""
        ...

    async def stored_parts(self, key: str, upload_id: str) -> dict[int, StoredPart]:
        """The parts uploaded so far, by part number (NotFound if the store has no such upload)."""
        ...

    async def complete_multipart(self, key: str, upload_id: str, parts: Sequence[StoredPart]) -> None:
        """Assemble `parts`, in order, into the object `key` and drop the parts."""
        ...

    async def abort_multipart(self, key: str, upload_id: str) -> None:
        """Delete every stored part of the upload (no error if there are none)."""
        ...

    async def multipart_ids(self) -> list[str]:
        """The ids of every multipart upload the store holds parts or a session for."""
        ...


def _replace(path: Path, data: bytes) -> None:
    """Write `path` whole under a new name, then put it in place: a reader (or a link made by
    `download`) sees the old object or the new one, never a mix."""
    temporary = path.with_name(f".{path.name}.{uuid.uuid4().hex}")
    try:
        temporary.write_bytes(data)
        os.replace(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)


def _link_or_copy(path: Path, destination: Path) -> None:
    """A second name for the object's file when both are on one file system (objects are
    only ever replaced whole, never changed in place), else a copy: an ingestion's copy of a
    100,000-row file took 5-60 ms, of a million rows ten times that."""
    try:
        os.link(path, destination)
    except OSError:
        shutil.copyfile(path, destination)


class LocalObjectStore:
    """Objects are files under `root`; parts of open uploads are files under `parts_root`
    until they are assembled or aborted. The service itself serves the part URLs: each is
    signed with HMAC-SHA256 over method, key, uploadId, partNumber, the part's exact size
    and the expiry, so a client can neither reuse a URL for another part nor send more
    or fewer bytes than were announced."""

    def __init__(
        self,
        root: Path,
        *,
        signing_key: bytes = b"",
        part_url_base: str = "",
        parts_root: Path | None = None,
    ) -> None:
        self.root = root
        self.parts_root = parts_root or root.with_name(root.name + "-parts")
        self.signing_key = signing_key
        self.part_url_base = part_url_base
        self.clock = time.time

    def path(self, key: str) -> Path:
        path = (self.root / key).resolve()
        if not path.is_relative_to(self.root.resolve()):
            raise NotFound(f"no object {key!r}")
        return path

    async def put(self, key: str, data: bytes) -> None:
        path = self.path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        await asyncio.to_thread(_replace, path, data)

    async def download(self, key: str, destination: Path) -> None:
        path = self.path(key)
        if not path.is_file():
            raise NotFound(f"no object {key!r}")
        await asyncio.to_thread(_link_or_copy, path, destination)

    async def size(self, key: str) -> int:
        path = self.path(key)
        if not path.is_file():
            raise NotFound(f"no object {key!r}")
        return path.stat().st_size

    async def delete(self, key: str) -> None:
        self.path(key).unlink(missing_ok=True)

    # Multipart

    def upload_dir(self, upload_id: str) -> Path:
        # Upload ids are ours (hex uuids), but they also arrive in part URLs: refuse anything
        # that could name a folder outside parts_root before the signature is even checked.
        if not (upload_id.isascii() and upload_id.isalnum()):
            raise NotFound(f"no upload {upload_id!r}")
        return self.parts_root / upload_id

    async def start_multipart(self, key: str) -> str:
        self.path(key)
        upload_id = uuid.uuid4().hex
        self.upload_dir(upload_id).mkdir(parents=True, exist_ok=True)
        return upload_id

    def signature(self, method: str, key: str, upload_id: str, part_number: int, size: int, expires: int) -> str:
        # A JSON array keeps the fields apart whatever characters a key holds.
        message = json.dumps([method, key, upload_id, part_number, size, expires])
        return hmac.new(self.signing_key, message.encode(), hashlib.sha256).hexdigest()

    async def part_urls(self, key: str, upload_id: str, sizes: Sequence[int], expires_at: float) -> list[str]:
        expires = int(expires_at)
        urls = []
        for number, size in enumerate(sizes, start=1):
            query = {
                "key": key,
                "uploadId": upload_id,
                "partNumber": number,
                "size": size,
                "expires": expires,
                "signature": self.signature("PUT", key, upload_id, number, size, expires),
            }
            urls.append(f"{self.part_url_base}?{urlencode(query)}")
        return urls

    def verify_part_url(self, query: dict[str, str]) -> tuple[str, str, int, int]:
        """(key, uploadId, partNumber, size) of a signed part URL; 403 if forged or expired."""
        try:
            key, upload_id, signature = query["key"], query["uploadId"], query["signature"]
            number, size, expires = int(query["partNumber"]), int(query["size"]), int(query["expires"])
        except (KeyError, ValueError):
            raise Forbidden(
                "this is not a signed part URL: use the URLs returned by prepare, unchanged",
                detail="the query needs key, uploadId, partNumber, size, expires and signature",
            ) from None
        expected = self.signature("PUT", key, upload_id, number, size, expires)
        if not hmac.compare_digest(expected.encode(), signature.encode()):
            raise Forbidden("the part URL's signature does not match: use the URLs returned by prepare, unchanged")
        if self.clock() > expires:
            raise Forbidden(
                "the part URL has expired: abort this upload and prepare a new one",
                detail=f"expired at unix time {expires}",
            )
        return key, upload_id, number, size

    async def write_part(self, upload_id: str, number: int, size: int, chunks: AsyncIterable[bytes]) -> str:
        """Store one part from a stream of exactly `size` bytes; returns its ETag. A body of
        another size stores nothing. A part sent again replaces the earlier one."""
        folder = self.upload_dir(upload_id)
        if not folder.is_dir():
            raise Conflict(f"upload {upload_id} is no longer open")
        temporary = folder / f".{number}-{uuid.uuid4().hex}"
        digest = hashlib.md5(usedforsecurity=False)
        received = 0
        try:
            with await asyncio.to_thread(temporary.open, "wb") as file:
                pending = bytearray()
                async for chunk in chunks:
                    received += len(chunk)
                    if received > size:
                        break
                    digest.update(chunk)
                    pending += chunk
                    if len(pending) >= WRITE_BUFFER:
                        await asyncio.to_thread(file.write, pending)
                        pending.clear()
                if pending and received <= size:
                    await asyncio.to_thread(file.write, pending)
            if received != size:
                raise part_size_error(number, size, received)
            etag = digest.hexdigest()
            # One file per distinct content; the newest wins if a part is sent twice.
            await asyncio.to_thread(os.replace, temporary, folder / f"{number:05d}.{etag}")
        except FileNotFoundError:
            # The upload was closed meanwhile: its folder, with this temporary file, was moved away.
            raise Conflict(
                f"upload {upload_id} was closed (aborted or completed) while part {number} was being written; "
                "the part was not stored"
            ) from None
        finally:
            temporary.unlink(missing_ok=True)
        return f'"{etag}"'

    def _part_files(self, upload_id: str) -> dict[int, tuple[Path, StoredPart]]:
        """The newest file of each part number, with the part it holds."""
        folder = self.upload_dir(upload_id)
        if not folder.is_dir():
            raise NotFound(f"the object store holds no upload {upload_id}")
        newest: dict[int, tuple[int, Path, StoredPart]] = {}
        for path in folder.iterdir():
            if path.name.startswith("."):
                continue
            number_text, _, etag = path.name.partition(".")
            number = int(number_text)
            stat = path.stat()
            if number not in newest or stat.st_mtime_ns >= newest[number][0]:
                newest[number] = (stat.st_mtime_ns, path, StoredPart(number, stat.st_size, f'"{etag}"'))
        return {number: (path, part) for number, (_, path, part) in newest.items()}

    async def stored_parts(self, key: str, upload_id: str) -> dict[int, StoredPart]:
        files = await asyncio.to_thread(self._part_files, upload_id)
        return {number: part for number, (_, part) in files.items()}

    async def complete_multipart(self, key: str, upload_id: str, parts: Sequence[StoredPart]) -> None:
        await asyncio.to_thread(self._assemble, key, upload_id, parts)

    def _assemble(self, key: str, upload_id: str, parts: Sequence[StoredPart]) -> None:
        files = self._part_files(upload_id)
        target = self.path(key)
        target.parent.mkdir(parents=True, exist_ok=True)
        temporary = target.with_name(f".{target.name}.{uuid.uuid4().hex}")
        try:
            # Streamed through one reused buffer: memory stays flat whatever the file size.
            buffer = bytearray(COPY_BUFFER)
            view = memoryview(buffer)
            with temporary.open("wb") as out:
                for part in parts:
                    path, stored = files[part.number]
                    if normalize_etag(stored.etag) != normalize_etag(part.etag):
                        raise Conflict(f"part {part.number} changed while the upload was being completed")
                    with path.open("rb", buffering=0) as source:
                        while read := source.readinto(buffer):
                            out.write(view[:read])
            os.replace(temporary, target)
        finally:
            temporary.unlink(missing_ok=True)
        self._delete_parts(upload_id)

    async def abort_multipart(self, key: str, upload_id: str) -> None:
        await asyncio.to_thread(self._delete_parts, upload_id)

    def _delete_parts(self, upload_id: str) -> None:
        """Move the upload's folder out of the way in one rename, then delete it. Deleting in
        place raced with a part PUT: a file created after `rmtree` listed the folder made its
        `rmdir` fail (silently), and the part stayed. After the rename every path a PUT
        writes to is gone, so it fails instead (409); what it already wrote is in the moved
        folder. A moved folder left by a process that died here is deleted by the next call
        for the same upload (the worker's sweep of closed uploads makes that call)."""
        folder = self.upload_dir(upload_id)
        with contextlib.suppress(FileNotFoundError):
            os.rename(folder, self.parts_root / f"{DELETING}{upload_id}.{uuid.uuid4().hex}")
        for moved in self.parts_root.glob(f"{DELETING}{upload_id}.*"):
            shutil.rmtree(moved, ignore_errors=True)

    async def multipart_ids(self) -> list[str]:
        def listed() -> set[str]:
            if not self.parts_root.is_dir():
                return set()
            folders = [p.name for p in self.parts_root.iterdir() if p.is_dir()]
            return {name.removeprefix(DELETING).partition(".")[0] for name in folders}

        return sorted(await asyncio.to_thread(listed))


def part_size_error(number: int, expected: int, received: int) -> InvalidInput:
    got = f"more than {expected}" if received > expected else str(received)
    return InvalidInput(
        f"part {number} must be exactly {expected} bytes; {got} bytes were sent, nothing was stored",
        sub_errors=[SubError("wrong_part_size", f"part {number}: expected {expected} bytes, got {got}")],
    )
