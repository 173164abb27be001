"""The ingestion worker: claims attempts from the database and runs them.

Any number of workers (the one inside `datawell serve`, `datawell worker` processes) share
the queue: a claim is one conditional UPDATE (FOR UPDATE SKIP LOCKED on PostgreSQL), so two
workers never take the same attempt. A worker holds a lease on its attempt, renewed by every
progress write and by a heartbeat; an attempt whose lease expired (its worker died) is
claimed again, and the new worker starts from an empty stage.

A worker runs up to `worker_concurrency` attempts at once, so one slow file never holds up
the others; the queue hands out only the oldest active attempt of each dataset, so the
attempts of one dataset still run one after another, in order. Each attempt has a time
budget (`ingest_attempt_seconds`): past it the attempt fails, naming the stage it was in.

Every `upload_sweep_seconds` a worker also aborts the open uploads abandoned a day past
their expiry and deletes parts left behind by closed ones (`storage.uploads`); at start and
every `work_sweep_seconds` it removes the work folders of attempts no worker runs any more
(`ingest.sweeps`)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import os
import shutil
import socket
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import timedelta
from pathlib import Path
from typing import Any, TypeVar

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from datawell.errors import IngestionFailed
from datawell.ingest.pipeline import AttemptStopped, Ingest, discard
from datawell.ingest.sweeps import sweep_work, work_folder
from datawell.observability.ingestion import IngestionTrace
from datawell.services import Services
from datawell.storage import ingestions
from datawell.storage.tables import Dataset, Ingestion
from datawell.storage.uploads import sweep_abandoned, sweep_closed_parts

log = logging.getLogger(__name__)

INTERNAL_FAILURE = (
    "the ingestion failed because of an internal error (it has been logged); retry it, and report it if it fails again"
)


Queued = TypeVar("Queued")


async def queue_work(services: Services, add: Callable[[AsyncSession], Awaitable[Queued]]) -> Queued:
    """Runs `add` (it queues an ingestion attempt) in one committed session, then wakes this
    process's worker so that it claims the attempt now rather than at its next poll."""
    async with services.db.session() as session:
        queued = await add(session)
    services.work_queued.set()
    return queued


def worker_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


# A progress call that changes nothing but the counts is written (and the lease checked) at
# most this often: each batch's write took 4-10 ms of the event loop and of the database
# (11 of them in a 100,000-row attempt). Never more than a tenth of the lease.
PROGRESS_SECONDS = 1.0


class Lease:
    """The worker's hold on one attempt; implements the pipeline's Tracker.

    A renewal at time t holds the attempt until t + `length`: no other worker can claim it
    before then. So a progress call that changes only the counts returns without a database
    write while the last renewal is less than `every` old (by both the monotonic and the wall
    clock, so a process stalled or a machine suspended in between finds out): the attempt is
    then this worker's for at least 9/10 of the lease after the call, as it is right after a
    renewal. A call that changes the stage (its message) always writes and checks: the last
    one before publishing ("publishing the rows") stops a worker that lost the attempt."""

    def __init__(self, services: Services, ingestion_id: str, worker: str, trace: IngestionTrace | None = None) -> None:
        self.services = services
        self.trace = trace
        self.ingestion_id = ingestion_id
        self.worker = worker
        self.length = timedelta(seconds=services.settings.worker_lease_seconds)
        self.every = min(PROGRESS_SECONDS, self.length.total_seconds() / 10)
        self.lost = False
        self.stage = "waiting to start"  # the last progress message: what the attempt is doing
        self.renewed = (-math.inf, -math.inf)  # (monotonic, wall) clocks before the last renewal

    async def _advance(self, **values: Any) -> None:
        if self.lost:
            raise AttemptStopped(self.ingestion_id)
        asked = (time.monotonic(), time.time())  # before: the lease runs from later than this
        # Not synced: a crash ends the lease anyway; the attempt's end is (`finish`).
        async with self.services.db.session(durable=False) as session:
            held = await ingestions.advance(session, self.ingestion_id, self.worker, self.length, **values)
        if not held:
            self.lost = True
            raise AttemptStopped(self.ingestion_id)
        self.renewed = asked

    def fresh(self) -> bool:
        """Renewed less than `every` ago, by both clocks."""
        monotonic, wall = self.renewed
        return time.monotonic() - monotonic < self.every and 0 <= time.time() - wall < self.every

    async def progress(self, processed_bytes: int, processed_rows: int, message: str | None = None) -> None:
        if self.lost:
            raise AttemptStopped(self.ingestion_id)
        if message in (None, self.stage) and self.fresh():
            return
        values: dict[str, Any] = {"processed_bytes": processed_bytes, "processed_rows": processed_rows}
        if message is not None:
            values["status_message"] = message
            self.stage = message
            if self.trace is not None:
                self.trace.stage(message)
        await self._advance(**values)

    async def record_mapping(self, mapping: dict[str, Any]) -> None:
        await self._advance(mapping=mapping)

    async def heartbeat(self, on_lost: Callable[[], None]) -> None:
        """Renew the lease while the pipeline is busy between writes (a long model call or
        parse); when the attempt turns out cancelled or taken over, call `on_lost` at once
        instead of waiting for the pipeline's next write."""
        interval = max(self.length.total_seconds() / 3, 0.05)
        while not self.lost:
            await asyncio.sleep(interval)
            try:
                await self._advance()
            except AttemptStopped:
                on_lost()
                return
            except Exception:  # a database hiccup: the next beat or progress write tries again
                log.warning("lease renewal for ingestion %s failed", self.ingestion_id, exc_info=True)


