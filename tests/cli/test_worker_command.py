"""`datawell worker` as an operator runs it: a separate process that ingests queued
attempts from the shared database and stops cleanly on SIGTERM."""

from __future__ import annotations

import asyncio
import os
import signal
import sys

from datawell.config import Settings
from datawell.services import build_services
from datawell.storage.access import ensure_namespace
from datawell.storage.datasets import create_dataset
from datawell.storage.db import Database
from datawell.storage.ingestions import enqueue
from datawell.storage.tables import Ingestion
from datawell.storage.users import create_user


async def test_worker_process_ingests_and_stops_on_sigterm(settings: Settings) -> None:
    services = await build_services(settings)
    try:
        async with services.db.session() as session:
            user = await create_user(session, "alice")
            namespace = await ensure_namespace(session, user, "sales")
            dataset = await create_dataset(session, namespace, "orders", "", {"order_id": "id", "total": "EUR"}, user)
            await services.objects.put("uploads/o.csv", b"order_id,total\n1,2.5\n2,3\n")
            ingestion_id = (await enqueue(session, dataset.record, "uploads/o.csv", "o.csv", 26, user)).id
    finally:
        await services.close()

    environment = {
        **os.environ,
        "DATAWELL_DATA_DIR": str(settings.data_dir),
        "DATAWELL_DATABASE_URL": settings.resolved_database_url,
        "DATAWELL_JWT_SECRET": "test-secret-test-secret-test-secret",
        "DATAWELL_EMBEDDINGS_ENABLED": "false",
        # No real model in tests: the mapping falls back to name similarity.
        "DATAWELL_EMBEDDED_MODEL_ENABLED": "false",
        "DATAWELL_WORKER_POLL_SECONDS": "0.1",
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    }
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "datawell", "worker", "--name", "cli-worker", env=environment
    )
    database = Database(settings.resolved_database_url)
    try:
        status = None
        for _ in range(1200):
            async with database.session() as session:
                found = await session.get_one(Ingestion, ingestion_id)
                status, claimed_by, rows = found.status, found.claimed_by, found.processed_rows
            if status not in ("QUEUED", "RUNNING"):
                break
            await asyncio.sleep(0.1)
        assert (status, claimed_by, rows) == ("SUCCEEDED", "cli-worker", 2)
        process.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(process.wait(), 30) == 0
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
        await database.close()
