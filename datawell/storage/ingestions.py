"""Ingestion attempts: created when an upload completes (or a retry is asked for), claimed
and advanced by the worker, listed for users.

A worker owns an attempt while `claimed_by` names it, the status is RUNNING and its lease
has not expired. Every write a worker makes is conditional on that ownership, so a worker
that lost its lease (it stalled and another took the job) or whose attempt was cancelled
finds out at its next write instead of overwriting the new owner's progress."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import and_, exists, or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import aliased

from datawell.errors import Conflict
from datawell.storage.tables import Dataset, Ingestion, User, utcnow

QUEUED = "QUEUED"
RUNNING = "RUNNING"
SUCCEEDED = "SUCCEEDED"
FAILED = "FAILED"
CANCELLED = "CANCELLED"
STATUSES = (QUEUED, RUNNING, SUCCEEDED, FAILED, CANCELLED)
RETRYABLE = (FAILED, CANCELLED)
ACTIVE = (QUEUED, RUNNING)
# What a retry takes from the attempt it retries: the same file, into the same dataset.
RETRY_COPIES = ("dataset_id", "object_key", "name", "expected_total_bytes", "seen_at")


async def enqueue(
    session: AsyncSession, dataset: Dataset, object_key: str, name: str, size: int, creator: User
) -> Ingestion:
    """A new QUEUED attempt for an object in the object store; a worker picks it up."""
    ingestion = Ingestion(
        dataset_id=dataset.id, object_key=object_key, name=name, expected_total_bytes=size, created_by=creator.id
    )
    session.add(ingestion)
    await session.flush()
    return ingestion


def _claimable(now: datetime) -> Any:
    """Queued, or running under a lease that expired (its worker died or stalled)."""
    return or_(
        Ingestion.status == QUEUED,
        and_(Ingestion.status == RUNNING, or_(Ingestion.lease_expires_at.is_(None), Ingestion.lease_expires_at < now)),
    )


def _first_of_its_dataset() -> Any:
    """No older attempt of the same dataset is queued or running: a dataset's attempts run
    one at a time, in the order they were created, however many workers there are."""
    older = aliased(Ingestion)
    return ~exists().where(
        older.dataset_id == Ingestion.dataset_id,
        older.status.in_(ACTIVE),
        or_(
            older.created_at < Ingestion.created_at,
            and_(older.created_at == Ingestion.created_at, older.id < Ingestion.id),
        ),
    )


async def claim(session: AsyncSession, worker: str, lease: timedelta) -> Ingestion | None:
    """Take the oldest claimable attempt for `worker`, or None when there is none.

    One statement: an UPDATE of the row a sub-select picks. On PostgreSQL the sub-select
    locks the row with FOR UPDATE SKIP LOCKED, so concurrent workers pick different rows;
    on SQLite writes are serialised and the repeated condition in the UPDATE makes the
    loser of a race match nothing."""
    now = utcnow()
    pick = (
        select(Ingestion.id)
        .where(_claimable(now), _first_of_its_dataset())
        .order_by(Ingestion.created_at, Ingestion.id)
        .limit(1)
    )
    if session.get_bind().dialect.name == "postgresql":
        pick = pick.with_for_update(skip_locked=True)
    claimed = (
        await session.execute(
            update(Ingestion)
            .where(Ingestion.id == pick.scalar_subquery(), _claimable(now))
            .values(status=RUNNING, claimed_by=worker, lease_expires_at=now + lease, updated_at=now)
            .returning(Ingestion.id)
            .execution_options(synchronize_session=False)
        )
    ).scalar_one_or_none()
    if claimed is None:
        return None
    return (
        await session.execute(
            select(Ingestion).where(Ingestion.id == claimed).execution_options(populate_existing=True)
        )
    ).scalar_one()


def _owned(ingestion_id: str, worker: str) -> Any:
    return and_(Ingestion.id == ingestion_id, Ingestion.claimed_by == worker, Ingestion.status == RUNNING)


async def advance(session: AsyncSession, ingestion_id: str, worker: str, lease: timedelta, **values: Any) -> bool:
    """Renew the lease and set `values` (progress, mapping) if `worker` still owns the attempt."""
    now = utcnow()
    result = await session.execute(
        update(Ingestion)
        .where(_owned(ingestion_id, worker))
        .values(lease_expires_at=now + lease, updated_at=now, **values)
        .execution_options(synchronize_session=False)
    )
    return bool(result.rowcount)  # type: ignore[attr-defined]


async def finish(
    session: AsyncSession, ingestion_id: str, worker: str, status: str, message: str, **values: Any
) -> bool:
    """End the attempt as SUCCEEDED or FAILED if `worker` still owns it."""
    result = await session.execute(
        update(Ingestion)
        .where(_owned(ingestion_id, worker))
        .values(status=status, status_message=message, lease_expires_at=None, updated_at=utcnow(), **values)
        .execution_options(synchronize_session=False)
    )
    return bool(result.rowcount)  # type: ignore[attr-defined]


async def release(session: AsyncSession, ingestion_id: str, worker: str) -> bool:
    """Give a running attempt back to the queue (its worker is shutting down)."""
    result = await session.execute(
        update(Ingestion)
        .where(_owned(ingestion_id, worker))
        .values(status=QUEUED, claimed_by=None, lease_expires_at=None, status_message="", updated_at=utcnow())
        .execution_options(synchronize_session=False)
    )
    return bool(result.rowcount)  # type: ignore[attr-defined]


async def status_of(session: AsyncSession, ingestion_id: str) -> str | None:
    return (await session.execute(select(Ingestion.status).where(Ingestion.id == ingestion_id))).scalar_one_or_none()


async def get_ingestion(session: AsyncSession, ingestion_id: str) -> Ingestion | None:
    return (await session.execute(select(Ingestion).where(Ingestion.id == ingestion_id))).scalar_one_or_none()


async def list_attempts(session: AsyncSession, dataset_id: str, before: datetime | None, limit: int) -> list[Ingestion]:
    """The dataset's attempts created at or before `before`, newest first."""
    query = select(Ingestion).where(Ingestion.dataset_id == dataset_id)
    if before is not None:
        query = query.where(Ingestion.created_at <= before)
    query = query.order_by(Ingestion.created_at.desc(), Ingestion.id.desc()).limit(limit)
    return list((await session.execute(query)).scalars())


