"""The ingestion worker: claims attempts from the database and runs them.

Any number of workers (the one inside `datawell serve`, `datawell worker` processes) share
the queue: a claim is one conditional UPDATE (FOR UPDATE SKIP LOCKED on PostgreSQL), so two
workers never take the same attempt. A worker holds a lease on its attempt, renewed by every
progress write and by a heartbeat; an attempt whose lease expired (its worker died) is
claimed again, and the new worker starts from an empty stage.

Every `upload_sweep_seconds` a worker also aborts the open uploads abandoned a day past
their expiry, deleting their parts (`storage.uploads.sweep_abandoned`)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import tempfile
import time
import uuid
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import select

from datawell.errors import IngestionFailed
from datawell.ingest.pipeline import AttemptStopped, Ingest, discard
from datawell.services import Services
from datawell.storage import ingestions
from datawell.storage.tables import Dataset, Ingestion
from datawell.storage.uploads import sweep_abandoned

log = logging.getLogger(__name__)

INTERNAL_FAILURE = (
    "the ingestion failed because of an internal error (it has been logged); retry it, and report it if it fails again"
)


def worker_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


class Lease:
    """The worker's hold on one attempt; implements the pipeline's Tracker."""

    def __init__(self, services: Services, ingestion_id: str, worker: str) -> None:
        self.services = services
        self.ingestion_id = ingestion_id
        self.worker = worker
        self.length = timedelta(seconds=services.settings.worker_lease_seconds)
        self.lost = False

    async def _advance(self, **values: Any) -> None:
        if self.lost:
            raise AttemptStopped(self.ingestion_id)
        async with self.services.db.session() as session:
            held = await ingestions.advance(session, self.ingestion_id, self.worker, self.length, **values)
        if not held:
            self.lost = True
            raise AttemptStopped(self.ingestion_id)

    async def progress(self, processed_bytes: int, processed_rows: int, message: str | None = None) -> None:
        values: dict[str, Any] = {"processed_bytes": processed_bytes, "processed_rows": processed_rows}
        if message is not None:
            values["status_message"] = message
        await self._advance(**values)

    async def record_mapping(self, mapping: dict[str, Any]) -> None:
        await self._advance(mapping=mapping)

    async def heartbeat(self) -> None:
        """Renew the lease while the pipeline is busy between writes (a long model call)."""
        interval = max(self.length.total_seconds() / 3, 0.05)
        while not self.lost:
            await asyncio.sleep(interval)
            try:
                await self._advance()
            except AttemptStopped:
                return
            except Exception:  # a database hiccup: the next beat or progress write tries again
                log.warning("lease renewal for ingestion %s failed", self.ingestion_id, exc_info=True)


class Worker:
    def __init__(self, services: Services, name: str | None = None) -> None:
        self.services = services
        self.name = name or worker_name()

    async def run(self, stop: asyncio.Event) -> None:
        """Claim and run attempts until `stop` is set; idle, poll every `worker_poll_seconds`."""
        log.info("ingestion worker %s started", self.name)
        next_sweep = time.monotonic()
        while not stop.is_set():
            try:
                if time.monotonic() >= next_sweep:
                    next_sweep = time.monotonic() + self.services.settings.upload_sweep_seconds
                    if aborted := await sweep_abandoned(self.services.db, self.services.objects):
                        log.info("aborted %d abandoned uploads", aborted)
                found = await self.run_once()
            except Exception:  # the database is unreachable: keep trying, do not die
                log.exception("ingestion worker %s could not claim work", self.name)
                found = None
            if found is None:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), self.services.settings.worker_poll_seconds)

    async def claim(self) -> tuple[Ingestion, Dataset] | None:
        lease = timedelta(seconds=self.services.settings.worker_lease_seconds)
        async with self.services.db.session() as session:
            attempt = await ingestions.claim(session, self.name, lease)
            if attempt is None:
                return None
            dataset = (await session.execute(select(Dataset).where(Dataset.id == attempt.dataset_id))).scalar_one()
            return attempt, dataset

    async def run_once(self) -> str | None:
        """Claim one attempt and run it to its end; its id, or None when the queue was empty."""
        claimed = await self.claim()
        if claimed is None:
            return None
        attempt, dataset = claimed
        await self.process(attempt, dataset)
        return attempt.id

    async def process(self, attempt: Ingestion, dataset: Dataset) -> None:
        lease = Lease(self.services, attempt.id, self.name)
        heartbeat = asyncio.create_task(lease.heartbeat())
        log.info("worker %s runs ingestion %s (%s)", self.name, attempt.id, attempt.name)
        try:
            with tempfile.TemporaryDirectory(prefix="ingest-", dir=self.workspace()) as workdir:
                outcome = await Ingest(self.services, attempt, dataset, lease, Path(workdir)).run()
            await self.finish(
                attempt,
                ingestions.SUCCEEDED,
                outcome.message,
                processed_rows=outcome.rows,
                processed_bytes=attempt.expected_total_bytes,
            )
        except AttemptStopped:
            await self.stopped(attempt, dataset)
        except IngestionFailed as exc:
            await discard(self.services, dataset, attempt.id)
            await self.finish(attempt, ingestions.FAILED, exc.message)
        except asyncio.CancelledError:
            # Shutting down: hand the attempt back so another worker takes it at once.
            async with self.services.db.session() as session:
                await ingestions.release(session, attempt.id, self.name)
            raise
        except Exception:
            log.exception("ingestion %s failed", attempt.id)
            await discard(self.services, dataset, attempt.id)
            await self.finish(attempt, ingestions.FAILED, INTERNAL_FAILURE)
        finally:
            heartbeat.cancel()

    def workspace(self) -> Path:
        folder = self.services.settings.data_dir / "work"
        folder.mkdir(parents=True, exist_ok=True)
        return folder

    async def finish(self, attempt: Ingestion, status: str, message: str, **values: Any) -> None:
        async with self.services.db.session() as session:
            done = await ingestions.finish(session, attempt.id, self.name, status, message, **values)
        if done:
            log.info("ingestion %s %s: %s", attempt.id, status, message)

    async def stopped(self, attempt: Ingestion, dataset: Dataset) -> None:
        """The attempt is no longer ours. If it was cancelled nobody else will clean up after
        it; if another worker took it over, its stage is that worker's now: leave it."""
        async with self.services.db.session() as session:
            status = await ingestions.status_of(session, attempt.id)
        if status == ingestions.CANCELLED:
            await discard(self.services, dataset, attempt.id)
        log.info("worker %s stopped ingestion %s (now %s)", self.name, attempt.id, status)


@contextlib.asynccontextmanager
async def running_worker(services: Services) -> AsyncIterator[Worker]:
    """A worker running in the background for the duration of the block (the `serve` process)."""
    worker = Worker(services)
    stop = asyncio.Event()
    task = asyncio.create_task(worker.run(stop))
    try:
        yield worker
    finally:
        stop.set()
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
