"""Multipart upload sessions: opened by prepare, closed by complete or abort. The row is
what the service trusts about an upload (its key, size and part layout); the object store
holds the bytes."""

from __future__ import annotations

import logging
import math
import re
import uuid
from datetime import datetime, timedelta
from enum import StrEnum

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession

from datawell.errors import Conflict, NotFound
from datawell.storage.datasets import DatasetRef
from datawell.storage.db import Database
from datawell.storage.objects import ObjectStore
from datawell.storage.tables import Upload, User, utcnow

PART_SIZE = 8 * 1024 * 1024
MAX_PARTS = 10000
MAX_SIZE = PART_SIZE * MAX_PARTS
MAX_FILENAME = 255
UNSAFE_IN_KEY = re.compile(r"[^A-Za-z0-9._-]+")
# A completion that began this long ago is taken to be dead (its process stopped between
# claiming and finishing) and may be retaken by the next complete. Assembling 10,000 local
# parts (80 GiB) takes minutes, not this long.
COMPLETING_LEASE = timedelta(minutes=30)
# Open uploads are aborted (their parts deleted) this long after their part URLs expired.
ABANDONED_AFTER = timedelta(days=1)

log = logging.getLogger(__name__)


class UploadStatus(StrEnum):
    OPEN = "OPEN"
    # Held while complete checks and assembles the parts, so a second complete or an abort
    # cannot run at the same time (both get 409).
    COMPLETING = "COMPLETING"
    COMPLETED = "COMPLETED"
    ABORTED = "ABORTED"


def part_sizes(size: int, part_size: int = PART_SIZE) -> list[int]:
    """Every part is `part_size` bytes but the last, which holds the rest."""
    count = max(1, math.ceil(size / part_size))
    return [part_size] * (count - 1) + [size - part_size * (count - 1)]


def object_key(dataset: DatasetRef, filename: str) -> str:
    """A fresh key per upload, so a file uploaded twice never overwrites the first one."""
    safe = UNSAFE_IN_KEY.sub("_", filename).strip("._") or "upload"
    return f"uploads/{dataset.record.id}/{uuid.uuid4().hex}/{safe[-120:]}"


async def create_upload(
    session: AsyncSession,
    dataset: DatasetRef,
    upload_id: str,
    key: str,
    filename: str,
    size: int,
    creator: User,
    expires_at: datetime,
) -> Upload:
    upload = Upload(
        id=upload_id,
        dataset_id=dataset.record.id,
        key=key,
        filename=filename,
        size=size,
        part_size=PART_SIZE,
        part_count=len(part_sizes(size)),
        status=UploadStatus.OPEN.value,
        created_by=creator.id,
        expires_at=expires_at,
    )
    session.add(upload)
    await session.flush()
    return upload


async def find_upload(session: AsyncSession, upload_id: str) -> Upload | None:
    return await session.get(Upload, upload_id)


async def get_upload(session: AsyncSession, dataset: DatasetRef, upload_id: str, key: str) -> Upload:
    """The upload of this dataset with this id and key; 404 if any of them does not match."""
    upload = await find_upload(session, upload_id)
    if upload is None or upload.dataset_id != dataset.record.id or upload.key != key:
        raise NotFound(f"no upload {upload_id!r} with key {key!r} for dataset {dataset.namespace}/{dataset.name}")
    return upload


def check_open(upload: Upload) -> None:
    if upload.status != UploadStatus.OPEN:
        raise Conflict(f"upload {upload.id} is {upload.status.lower()}, not open")


def completion_is_stale(upload: Upload, now: datetime) -> bool:
    return upload.status == UploadStatus.COMPLETING and now - upload.status_changed_at >= COMPLETING_LEASE