async def retry(session: AsyncSession, original: Ingestion, creator: User) -> Ingestion:
    """A new QUEUED attempt for the same object. Only a FAILED or CANCELLED attempt may be
    retried, and only while no other attempt of the same object is queued, running or has
    succeeded: that is what keeps a retry from ingesting the same file twice."""
    if original.status not in RETRYABLE:
        raise Conflict(
            f"ingestion {original.id} is {original.status}; only a FAILED or CANCELLED ingestion can be retried"
        )
    if session.get_bind().dialect.name == "postgresql":
        # Two retries of one attempt at the same moment: the second waits here, then sees the first.
        await session.execute(select(Dataset.id).where(Dataset.id == original.dataset_id).with_for_update())
    other = (
        await session.execute(
            select(Ingestion.id, Ingestion.status).where(
                Ingestion.dataset_id == original.dataset_id,
                Ingestion.object_key == original.object_key,
                Ingestion.status.in_((*ACTIVE, SUCCEEDED)),
            )
        )
    ).first()
    if other is not None:
        raise Conflict(f"the same file is already ingested by ingestion {other[0]} ({other[1]}); it is not retried")
    now = utcnow()
    original.last_retry_at = now
    attempt = Ingestion(
        **{column: getattr(original, column) for column in RETRY_COPIES},
        original_ingestion_id=original.id,
        last_retry_at=now,
        created_by=creator.id,
        created_at=now,
    )
    session.add(attempt)
    await session.flush()
    return attempt


async def cancel_active(session: AsyncSession, dataset_id: str, message: str) -> int:
    """Cancel the dataset's queued and running attempts; their workers stop at their next write."""
    result = await session.execute(
        update(Ingestion)
        .where(Ingestion.dataset_id == dataset_id, Ingestion.status.in_(ACTIVE))
        .values(status=CANCELLED, status_message=message, lease_expires_at=None, updated_at=utcnow())
        .execution_options(synchronize_session=False)
    )
    return int(result.rowcount or 0)  # type: ignore[attr-defined]


async def embedding_incomplete(session: AsyncSession, dataset_ids: list[str]) -> set[str]:
    """The datasets among `dataset_ids` with published rows whose vectors are not all there
    yet (being embedded, or their embedding failed): `semantic()` says so."""
    found = await session.execute(
        select(Ingestion.dataset_id, Ingestion.mapping).where(
            Ingestion.dataset_id.in_(dataset_ids), Ingestion.status.in_((RUNNING, SUCCEEDED))
        )
    )
    incomplete = set()
    for dataset_id, mapping in found:
        state = (mapping or {}).get("rowEmbeddings") or {}
        if (mapping or {}).get("published") is not None or (state and not state.get("complete")):
            incomplete.add(dataset_id)
    return incomplete


async def cancel(session: AsyncSession, ingestion: Ingestion, message: str) -> None:
    """Cancel one queued or running attempt (409 otherwise); its worker stops at once (the
    lease's next beat) and removes what it staged."""
    result = await session.execute(
        update(Ingestion)
        .where(Ingestion.id == ingestion.id, Ingestion.status.in_(ACTIVE))
        .values(status=CANCELLED, status_message=message, lease_expires_at=None, updated_at=utcnow())
        .execution_options(synchronize_session=False)
    )
    if not result.rowcount:  # type: ignore[attr-defined]
        current = await status_of(session, ingestion.id)
        raise Conflict(f"ingestion {ingestion.id} is {current}; only a QUEUED or RUNNING ingestion can be cancelled")
