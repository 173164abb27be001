"""The worker: bad input fails with its line, a dead worker's job is taken again without
duplicates, concurrent workers never share a job, shutdown hands a job back."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import update

from datawell.ingest import worker
from datawell.ingest.pipeline import AttemptStopped, Ingest
from datawell.ingest.worker import Lease, Worker
from datawell.services import Services
from datawell.storage.tables import Ingestion, utcnow
from datawell.storage.vectors import ROWS
from tests.conftest import Account
from tests.ingest.support import attempt, create_dataset, dataset_ref, drain, rows_of, upload

ROWS_IN_FILE = 40


def orders_csv(count: int = ROWS_IN_FILE) -> bytes:
    return ("order_id,customer,total\n" + "".join(f"{i},customer {i},{i}.5\n" for i in range(1, count + 1))).encode()


async def test_malformed_csv_fails_with_the_line_number(client, services: Services, alice: Account) -> None:
    await create_dataset(client, alice)
    services.settings.ingest_batch_rows = 2  # some batches are written before the bad line
    data = b"order_id,customer,total\n1,Ada,1\n2,Bob,2\n3,Cy,3\n4,Dee,4,extra\n5,Eve,5\n"
    ingestion_id = await upload(services, "alice", "orders.csv", data)
    await drain(services)
    failed = await attempt(services, ingestion_id)
    assert failed.status == "FAILED"
    assert failed.status_message.startswith("line 5: expected 3 fields as in the header, found 4")
    assert await rows_of(services, "alice") == []
    ref = await dataset_ref(services, "alice")
    assert await services.vectors.count(ROWS, ref.record.id) == 0


async def test_unclosed_quote_names_the_line_it_opens_on(client, services: Services, alice: Account) -> None:
    await create_dataset(client, alice)
    ingestion_id = await upload(services, "alice", "q.csv", b'order_id,customer\n1,Ada\n2,"Bob\n3,Cy\n')
    await drain(services)
    failed = await attempt(services, ingestion_id)
    assert failed.status == "FAILED"
    assert failed.status_message.startswith("line 3: unexpected end of data")


async def test_a_value_that_does_not_fit_the_established_type_fails_with_its_line(
    client, services: Services, alice: Account
) -> None:
    await create_dataset(client, alice)
    await upload(services, "alice", "first.csv", b"order_id,total\n1,2.5\n")
    second = await upload(services, "alice", "second.csv", b"order_id,total\n2,3\n3,abc\n")
    await drain(services)
    failed = await attempt(services, second)
    assert failed.status == "FAILED"
    assert failed.status_message.startswith("line 3: field 'total' expects a number, got 'abc'")
    assert [r["order_id"] for r in await rows_of(services, "alice")] == [1]


async def test_invalid_json_line_is_named(client, services: Services, alice: Account) -> None:
    await create_dataset(client, alice)
    ingestion_id = await upload(services, "alice", "o.jsonl", b'{"order_id": 1}\n{"order_id": 2,}\n')
    await drain(services)
    failed = await attempt(services, ingestion_id)
    assert failed.status == "FAILED"
    assert failed.status_message.startswith("line 2: not valid JSON")


async def test_a_missing_object_fails_with_a_message(client, services: Services, alice: Account) -> None:
    await create_dataset(client, alice)
    ingestion_id = await upload(services, "alice", "gone.csv", b"order_id\n1\n", put=False)
    await drain(services)
    failed = await attempt(services, ingestion_id)
    assert failed.status == "FAILED"
    assert "no longer in the object store" in failed.status_message


class Killed(BaseException):
    """Stands for the process dying: nothing after it runs, not even error handling."""


class DyingTracker:
    """A worker's lease that dies after writing some batches."""

    def __init__(self, lease: Lease, batches: int) -> None:
        self.lease = lease
        self.batches = batches

    async def progress(self, processed_bytes: int, processed_rows: int, message: str | None = None) -> None:
        await self.lease.progress(processed_bytes, processed_rows, message)
        if message == "writing rows":
            self.batches -= 1
            if self.batches < 0:
                raise Killed

    async def record_mapping(self, mapping: dict[str, Any]) -> None:
        await self.lease.record_mapping(mapping)


async def expire_leases(services: Services) -> None:
    async with services.db.session() as session:
        await session.execute(update(Ingestion).values(lease_expires_at=utcnow() - timedelta(seconds=1)))


