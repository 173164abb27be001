"""A part PUT racing the abort or completion of its upload (local object store), made
deterministic: the PUT is held after its checks passed and before it writes, and the
deletion of the parts is held where `shutil.rmtree` has listed and emptied the folder but
not yet removed it. On the code before, the PUT then wrote its part into the emptied
folder, `rmdir` failed silently and the part stayed on disk (2 of 15 trials of an outside
attack hit that window)."""

from __future__ import annotations

import asyncio
import os
import shutil
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from datawell.services import Services
from datawell.storage.objects import DELETING, LocalObjectStore
from datawell.storage.tables import Upload
from datawell.storage.uploads import sweep_closed_parts
from tests.api.test_uploads import BASE, ORDERS
from tests.conftest import Account

WAIT = 10  # seconds; every hold below is released long before


@pytest.fixture
async def orders(client: httpx.AsyncClient, alice: Account) -> None:
    response = await client.post("/api/v1/ingest/new/sales/orders", json=ORDERS, headers=alice.headers)
    assert response.status_code == 201


class Holds:
    """The two holds: `at_write`/`go` around the part's write, `listed`/`release` inside the
    first deletion of a parts folder."""

    def __init__(self, store: LocalObjectStore) -> None:
        self.store = store
        self.at_write = asyncio.Event()
        self.go = asyncio.Event()
        self.listed = threading.Event()
        self.release = threading.Event()
        self.deletions = 0

    def rmtree(self, real: Callable[..., None]) -> Callable[..., None]:
        def held(path: Any, ignore_errors: bool = False, *args: Any, **kwargs: Any) -> None:
            folder = Path(path)
            if folder.parent != self.store.parts_root or self.deletions:
                return real(path, ignore_errors, *args, **kwargs)
            self.deletions += 1
            # What rmtree does: list the folder, delete what it listed, then remove the folder.
            for entry in list(folder.iterdir()):
                entry.unlink()
            self.listed.set()
            self.release.wait(WAIT)
            try:
                os.rmdir(folder)
            except OSError:
                if not ignore_errors:
                    raise

        return held


@pytest.fixture
def holds(services: Services, monkeypatch: pytest.MonkeyPatch) -> Iterator[Holds]:
    store = services.objects
    assert isinstance(store, LocalObjectStore)
    holds = Holds(store)
    write_part = store.write_part

    async def held_write(*args: Any) -> str:
        holds.at_write.set()
        await asyncio.wait_for(holds.go.wait(), WAIT)
        return await write_part(*args)

    monkeypatch.setattr(store, "write_part", held_write)
    monkeypatch.setattr(shutil, "rmtree", holds.rmtree(shutil.rmtree))
    yield holds
    holds.release.set()


async def ten_bytes(client: httpx.AsyncClient, alice: Account) -> dict[str, Any]:
    """A prepared one-part upload of 10 bytes."""
    response = await client.post(f"{BASE}/prepare", json={"filename": "a.csv", "size": 10}, headers=alice.headers)
    assert response.status_code == 200, response.text
    return dict(response.json())


def left_in(store: LocalObjectStore) -> list[str]:
    """Everything under the parts folder: parts, temporary files, folders being deleted."""
    return sorted(str(p.relative_to(store.parts_root)) for p in store.parts_root.rglob("*"))


async def race(
    client: httpx.AsyncClient, holds: Holds, url: str, data: bytes, closing: Any
) -> tuple[httpx.Response, httpx.Response]:
    """PUT `data` to `url`, held after its checks; close the upload (`closing`, a request)
    until its deletion of the parts is in its window; let the PUT finish, then the deletion.
    The PUT's answer and the closing request's."""
    putting = asyncio.create_task(client.put(url, content=data))
    await asyncio.wait_for(holds.at_write.wait(), WAIT)
    closed = asyncio.create_task(closing)
    # Code that deletes without rmtree never enters the window: the race then runs as it may.
    await asyncio.to_thread(holds.listed.wait, 3)
    holds.go.set()
    answer = await putting
    holds.release.set()
    return answer, await closed


async def test_a_part_landing_during_abort_is_refused_and_nothing_stays(
    client: httpx.AsyncClient, services: Services, holds: Holds, alice: Account, orders: None
) -> None:
    prepared = await ten_bytes(client, alice)
    body = {"uploadId": prepared["uploadId"], "key": prepared["key"]}
    aborting = client.post(f"{BASE}/abort", json=body, headers=alice.headers)

    answer, aborted = await race(client, holds, prepared["presignedUrls"][0]["url"], b"0123456789", aborting)

    assert aborted.status_code == 200, aborted.text
    assert left_in(holds.store) == []
    assert answer.status_code == 409, answer.text
    assert answer.json()["error_code"] == "CONFLICT", answer.json()
    assert f"upload {prepared['uploadId']} " in answer.json()["message"]


async def test_a_part_landing_during_completion_is_refused_and_nothing_stays(
    client: httpx.AsyncClient, services: Services, holds: Holds, alice: Account, orders: None, tmp_path: Path
) -> None:
    prepared = await ten_bytes(client, alice)
    url = prepared["presignedUrls"][0]["url"]
    holds.go.set()
    first = await client.put(url, content=b"0123456789")
    assert first.status_code == 200, first.text
    holds.at_write.clear()
    holds.go.clear()
    body = {"uploadId": prepared["uploadId"], "key": prepared["key"]}
    completing = client.post(f"{BASE}/complete", json=body, headers=alice.headers)

    # The same part again, other bytes: it arrives while the first one is being assembled.
    answer, completed = await race(client, holds, url, b"abcdefghij", completing)

    assert completed.status_code == 202, completed.text
    assert left_in(holds.store) == []
    assert answer.status_code == 409, answer.text
    await services.objects.download(prepared["key"], tmp_path / "assembled")
    assert (tmp_path / "assembled").read_bytes() == b"0123456789"


async def test_a_folder_left_mid_deletion_is_swept(
    client: httpx.AsyncClient, services: Services, alice: Account, orders: None
) -> None:
    """A process that died between moving a closed upload's folder aside and deleting it
    leaves the moved folder; the worker's sweep of closed uploads deletes it."""
    store = services.objects
    assert isinstance(store, LocalObjectStore)
    prepared = await ten_bytes(client, alice)
    upload_id = prepared["uploadId"]
    assert (await client.put(prepared["presignedUrls"][0]["url"], content=b"0123456789")).status_code == 200
    moved = store.parts_root / f"{DELETING}{upload_id}.0"
    os.rename(store.upload_dir(upload_id), moved)
    async with services.db.session() as session:
        upload = await session.get(Upload, upload_id)
        assert upload is not None
        upload.status = "ABORTED"

    assert await store.multipart_ids() == [upload_id]
    assert await sweep_closed_parts(services.db, services.objects) == 1
    assert left_in(store) == []
    assert await sweep_closed_parts(services.db, services.objects) == 0
