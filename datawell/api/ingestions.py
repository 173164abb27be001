"""Ingestion tracking and dataset data: list attempts, read one, retry one, clear a dataset."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Annotated

from pydantic import Field, field_validator
from sqlalchemy.ext.asyncio import AsyncSession
from starlette.requests import Request

from datawell.api.routing import (
    READABLE_DATASET,
    WRITABLE_DATASET,
    Context,
    PathModel,
    Resolver,
    Router,
    uuid_in_path,
)
from datawell.api.schemas import ApiModel
from datawell.client.models import AttemptList, AttemptsMetadata, IngestionAttempt, IngestionAttributes, IngestionDetail
from datawell.client.models import Cleared as ClearResponse
from datawell.client.models import Retried as RetryResponse
from datawell.errors import NotFound
from datawell.ingest.worker import queue_work
from datawell.lifecycle import Stores, clear_dataset
from datawell.ontology.links import remove_dataset_links
from datawell.storage import hints, ingestions
from datawell.storage.access import Permission, namespace_by_id, require_seen
from datawell.storage.datasets import DatasetRef
from datawell.storage.tables import Dataset, Ingestion, User

router = Router("ingestions")

CURSOR_STEP = timedelta(microseconds=1)
NUMBER = re.compile(r"[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?")


def attempt_response(ingestion: Ingestion) -> IngestionAttempt:
    return IngestionAttempt(
        id=ingestion.id,
        status=ingestion.status,  # type: ignore[arg-type]
        expected_total_bytes=ingestion.expected_total_bytes,
        status_message=ingestion.status_message,
        processed_bytes=ingestion.processed_bytes,
        processed_rows=ingestion.processed_rows,
        attributes=IngestionAttributes(
            name=ingestion.name,
            seen_at=ingestion.seen_at,
            original_ingestion_id=ingestion.original_ingestion_id,
            last_retry_at=ingestion.last_retry_at,
        ),
    )


class AttemptsQuery(ApiModel):
    before_created_at: datetime | None = Field(
        None, description="Only attempts created at or before this time (date-time; without a zone, UTC)."
    )
    page_size: int = Field(20, ge=1, le=100, description="At most this many attempts (1 to 100).")

    @field_validator("before_created_at", mode="before")
    @classmethod
    def not_a_number(cls, value: object) -> object:
        """pydantic reads a number as Unix seconds; the documented type is an ISO 8601 date-time."""
        if isinstance(value, str) and NUMBER.fullmatch(value.strip()):
            raise ValueError(f"expected an ISO 8601 date-time such as 2026-01-31T12:00:00Z, got {value!r}")
        return value

    @field_validator("before_created_at")
    @classmethod
    def as_utc(cls, value: datetime | None) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


class IngestionPath(PathModel):
    ingestion_id: Annotated[str, uuid_in_path("ingestion")]


def ingestion_for(wanted: Permission) -> Resolver[IngestionPath, Ingestion]:
    """The ingestion named in the path: 404 when it does not exist or the caller cannot read
    its namespace at all, 403 when the caller may read but `wanted` is write."""

    async def resolve(ctx: Context, user: User, path: IngestionPath) -> Ingestion:
        missing = NotFound(f"ingestion {path.ingestion_id} does not exist")
        async with ctx.services.db.read() as session:
            ingestion = await ingestions.get_ingestion(session, path.ingestion_id)
            if ingestion is None:
                raise missing
            dataset = await session.get_one(Dataset, ingestion.dataset_id)
            namespace = await namespace_by_id(session, dataset.namespace_id)
            await require_seen(session, user, namespace, wanted, missing)
        return ingestion

    return Resolver("ingestion", IngestionPath, resolve, (404,) if wanted is Permission.READ else (403, 404))


READABLE_INGESTION = ingestion_for(Permission.READ)
WRITABLE_INGESTION = ingestion_for(Permission.WRITE)


def page(items: list[Ingestion], size: int) -> tuple[list[Ingestion], datetime | None]:
    """The page and the cursor for the next one, given up to `size + 1` items newest first.

    The bound is inclusive, so the cursor is the page's oldest time minus a microsecond; and
    attempts sharing that time with the first attempt of the next page are moved to the next
    page, so none is skipped or shown twice."""
    if len(items) <= size:
        return items, None
    shown = items[:size]
    boundary = items[size].created_at
    kept = [i for i in shown if i.created_at != boundary]
    if kept:
        shown = kept
    return shown, shown[-1].created_at - CURSOR_STEP


@router.get(
    "/data/{username}/{namespace}/{datasetName}/ingest/attempts",
    AttemptList,
    query=AttemptsQuery,
    resolve=READABLE_DATASET,
)
async def list_attempts(
    request: Request, ctx: Context, user: User, query: AttemptsQuery, dataset: DatasetRef
) -> AttemptList:
    """List a dataset's ingestion attempts

    Lists the dataset's ingestion attempts, newest first. `metadata.beforeCreatedAt` is the
    cursor for the next page (null on the last page)."""
    async with ctx.services.db.read() as session:
        items = await ingestions.list_attempts(session, dataset.record.id, query.before_created_at, query.page_size + 1)
    shown, cursor = page(items, query.page_size)
    return AttemptList(
        data=[attempt_response(i) for i in shown],
        metadata=AttemptsMetadata(page_size=query.page_size, before_created_at=cursor),
    )


@router.get("/ingestionTracking/{ingestionId}", IngestionDetail, resolve=READABLE_INGESTION)
async def read_attempt(request: Request, ctx: Context, user: User, ingestion: Ingestion) -> IngestionDetail:
    """Read one ingestion attempt

    Reads one attempt, with the mapping from the file's columns to the dataset's fields."""
    return IngestionDetail(**attempt_response(ingestion).model_dump(), mapping=ingestion.mapping)


@router.post(
    "/ingestionTracking/{ingestionId}/retry", RetryResponse, status=201, errors=(409,), resolve=WRITABLE_INGESTION
)
async def retry(request: Request, ctx: Context, user: User, ingestion: Ingestion) -> RetryResponse:
    """Retry an ingestion

    Creates a new ingestion of the same uploaded file (201, the new attempt's id) and queues
    it for the background worker. Only a FAILED or CANCELLED ingestion can be retried (409 otherwise), and not
    while another ingestion of the same file is queued, running or succeeded."""

    async def retried(session: AsyncSession) -> Ingestion:
        session.add(ingestion)
        return await ingestions.retry(session, ingestion, user)

    attempt = await queue_work(ctx.services, retried)
    return RetryResponse(id=attempt.id)


@router.post("/ingestionTracking/{ingestionId}/cancel", IngestionAttempt, errors=(409,), resolve=WRITABLE_INGESTION)
async def cancel(request: Request, ctx: Context, user: User, ingestion: Ingestion) -> IngestionAttempt:
    """Cancel an ingestion

    Cancels a QUEUED or RUNNING ingestion (409 otherwise) and answers with it, now
    CANCELLED. A running one stops within a third of the worker lease and leaves no rows;
    it can be retried later."""
    async with ctx.services.db.session() as session:
        session.add(ingestion)
        await ingestions.cancel(session, ingestion, f"cancelled by {user.username}")
        await session.refresh(ingestion)
        return attempt_response(ingestion)


@router.post("/data/{username}/{namespace}/{datasetName}/clear", ClearResponse, resolve=WRITABLE_DATASET)
async def clear(request: Request, ctx: Context, user: User, dataset: DatasetRef) -> ClearResponse:
    """Clear a dataset

    Irreversibly removes every row, vector and link of the dataset, and stops its queued
    and running ingestions. The dataset itself, its schema and column types remain."""
    services = ctx.services
    record = dataset.record
    async with services.db.session() as session:
        cancelled = await ingestions.cancel_active(
            session, record.id, f"cancelled: {user.username} cleared the dataset"
        )
    stores = Stores(services.db, services.rows, services.vectors, services.objects)
    rows, vectors = await clear_dataset(stores, record)
    await hints.refresh(services.db, services.rows, record)
    async with services.db.session() as session:
        links = await remove_dataset_links(session, record.id)
    return ClearResponse(
        rows_deleted=rows,
        vectors_deleted=vectors,
        links_deleted=links,
        ingestions_cancelled=cancelled,
    )