async def test_a_dead_workers_job_is_taken_again_without_duplicates(
    client, services: Services, alice: Account, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    await create_dataset(client, alice)
    services.settings.ingest_batch_rows = 7
    monkeypatch.setattr(worker, "PROGRESS_SECONDS", 0)  # every batch's progress is written
    ingestion_id = await upload(services, "alice", "orders.csv", orders_csv())

    first = Worker(services, "first")
    claimed = await first.claim()
    assert claimed is not None
    job, dataset = claimed
    lease = Lease(services, job.id, first.name)
    with pytest.raises(Killed):
        await Ingest(services, job, dataset, DyingTracker(lease, batches=3), tmp_path).run()
    dead = await attempt(services, ingestion_id)
    assert (dead.status, dead.claimed_by, dead.processed_rows) == ("RUNNING", "first", 21)
    assert await rows_of(services, "alice") == []  # staged rows are invisible
    # Rows are embedded after they are published (issue 19), so the dead run left no vectors.
    assert await services.vectors.count(ROWS, dataset.id) == 0

    second = Worker(services, "second")
    assert await second.run_once() is None  # the lease has not expired yet
    await expire_leases(services)
    assert await second.run_once() == ingestion_id

    done = await attempt(services, ingestion_id)
    assert (done.status, done.claimed_by, done.processed_rows) == ("SUCCEEDED", "second", ROWS_IN_FILE)
    rows = await rows_of(services, "alice")
    assert sorted(r["order_id"] for r in rows) == list(range(1, ROWS_IN_FILE + 1))
    assert await services.vectors.count(ROWS, dataset.id) == ROWS_IN_FILE
    with pytest.raises(AttemptStopped):  # the first worker, were it only stalled, finds out at once
        await lease.progress(0, 0)


async def test_progress_within_a_second_of_a_renewal_is_not_written_but_a_new_stage_is(
    client, services: Services, alice: Account
) -> None:
    """Counts alone are written at most once a second (`Lease.every`): the lease renewed
    less than that ago still has most of its length to run. A new stage is always written,
    and checked."""
    await create_dataset(client, alice)
    services.settings.worker_lease_seconds = 3  # a tenth of it: 0.3 s between writes of counts
    ingestion_id = await upload(services, "alice", "orders.csv", orders_csv(3))
    claimed = await Worker(services, "first").claim()
    assert claimed is not None
    lease = Lease(services, ingestion_id, "first")
    assert lease.every == pytest.approx(0.3)
    await lease.progress(10, 1, "writing rows")
    await lease.progress(20, 2, "writing rows")
    await lease.progress(30, 3)
    assert ((a := await attempt(services, ingestion_id)).processed_bytes, a.processed_rows) == (10, 1)
    await lease.progress(40, 4, "publishing the rows")
    assert ((a := await attempt(services, ingestion_id)).processed_bytes, a.status_message) == (
        40,
        "publishing the rows",
    )
    await asyncio.sleep(0.35)
    await lease.progress(50, 5)
    assert (await attempt(services, ingestion_id)).processed_rows == 5


async def test_a_worker_that_lost_its_attempt_stops_before_it_publishes(
    client, services: Services, alice: Account, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first worker's lease expires while it writes (it stalled) and a second worker
    claims the attempt: however recently the first renewed, the stage change to publishing
    checks, so the first stops there and never publishes; the second ingests the file once."""
    await create_dataset(client, alice)
    services.settings.ingest_batch_rows = 7
    ingestion_id = await upload(services, "alice", "orders.csv", orders_csv())
    first = Worker(services, "first")
    claimed = await first.claim()
    assert claimed is not None
    job, dataset = claimed
    lease = Lease(services, job.id, first.name)
    publish = services.rows.publish
    published: list[str] = []

    async def spy(*args: Any, **kwargs: Any) -> Any:
        published.append(args[1])
        return await publish(*args, **kwargs)

    monkeypatch.setattr(services.rows, "publish", spy)
    taken = False
    progress = lease.progress

    async def taken_over_while_writing(processed_bytes: int, processed_rows: int, message: str | None = None) -> None:
        nonlocal taken
        if processed_rows and not taken:  # some rows staged: the lease runs out, the second claims
            taken = True
            await expire_leases(services)
            assert await Worker(services, "second").claim() is not None
        await progress(processed_bytes, processed_rows, message)

    monkeypatch.setattr(lease, "progress", taken_over_while_writing)
    with pytest.raises(AttemptStopped):
        await Ingest(services, job, dataset, lease, tmp_path).run()
    assert taken and published == []
    assert await rows_of(services, "alice") == []
    assert (await attempt(services, ingestion_id)).claimed_by == "second"
    await expire_leases(services)
    assert await Worker(services, "third").run_once() == ingestion_id
    assert published == [ingestion_id]
    rows = await rows_of(services, "alice")
    assert sorted(r["order_id"] for r in rows) == list(range(1, ROWS_IN_FILE + 1))


async def test_a_job_published_before_its_worker_died_is_not_published_twice(
    client, services: Services, alice: Account
) -> None:
    await create_dataset(client, alice)
    ingestion_id = await upload(services, "alice", "orders.csv", orders_csv(5))
    first = Worker(services, "first")
    claimed = await first.claim()
    assert claimed is not None
    job, dataset = claimed

    # Run everything (publish included), then "die" before the attempt is marked SUCCEEDED.
    outcome = await Ingest(services, job, dataset, Lease(services, job.id, "first"), services.settings.data_dir).run()
    assert outcome.rows == 5
    assert (await attempt(services, ingestion_id)).status == "RUNNING"
    await expire_leases(services)
    assert await Worker(services, "second").run_once() == ingestion_id
    assert len(await rows_of(services, "alice")) == 5
    assert (await attempt(services, ingestion_id)).status == "SUCCEEDED"


async def test_two_workers_racing_for_one_job_only_one_wins(client, services: Services, alice: Account) -> None:
    await create_dataset(client, alice)
    await upload(services, "alice", "orders.csv", orders_csv(3))
    workers = [Worker(services, f"w{i}") for i in range(2)]
    claims = await asyncio.gather(*(w.claim() for w in workers))
    assert sum(c is not None for c in claims) == 1


async def test_many_workers_many_jobs_each_job_claimed_once(client, services: Services, alice: Account) -> None:
    jobs = set()
    for i in range(5):  # one dataset each: the attempts of one dataset run one after another
        await create_dataset(client, alice, f"d{i}")
        jobs.add(await upload(services, "alice", f"o{i}.csv", orders_csv(2), f"d{i}"))
    workers = [Worker(services, f"w{i}") for i in range(8)]
    claims = await asyncio.gather(*(w.claim() for w in workers))
    claimed = [c[0] for c in claims if c is not None]
    assert sorted(c.id for c in claimed) == sorted(jobs)
    assert len({c.claimed_by for c in claimed}) == 5


async def test_concurrent_workers_ingest_every_job_once(client, services: Services, alice: Account) -> None:
    await create_dataset(client, alice)
    jobs = [await upload(services, "alice", f"o{i}.csv", orders_csv(4)) for i in range(4)]
    done = await asyncio.gather(*(drain(services, f"w{i}") for i in range(3)))
    assert sorted(j for d in done for j in d) == sorted(jobs)
    assert len(await rows_of(services, "alice")) == 16


async def test_shutdown_hands_the_running_job_back(client, services: Services, alice: Account) -> None:
    await create_dataset(client, alice)
    ingestion_id = await upload(services, "alice", "orders.csv", orders_csv())
    started = asyncio.Event()
    original = Ingest.write

    async def slow_write(self: Ingest, *args: Any) -> Any:
        started.set()
        await asyncio.sleep(60)
        return await original(self, *args)

    Ingest.write = slow_write  # type: ignore[method-assign]
    try:
        stop = asyncio.Event()
        task = asyncio.create_task(Worker(services, "stopping").run(stop))
        await asyncio.wait_for(started.wait(), 30)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    finally:
        Ingest.write = original  # type: ignore[method-assign]
    released = await attempt(services, ingestion_id)
    assert (released.status, released.claimed_by) == ("QUEUED", None)
    assert await drain(services) == [ingestion_id]
    assert len(await rows_of(services, "alice")) == ROWS_IN_FILE


async def test_the_serve_process_runs_a_worker(settings, chat_models) -> None:
    """With `run_worker_in_process` the app's lifespan runs a worker that ingests queued attempts."""
    from datawell.app import create_app
    from datawell.llm.embeddings import HashingEmbedder
    from datawell.services import Overrides
    from tests.conftest import make_account, served

    settings.run_worker_in_process = True
    settings.worker_poll_seconds = 0.05
    async with served(create_app(settings, Overrides(models=chat_models, embedder=HashingEmbedder()))) as running:
        import httpx

        transport = httpx.ASGITransport(app=running.asgi)
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
            account = await make_account(running.services, "alice")
            await create_dataset(client, account)
            ingestion_id = await upload(running.services, "alice", "orders.csv", orders_csv(3))
            for _ in range(400):
                if (await attempt(running.services, ingestion_id)).status == "SUCCEEDED":
                    break
                await asyncio.sleep(0.05)
            assert (await attempt(running.services, ingestion_id)).status == "SUCCEEDED"


async def test_a_completed_upload_is_claimed_at_once_not_at_the_next_poll(settings, chat_models) -> None:
    """`complete` wakes the serve process's worker: with a poll of a minute, a small file is
    still ingested within seconds (issue 29: small files at the speed of small files)."""
    import time

    import httpx

    from datawell.app import create_app
    from datawell.llm.embeddings import HashingEmbedder
    from datawell.services import Overrides
    from tests.conftest import make_account, served

    settings.run_worker_in_process = True
    settings.worker_poll_seconds = 60
    async with served(create_app(settings, Overrides(models=chat_models, embedder=HashingEmbedder()))) as running:
        transport = httpx.ASGITransport(app=running.asgi)
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
            account = await make_account(running.services, "alice")
            await create_dataset(client, account)
            await asyncio.sleep(0.2)  # the worker has looked once and now sleeps its minute
            data = orders_csv(3)
            base = "/api/v1/upload/multipart/alice/sales/orders"
            prepared = (await client.post(f"{base}/prepare", json={"filename": "o.csv", "size": len(data)},
                                          headers=account.headers)).json()  # fmt: skip
            [part] = prepared["presignedUrls"]
            assert (await client.put(part["url"], content=data)).status_code == 200
            started = time.monotonic()
            completed = await client.post(
                f"{base}/complete",
                json={"uploadId": prepared["uploadId"], "key": prepared["key"]},
                headers=account.headers,
            )
            ingestion_id = completed.json()["id"]
            while (await attempt(running.services, ingestion_id)).status != "SUCCEEDED":
                assert time.monotonic() - started < 5, "the attempt waited for the worker's next poll"
                await asyncio.sleep(0.02)
