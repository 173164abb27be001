"""The object store: where uploaded files land. `local` (a folder, default) and, with the
upload work, `s3`. The ingestion worker reads objects only through `download`."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path
from typing import Protocol

from datawell.errors import NotFound


class ObjectStore(Protocol):
    async def put(self, key: str, data: bytes) -> None: ...

    async def download(self, key: str, destination: Path) -> None:
        """Copy the object to a local file (raises NotFound when there is no such object)."""
        ...

    async def size(self, key: str) -> int: ...

    async def delete(self, key: str) -> None: ...


class LocalObjectStore:
    def __init__(self, root: Path) -> None:
        self.root = root

    def path(self, key: str) -> Path:
        path = (self.root / key).resolve()
        if not path.is_relative_to(self.root.resolve()):
            raise NotFound(f"no object {key!r}")
        return path

    async def put(self, key: str, data: bytes) -> None:
        path = self.path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        await asyncio.to_thread(path.write_bytes, data)

    async def download(self, key: str, destination: Path) -> None:
        path = self.path(key)
        if not path.is_file():
            raise NotFound(f"no object {key!r}")
        await asyncio.to_thread(shutil.copyfile, path, destination)

    async def size(self, key: str) -> int:
        path = self.path(key)
        if not path.is_file():
            raise NotFound(f"no object {key!r}")
        return path.stat().st_size

    async def delete(self, key: str) -> None:
        self.path(key).unlink(missing_ok=True)
