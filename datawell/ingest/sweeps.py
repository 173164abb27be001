"""Work folders of attempts no worker runs any more.

Each attempt works in `data/work/ingest-<attempt id>-<worker tag>`, which its worker removes
when the attempt ends. A worker killed outright (kill -9, power loss) leaves its folder,
holding a full copy of the uploaded file; a sweep removes every folder whose attempt is no
longer RUNNING under a live lease of the worker that made it. Folders of live attempts, of
this worker or of another process on the same machine, are kept."""

from __future__ import annotations

import asyncio
import hashlib
import logging
import shutil
from pathlib import Path

from sqlalchemy import select

from datawell.storage import ingestions
from datawell.storage.db import Database
from datawell.storage.tables import Ingestion, utcnow

PREFIX = "ingest-"
UUID_LENGTH = 36

log = logging.getLogger(__name__)


def worker_tag(worker: str) -> str:
    return hashlib.sha256(worker.encode()).hexdigest()[:12]


def work_folder(workspace: Path, attempt_id: str, worker: str) -> Path:
    return workspace / f"{PREFIX}{attempt_id}-{worker_tag(worker)}"


async def sweep_work(db: Database, workspace: Path) -> int:
    """Remove the work folders of attempts no live worker runs; how many were removed."""
    folders = [p for p in await asyncio.to_thread(lambda: list(workspace.glob(PREFIX + "*"))) if p.is_dir()]
    if not folders:
        return 0
    named = {p: p.name[len(PREFIX) : len(PREFIX) + UUID_LENGTH] for p in folders}
    async with db.session() as session:
        rows = await session.execute(
            select(Ingestion.id, Ingestion.claimed_by).where(
                Ingestion.id.in_(set(named.values())),
                Ingestion.status == ingestions.RUNNING,
                Ingestion.lease_expires_at > utcnow(),
            )
        )
        live = {f"{PREFIX}{i}-{worker_tag(w)}" for i, w in rows if w}
    dead = [p for p in folders if p.name not in live]
    for folder in dead:
        await asyncio.to_thread(shutil.rmtree, folder, True)
    if dead:
        log.info("removed %d work folders of ended or abandoned ingestions", len(dead))
    return len(dead)