def stop_now(deadline: asyncio.Timeout) -> None:
    with contextlib.suppress(RuntimeError):  # the attempt has already left its deadline's block
        deadline.reschedule(asyncio.get_running_loop().time())


def out_of_time(seconds: float, stage: str) -> str:
    return (
        f"the ingestion ran out of its time budget of {seconds:g} seconds (DATAWELL_INGEST_ATTEMPT_SECONDS) "
        f"while {stage}; split the file, or raise the budget and retry it"
    )


class Worker:
    def __init__(self, services: Services, name: str | None = None) -> None:
        self.services = services
        self.name = name or worker_name()

    async def run(self, stop: asyncio.Event) -> None:
        """Claim and run attempts, up to `worker_concurrency` at once, until `stop` is set;
        with every slot busy or the queue empty, look again every `worker_poll_seconds`, as
        soon as an attempt ends, or as soon as this process queues one (`work_queued`: a
        small upload then waits milliseconds, not up to a poll, to be claimed)."""
        log.info("ingestion worker %s started", self.name)
        settings = self.services.settings
        running: set[asyncio.Task[None]] = set()
        next_upload_sweep = next_work_sweep = time.monotonic()
        try:
            with contextlib.suppress(Exception):  # the loop below says when the database is unreachable
                await self.services.rows.connect()
            while not stop.is_set():
                try:
                    # Large SQLite stages find their writer process started (`RowStore.prepare_writer`).
                    self.services.rows.prepare_writer()
                    if time.monotonic() >= next_upload_sweep:
                        next_upload_sweep = time.monotonic() + settings.upload_sweep_seconds
                        await self.sweep_uploads()
                    if time.monotonic() >= next_work_sweep:
                        next_work_sweep = time.monotonic() + settings.work_sweep_seconds
                        await sweep_work(self.services.db, self.workspace())
                    while len(running) < settings.worker_concurrency and (claimed := await self.claim()):
                        running.add(asyncio.create_task(self.process(*claimed)))
                except Exception:  # the database is unreachable: keep trying, do not die
                    log.exception("ingestion worker %s could not claim work", self.name)
                stopping = asyncio.ensure_future(stop.wait())
                queued = asyncio.ensure_future(self.services.work_queued.wait())
                done, _ = await asyncio.wait(
                    {stopping, queued, *running},
                    timeout=settings.worker_poll_seconds,
                    return_when=asyncio.FIRST_COMPLETED,
                )
                stopping.cancel()
                queued.cancel()
                self.services.work_queued.clear()
                running -= done
        finally:
            # Shutting down: each running attempt goes back to the queue (see `process`).
            for task in running:
                task.cancel()
            await asyncio.gather(*running, return_exceptions=True)

    async def sweep_uploads(self) -> None:
        if aborted := await sweep_abandoned(self.services.db, self.services.objects):
            log.info("aborted %d abandoned uploads", aborted)
        if deleted := await sweep_closed_parts(self.services.db, self.services.objects):
            log.info("deleted the parts left behind by %d closed uploads", deleted)

    async def claim(self) -> tuple[Ingestion, Dataset] | None:
        lease = timedelta(seconds=self.services.settings.worker_lease_seconds)
        async with self.services.db.session(durable=False) as session:  # a crash ends the lease anyway
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
        trace = IngestionTrace(attempt.id, dataset.name, attempt.name)
        lease = Lease(self.services, attempt.id, self.name, trace)
        ended = "stopped"
        budget = self.services.settings.ingest_attempt_seconds
        # The attempt's deadline; a lost lease moves it to now, so the pipeline stops at once.
        deadline = asyncio.timeout(budget)
        heartbeat = asyncio.create_task(lease.heartbeat(lambda: stop_now(deadline)))
        workdir = work_folder(self.workspace(), attempt.id, self.name)
        log.info("worker %s runs ingestion %s (%s)", self.name, attempt.id, attempt.name)
        try:
            workdir.mkdir()
            with trace.current():
                async with deadline:
                    outcome = await Ingest(self.services, attempt, dataset, lease, workdir).run()
            done = await self.finish(
                attempt,
                ingestions.SUCCEEDED,
                outcome.message,
                processed_rows=outcome.rows,
                processed_bytes=attempt.expected_total_bytes,
                **({"mapping": outcome.mapping} if outcome.mapping is not None else {}),
            )
            if done:
                ended = "succeeded"
            else:  # cancelled (or taken over) while it published
                await self.stopped(attempt, dataset)
        except AttemptStopped:
            await self.stopped(attempt, dataset)
        except IngestionFailed as exc:
            ended = "failed"
            await discard(self.services, dataset, attempt.id)
            await self.finish(attempt, ingestions.FAILED, exc.message)
        except TimeoutError:
            # A stage still running in a thread cannot be interrupted; it ends on its own and
            # its results are discarded with the attempt.
            if lease.lost:
                await self.stopped(attempt, dataset)
            elif deadline.expired():
                ended = "failed"
                await discard(self.services, dataset, attempt.id)
                await self.finish(attempt, ingestions.FAILED, out_of_time(budget, lease.stage))
            else:
                ended = "failed"
                await self.failed_internally(attempt, dataset)
        except asyncio.CancelledError:
            # Shutting down: hand the attempt back so another worker takes it at once.
            async with self.services.db.session() as session:
                await ingestions.release(session, attempt.id, self.name)
            raise
        except Exception:
            ended = "failed"
            await self.failed_internally(attempt, dataset)
        finally:
            heartbeat.cancel()
            self.services.rows.checkpoint_soon()  # the stage's rows, from the log into the database
            if ended == "succeeded":
                trace.finish(ended, outcome.rows, attempt.expected_total_bytes)
            else:
                trace.finish(ended, 0, 0)
            await asyncio.to_thread(shutil.rmtree, workdir, True)

    async def failed_internally(self, attempt: Ingestion, dataset: Dataset) -> None:
        log.exception("ingestion %s failed", attempt.id)
        await discard(self.services, dataset, attempt.id)
        await self.finish(attempt, ingestions.FAILED, INTERNAL_FAILURE)

    def workspace(self) -> Path:
        folder = self.services.settings.data_dir / "work"
        folder.mkdir(parents=True, exist_ok=True)
        return folder

    async def finish(self, attempt: Ingestion, status: str, message: str, **values: Any) -> bool:
        async with self.services.db.session() as session:
            done = await ingestions.finish(session, attempt.id, self.name, status, message, **values)
        if done:
            log.info("ingestion %s %s: %s", attempt.id, status, message)
        return done

    async def stopped(self, attempt: Ingestion, dataset: Dataset) -> None:
        """The attempt is no longer ours. If it was cancelled nobody else will clean up after
        it, so its staged and (if it got that far) published rows go; if another worker took
        it over, its stage is that worker's now: leave it."""
        async with self.services.db.session() as session:
            status = await ingestions.status_of(session, attempt.id)
        if status == ingestions.CANCELLED:
            await discard(self.services, dataset, attempt.id, published=True)
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