async def start_completing(session: AsyncSession, upload: Upload) -> bool:
    """Claim the upload for one complete request: OPEN → COMPLETING. An upload left
    COMPLETING longer than `COMPLETING_LEASE` (the request's process died) is retaken;
    returns True then, since its object may already be assembled. 409 otherwise."""
    now = utcnow()
    if not completion_is_stale(upload, now):
        if upload.status == UploadStatus.COMPLETING:
            retry_at = upload.status_changed_at + COMPLETING_LEASE
            raise Conflict(
                f"upload {upload.id} is being completed since {upload.status_changed_at:%Y-%m-%d %H:%M:%S} UTC; "
                f"if that request failed without an answer, complete again after {retry_at:%H:%M:%S} UTC"
            )
        check_open(upload)
        await move(session, upload, UploadStatus.OPEN, UploadStatus.COMPLETING)
        return False
    # Compare-and-set on the old time, so of two requests retaking it one wins.
    result = await session.execute(
        update(Upload)
        .where(
            Upload.id == upload.id,
            Upload.status == UploadStatus.COMPLETING.value,
            Upload.status_changed_at == upload.status_changed_at,
        )
        .values(status_changed_at=now)
        .execution_options(synchronize_session=False)
    )
    if result.rowcount != 1:  # type: ignore[attr-defined]
        raise Conflict(f"upload {upload.id} is being completed by another request")
    upload.status_changed_at = now
    return True


async def move(session: AsyncSession, upload: Upload, source: UploadStatus, target: UploadStatus) -> None:
    """Change the status only if it still is `source`, so of two concurrent requests one wins
    and the other gets 409."""
    now = utcnow()
    result = await session.execute(
        update(Upload)
        .where(Upload.id == upload.id, Upload.status == source.value)
        .values(status=target.value, status_changed_at=now)
        .execution_options(synchronize_session=False)
    )
    if result.rowcount != 1:  # type: ignore[attr-defined]
        current = (await session.execute(select(Upload.status).where(Upload.id == upload.id))).scalar_one_or_none()
        raise Conflict(f"upload {upload.id} is {(current or 'gone').lower()}, not {source.value.lower()}")
    upload.status = target.value
    upload.status_changed_at = now


async def abandoned_uploads(session: AsyncSession, now: datetime, limit: int = 100) -> list[Upload]:
    """Open uploads whose part URLs expired more than `ABANDONED_AFTER` ago."""
    query = (
        select(Upload)
        .where(Upload.status == UploadStatus.OPEN.value, Upload.expires_at < now - ABANDONED_AFTER)
        .order_by(Upload.expires_at)
        .limit(limit)
    )
    return list((await session.execute(query)).scalars())


async def abort_upload(db: Database, objects: ObjectStore, upload: Upload) -> None:
    """OPEN → ABORTED, then delete the stored parts. If deleting fails the upload is open
    again, so the abort can be repeated; 409 if it was not open."""
    async with db.session() as session:
        await move(session, upload, UploadStatus.OPEN, UploadStatus.ABORTED)
    try:
        await objects.abort_multipart(upload.key, upload.id)
    except BaseException:
        async with db.session() as session:
            await move(session, upload, UploadStatus.ABORTED, UploadStatus.OPEN)
        raise


async def sweep_abandoned(db: Database, objects: ObjectStore, now: datetime | None = None) -> int:
    """Abort every open upload abandoned for `ABANDONED_AFTER` past its expiry, deleting its
    parts; how many were aborted. One that fails stays open for the next sweep."""
    now = now or utcnow()
    async with db.session() as session:
        found = await abandoned_uploads(session, now)
    aborted = 0
    for upload in found:
        try:
            await abort_upload(db, objects, upload)
        except Conflict:
            continue  # completed or aborted meanwhile
        except Exception:
            log.exception("could not abort abandoned upload %s", upload.id)
            continue
        aborted += 1
    return aborted


async def sweep_closed_parts(db: Database, objects: ObjectStore) -> int:
    """Delete the parts the store still holds for uploads that are closed: a part PUT still
    in flight when its upload was aborted or completed can land after the parts were
    deleted. How many uploads had such leftovers. Uploads the database does not know are
    left alone (prepare opens the store's upload just before it records it)."""
    held = await objects.multipart_ids()
    if not held:
        return 0
    closed = (UploadStatus.ABORTED.value, UploadStatus.COMPLETED.value)
    async with db.session() as session:
        found = (await session.execute(select(Upload).where(Upload.id.in_(held), Upload.status.in_(closed)))).scalars()
        uploads = list(found)
    for upload in uploads:
        await objects.abort_multipart(upload.key, upload.id)
    return len(uploads)
