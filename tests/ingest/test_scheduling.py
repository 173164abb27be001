"""How a worker schedules attempts: several at once but one dataset's in order, a time
budget per attempt, cancel, and the sweep of work folders dead attempts left behind."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from datawell.cli import app as cli_app
from datawell.ingest.pipeline import Ingest
from datawell.ingest.sweeps import sweep_work, work_folder
from datawell.ingest.worker import Worker, running_worker
from datawell.services import Services
from tests.conftest import Account
from tests.ingest.support import attempt, create_dataset, drain, rows_of, upload
from tests.ingest.test_worker import orders_csv


@asynccontextmanager
async def slow_writes(monkeypatch: pytest.MonkeyPatch, slow_names: set[str]) -> AsyncIterator[asyncio.Event]:
    """Attempts of files named in `slow_names` block before writing rows until the event is set."""
    release = asyncio.Event()
    original = Ingest.write

    async def write(self: Ingest, *args: Any) -> Any:
        if self.attempt.name in slow_names:
            await release.wait()
        return await original(self, *args)

    monkeypatch.setattr(Ingest, "write", write)
    yield release
    release.set()


@asynccontextmanager
async def worker_running(services: Services) -> AsyncIterator[Worker]:
    """The worker `datawell serve` runs, polling often."""
    services.settings.worker_poll_seconds = 0.05
    async with running_worker(services) as worker:
        yield worker


async def until(check: Callable[[], Awaitable[bool]], seconds: float = 20) -> None:
    for _ in range(int(seconds / 0.05)):
        if await check():
            return
        await asyncio.sleep(0.05)
    raise AssertionError("the condition never came true")


async def status(services: Services, ingestion_id: str) -> str:
    return (await attempt(services, ingestion_id)).status


async def test_a_slow_attempt_does_not_hold_up_another_datasets(
    client, services: Services, alice: Account, monkeypatch: pytest.MonkeyPatch
) -> None:
    await create_dataset(client, alice, "slow")
    await create_dataset(client, alice, "quick")
    slow = await upload(services, "alice", "slow.csv", orders_csv(3), "slow")
    quick = await upload(services, "alice", "quick.csv", orders_csv(3), "quick")
    async with slow_writes(monkeypatch, {"slow.csv"}) as release, worker_running(services):
        await until(lambda: _is(services, quick, "SUCCEEDED"))
        assert await status(services, slow) == "RUNNING"
        release.set()
        await until(lambda: _is(services, slow, "SUCCEEDED"))


async def test_one_datasets_attempts_run_in_order(
    client, services: Services, alice: Account, monkeypatch: pytest.MonkeyPatch
) -> None:
    await create_dataset(client, alice)
    first = await upload(services, "alice", "first.csv", orders_csv(3))
    second = await upload(services, "alice", "second.csv", orders_csv(3))
    async with slow_writes(monkeypatch, {"first.csv"}) as release, worker_running(services):
        await until(lambda: _is(services, first, "RUNNING"))
        await asyncio.sleep(0.3)  # several polls: a free slot must not take the second one
        assert await status(services, second) == "QUEUED"
        release.set()
        await until(lambda: _is(services, second, "SUCCEEDED"))
    assert (await attempt(services, first)).status == "SUCCEEDED"


async def _is(services: Services, ingestion_id: str, wanted: str) -> bool:
    return await status(services, ingestion_id) == wanted


async def test_an_attempt_past_its_budget_fails_naming_the_stage(
    client, services: Services, alice: Account, monkeypatch: pytest.MonkeyPatch
) -> None:
    await create_dataset(client, alice)
    services.settings.ingest_attempt_seconds = 0.5
    ingestion_id = await upload(services, "alice", "slow.csv", orders_csv(3))
    async with slow_writes(monkeypatch, {"slow.csv"}):
        assert await drain(services) == [ingestion_id]
    failed = await attempt(services, ingestion_id)
    assert failed.status == "FAILED"
    # The stage is the attempt's last progress message (which one depends on the machine's speed).
    assert failed.status_message.startswith(
        "the ingestion ran out of its time budget of 0.5 seconds (DATAWELL_INGEST_ATTEMPT_SECONDS) while "
    )
    assert failed.status_message.endswith("; split the file, or raise the budget and retry it")
    assert await rows_of(services, "alice") == []


async def test_the_lease_outlives_a_long_stage(
    client, services: Services, alice: Account, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A stage longer than the lease: the heartbeat keeps the attempt, nobody takes it over."""
    await create_dataset(client, alice)
    services.settings.worker_lease_seconds = 1
    ingestion_id = await upload(services, "alice", "long.csv", orders_csv(3))
    async with slow_writes(monkeypatch, {"long.csv"}) as release:
        running = asyncio.create_task(drain(services, "first"))
        await until(lambda: _is(services, ingestion_id, "RUNNING"))
        await asyncio.sleep(2.5)
        assert await Worker(services, "second").run_once() is None
        release.set()
        assert await running == [ingestion_id]
    assert (await attempt(services, ingestion_id)).status == "SUCCEEDED"


async def test_cancel_a_queued_attempt(client, services: Services, alice: Account) -> None:
    await create_dataset(client, alice)
    ingestion_id = await upload(services, "alice", "orders.csv", orders_csv(3))
    response = await client.post(f"/api/v1/ingestionTracking/{ingestion_id}/cancel", headers=alice.headers)
    assert response.status_code == 200, response.text
    assert (response.json()["status"], response.json()["statusMessage"]) == ("CANCELLED", "cancelled by alice")
    assert await drain(services) == []
    again = await client.post(f"/api/v1/ingestionTracking/{ingestion_id}/cancel", headers=alice.headers)
    assert again.status_code == 409
    assert "only a QUEUED or RUNNING ingestion can be cancelled" in again.json()["message"]


