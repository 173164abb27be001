"""Multipart upload sessions: opened by prepare, closed by complete or abort. The row is
what the service trusts about an upload (its key, size and part layout); the object store
holds the bytes."""

from __future__ import annotations

import math
import re
import uuid
from datetime import datetime
from enum import StrEnum

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession

from datawell.errors import Conflict, NotFound
from datawell.storage.datasets import DatasetRef
from datawell.storage.tables import Upload, User

PART_SIZE = 8 * 1024 * 1024
MAX_PARTS = 10000
MAX_SIZE = PART_SIZE * MAX_PARTS
MAX_FILENAME = 255
UNSAFE_IN_KEY = re.compile(r"[^A-Za-z0-9._-]+")


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


async def move(session: AsyncSession, upload: Upload, source: UploadStatus, target: UploadStatus) -> None:
    """Change the status only if it still is `source`, so of two concurrent requests one wins
    and the other gets 409."""
    result = await session.execute(
        update(Upload)
        .where(Upload.id == upload.id, Upload.status == source.value)
        .values(status=target.value)
        .execution_options(synchronize_session=False)
    )
    if result.rowcount != 1:  # type: ignore[attr-defined]
        current = (await session.execute(select(Upload.status).where(Upload.id == upload.id))).scalar_one_or_none()
        raise Conflict(f"upload {upload.id} is {(current or 'gone').lower()}, not {source.value.lower()}")
    upload.status = target.value
