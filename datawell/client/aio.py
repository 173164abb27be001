"""The asyncio client: `async with AsyncClient("http://127.0.0.1:8000", token=...) as client`."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from types import TracebackType
from typing import Any, Self, TypeVar

import httpx

from datawell.client.calls import API, Call, autorag_body, connection_options, error_of, export_call
from datawell.client.models import CompletedPart, IngestionAttempt, RunEvent
from datawell.client.operations import Operations
from datawell.client.streams import STREAM, EventReader, Part, Progress, Tracker, parts_of, stream_error

T = TypeVar("T")


class AsyncClient(Operations):
    def __init__(
        self,
        server: str,
        token: str | None = None,
        *,
        timeout: float = 60.0,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        """`transport` replaces the network (the app in process through httpx.ASGITransport, for one)."""
        self.http = httpx.AsyncClient(**connection_options(server, token, timeout), transport=transport)

    async def send(self, call: Call[T]) -> T:
        sent = 0
        while True:
            sent += 1
            try:
                return call.read(await self.http.send(call.request(self.http)))
            except httpx.TransportError as error:
                if not call.may_resend(error, sent):
                    raise

    async def upload(
        self,
        path: Path | str,
        owner: str,
        namespace: str,
        dataset: str,
        *,
        wait: bool = True,
        progress: Progress | None = None,
        concurrency: int = 4,
        poll_seconds: float = 0.5,
    ) -> IngestionAttempt:
        """As `Client.upload`: prepare, parallel part PUTs, complete, and (when `wait`) the
        ingestion until it finishes."""
        path = Path(path)
        size = path.stat().st_size
        prepared = await self.prepare_upload(owner, namespace, dataset, path.name, size)
        parts = parts_of(prepared)
        tracker = Tracker(size, len(parts), progress)
        slots = asyncio.Semaphore(concurrency)

        async def send(part: Part) -> CompletedPart:
            async with slots:
                data = await asyncio.to_thread(part.read, path)
                receipt = await self.put_part(part.url, data)
            tracker.part_sent(part)
            return CompletedPart(part_number=receipt.part_number, etag=receipt.etag)

        try:
            receipts = await asyncio.gather(*(send(part) for part in parts))
        except BaseException:
            await self.abort_upload(owner, namespace, dataset, prepared.upload_id, prepared.key)
            raise
        completed = await self.complete_upload(owner, namespace, dataset, prepared.upload_id, prepared.key, receipts)
        attempt = await self.get_attempt(completed.id)
        tracker.ingesting(attempt)
        while wait and not attempt.finished:
            await asyncio.sleep(poll_seconds)
            attempt = await self.get_attempt(completed.id)
            tracker.ingesting(attempt)
        return attempt

    async def ask(self, namespace: str, query: str, **options: Any) -> AsyncIterator[RunEvent]:
        """As `Client.ask`: the assistant's events as they come."""
        body = autorag_body(namespace, query, **options)
        timeout = httpx.Timeout(self.http.timeout.connect, read=None)
        async with self.http.stream(
            "POST", f"{API}/query/autorag", json=body, headers={"Accept": STREAM}, timeout=timeout
        ) as response:
            if response.is_error:
                raise stream_error(response, await response.aread())
            reader = EventReader(response.status_code)
            async for line in response.aiter_lines():
                if (event := reader.feed(line)) is not None:
                    yield event

    async def iter_rows(
        self, owner: str, namespace: str, dataset: str, **options: Any
    ) -> AsyncIterator[dict[str, Any]]:
        """As `Client.iter_rows`: every row, page after page."""
        cursor = None
        while True:
            page = await self.rows(owner, namespace, dataset, cursor=cursor, **options)
            for row in page.data:
                yield row
            cursor = page.metadata.next_cursor
            if cursor is None:
                return

    async def export(
        self,
        owner: str,
        namespace: str,
        dataset: str,
        destination: Path | str,
        *,
        format: str = "parquet",
        columns: list[str] | None = None,
        filter: str | None = None,
    ) -> int:
        """As `Client.export`: the whole file streamed to `destination`; the bytes written."""
        path, params = export_call(owner, namespace, dataset, format, columns, filter)
        timeout = httpx.Timeout(self.http.timeout.connect, read=None)
        async with self.http.stream("GET", path, params=params, timeout=timeout) as response:
            if response.is_error:
                await response.aread()
                raise error_of(response)
            written = 0
            with Path(destination).open("wb") as file:
                async for chunk in response.aiter_bytes():
                    written += file.write(chunk)
        return written

    async def aclose(self) -> None:
        await self.http.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, *exc: tuple[type[BaseException] | None, BaseException | None, TracebackType | None]
    ) -> None:
        await self.aclose()