async def test_cancel_a_running_attempt_stops_it_and_leaves_no_rows(
    client, services: Services, alice: Account, monkeypatch: pytest.MonkeyPatch
) -> None:
    await create_dataset(client, alice)
    services.settings.worker_lease_seconds = 1  # the heartbeat, and so the stop, comes every third of it
    first = await upload(services, "alice", "first.csv", orders_csv(3))
    await drain(services)  # the dataset's types are settled: the next attempt stages rows before it blocks
    ingestion_id = await upload(services, "alice", "orders.csv", orders_csv(20))
    async with slow_writes(monkeypatch, {"orders.csv"}), worker_running(services):
        await until(lambda: _is(services, ingestion_id, "RUNNING"))
        response = await client.post(f"/api/v1/ingestionTracking/{ingestion_id}/cancel", headers=alice.headers)
        assert response.status_code == 200
        await until(lambda: _stopped(services, ingestion_id), 10)
    assert (await attempt(services, ingestion_id)).status == "CANCELLED"
    assert {r["__ingestion_id"] for r in await rows_of(services, "alice")} == {first}


async def _stopped(services: Services, ingestion_id: str) -> bool:
    """The worker has let go: it no longer names the attempt's work folder."""
    return not list((services.settings.data_dir / "work").glob(f"ingest-{ingestion_id}-*"))


async def test_cancelled_while_publishing_takes_its_rows_back(
    client, services: Services, alice: Account, monkeypatch: pytest.MonkeyPatch
) -> None:
    await create_dataset(client, alice)
    ingestion_id = await upload(services, "alice", "orders.csv", orders_csv(5))
    publish = services.rows.publish

    async def publish_then_cancel(dataset: Any, attempt_id: str, **options: Any) -> int:
        published = await publish(dataset, attempt_id, **options)
        response = await client.post(f"/api/v1/ingestionTracking/{attempt_id}/cancel", headers=alice.headers)
        assert response.status_code == 200
        return published

    monkeypatch.setattr(services.rows, "publish", publish_then_cancel)
    assert await drain(services) == [ingestion_id]
    assert (await attempt(services, ingestion_id)).status == "CANCELLED"
    assert await rows_of(services, "alice") == []


async def test_cancel_needs_write_access_and_a_known_attempt(
    client, services: Services, alice: Account, bob: Account
) -> None:
    await create_dataset(client, alice)
    ingestion_id = await upload(services, "alice", "orders.csv", orders_csv(3))
    response = await client.post(f"/api/v1/ingestionTracking/{ingestion_id}/cancel", headers=bob.headers)
    assert response.status_code == 404
    assert (await attempt(services, ingestion_id)).status == "QUEUED"


def test_cancel_from_the_command_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DATAWELL_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("DATAWELL_EMBEDDINGS_ENABLED", "false")
    runner = CliRunner()
    missing = runner.invoke(cli_app, ["ingestions", "cancel", "00000000-0000-0000-0000-000000000000"])
    assert missing.exit_code == 1
    assert "does not exist" in missing.output


async def test_cancel_from_the_command_line_stops_a_queued_attempt(
    client, services: Services, alice: Account, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    await create_dataset(client, alice)
    ingestion_id = await upload(services, "alice", "orders.csv", orders_csv(3))
    monkeypatch.setenv("DATAWELL_DATA_DIR", str(tmp_path / "cli"))  # the same database, its own vector folder
    monkeypatch.setenv("DATAWELL_DATABASE_URL", services.settings.resolved_database_url)
    monkeypatch.setenv("DATAWELL_EMBEDDINGS_ENABLED", "false")
    result = await asyncio.to_thread(CliRunner().invoke, cli_app, ["ingestions", "cancel", ingestion_id])
    assert result.exit_code == 0, result.output
    assert f"cancelled ingestion {ingestion_id}" in result.output
    assert (await attempt(services, ingestion_id)).status == "CANCELLED"


async def test_work_folders_of_dead_attempts_are_swept(client, services: Services, alice: Account) -> None:
    await create_dataset(client, alice)
    workspace = services.settings.data_dir / "work"
    workspace.mkdir(parents=True)
    live_id = await upload(services, "alice", "live.csv", orders_csv(3))
    live_worker = Worker(services, "alive")
    claimed = await live_worker.claim()
    assert claimed is not None and claimed[0].id == live_id
    live = work_folder(workspace, live_id, "alive")
    killed = work_folder(workspace, live_id, "killed-before")  # the same attempt, under a worker that died
    finished = work_folder(workspace, "0b5ad9a4-7a39-4d6f-9d0e-2b0e9b8a0c11", "gone")
    for folder in (live, killed, finished):
        folder.mkdir()
        (folder / "source.csv").write_bytes(b"x" * 1000)
    assert await sweep_work(services.db, workspace) == 2
    assert [p.name for p in workspace.iterdir()] == [live.name]


async def test_a_starting_worker_sweeps_work_folders(client, services: Services) -> None:
    dead = work_folder(services.settings.data_dir / "work", "0b5ad9a4-7a39-4d6f-9d0e-2b0e9b8a0c11", "w")
    dead.mkdir(parents=True)
    async with worker_running(services):
        await until(lambda: _absent(dead))


async def _absent(path: Path) -> bool:
    return not path.exists()
