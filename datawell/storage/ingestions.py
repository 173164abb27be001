"""Ingestion attempts: created when an upload completes (or a retry is asked for), claimed
and advanced by the worker, listed for users."""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncSession

from datawell.storage.tables import Dataset, Ingestion, User


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
