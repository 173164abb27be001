"""The blocking client: `Client("http://127.0.0.1:8000", token=...)`."""

from __future__ import annotations

import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path
from types import TracebackType
from typing import Any, Self, TypeVar

import httpx

from datawell.client.calls import API, Call, autorag_body, connection_options, error_of, export_call
from datawell.client.models import CompletedPart, IngestionAttempt, PartReceipt, RunEvent
from datawell.client.operations import Operations
from datawell.client.streams import STREAM, EventReader, Part, Progress, Tracker, parts_of, stream_error

T = TypeVar("T")


class Client(Operations):
    def __init__(
        self,
        server: str,
        token: str | None = None,
        *,
        timeout: float = 60.0,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        """`transport` replaces the network (httpx.MockTransport, for one)."""
        self.http = httpx.Client(**connection_options(server, token, timeout), transport=transport)

    def send(self, call: Call[T]) -> T:
        sent = 0
        while True:
            sent += 1
            try:
                return call.read(self.http.send(call.request(self.http)))
            except httpx.TransportError as error:
                if not call.may_resend(error, sent):
                    raise

    def upload(
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
        """Upload a file into a dataset: prepare, PUT the parts `concurrency` at a time,
        complete. Returns the ingestion attempt: when `wait`, once it has finished (check its
        `status`: SUCCEEDED, FAILED with a `status_message`, or CANCELLED); else as queued.
        A part that cannot be sent aborts the upload."""
        path = Path(path)
        size = path.stat().st_size
        prepared = self.prepare_upload(owner, namespace, dataset, path.name, size)
        parts = parts_of(prepared)
        tracker = Tracker(size, len(parts), progress)
        receipts: list[CompletedPart] = []
        try:
            with ThreadPoolExecutor(max_workers=concurrency) as pool:
                sending = {pool.submit(self.send_part, part, path): part for part in parts}
                for done in as_completed(sending):
                    receipt = done.result()
                    receipts.append(CompletedPart(part_number=receipt.part_number, etag=receipt.etag))
                    tracker.part_sent(sending[done])
        except BaseException:
            self.abort_upload(owner, namespace, dataset, prepared.upload_id, prepared.key)
            raise
        receipts.sort(key=lambda r: r.part_number)
        completed = self.complete_upload(owner, namespace, dataset, prepared.upload_id, prepared.key, receipts)
        attempt = self.get_attempt(completed.id)
        tracker.ingesting(attempt)
        while wait and not attempt.finished:
            time.sleep(poll_seconds)
            attempt = self.get_attempt(completed.id)
            tracker.ingesting(attempt)
        return attempt

    def send_part(self, part: Part, path: Path) -> PartReceipt:
        return self.put_part(part.url, part.read(path))

    def ask(self, namespace: str, query: str, **options: Any) -> Iterator[RunEvent]:
        """Ask the assistant and stream its events as they come (run-started, plan, step,
        answer-delta, answer, run-finished); options as for `autorag`. A run that fails
        raises ApiError."""
        body = autorag_body(namespace, query, **options)
        timeout = httpx.Timeout(self.http.timeout.connect, read=None)
        with self.http.stream(
            "POST", f"{API}/query/autorag", json=body, headers={"Accept": STREAM}, timeout=timeout
        ) as response:
            if response.is_error:
                raise stream_error(response, response.read())
            reader = EventReader(response.status_code)
            for line in response.iter_lines():
                if (event := reader.feed(line)) is not None:
                    yield event

    def iter_rows(self, owner: str, namespace: str, dataset: str, **options: Any) -> Iterator[dict[str, Any]]:
        """Every row of the dataset (options as for `rows`), page after page."""
        cursor = None
        while True:
            page = self.rows(owner, namespace, dataset, cursor=cursor, **options)
            yield from page.data
            cursor = page.metadata.next_cursor
            if cursor is None:
                return

    def export(
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
        """Write every matching row to `destination` as `format` (jsonl, csv or parquet),
        streamed to disk as the server sends it; returns the bytes written."""
        path, params = export_call(owner, namespace, dataset, format, columns, filter)
        timeout = httpx.Timeout(self.http.timeout.connect, read=None)
        with self.http.stream("GET", path, params=params, timeout=timeout) as response:
            if response.is_error:
                response.read()
                raise error_of(response)
            written = 0
            with Path(destination).open("wb") as file:
                for chunk in response.iter_bytes():
                    written += file.write(chunk)
        return written

    def close(self) -> None:
        self.http.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: tuple[type[BaseException] | None, BaseException | None, TracebackType | None]) -> None:
        self.close()
