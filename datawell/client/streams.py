"""Shared by the sync and async clients: reading Server-Sent Events, and the bookkeeping of
an upload (which bytes go in which part, what to report)."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from datawell.client.errors import ApiError
from datawell.client.models import IngestionAttempt, PreparedUpload, RunEvent, UploadProgress

Progress = Callable[[UploadProgress], None]
STREAM = "text/event-stream"


@dataclass
class EventReader:
    """Turns SSE lines into RunEvents: `event:` names it, `data:` lines carry its JSON, a
    blank line ends it, `:` lines are keep-alive comments. An `error` event is raised as
    the ApiError it carries (the run failed after it started)."""

    status: int
    name: str = "message"
    data: list[str] = field(default_factory=list)

    def feed(self, line: str) -> RunEvent | None:
        if line.startswith(":"):
            return None
        if line:
            key, _, value = line.partition(":")
            value = value.removeprefix(" ")
            if key == "event":
                self.name = value
            elif key == "data":
                self.data.append(value)
            return None
        if not self.data:
            return None
        event = RunEvent(event=self.name, data=json.loads("\n".join(self.data)))
        self.name, self.data = "message", []
        if event.event == "error":
            raise ApiError.of(self.status, event.data)
        return event


def stream_error(response: httpx.Response, body: bytes) -> ApiError:
    try:
        return ApiError.of(response.status_code, json.loads(body))
    except ValueError:
        return ApiError.of(response.status_code, body.decode(errors="replace"))


@dataclass(frozen=True)
class Part:
    number: int
    url: str
    offset: int
    size: int

    def read(self, path: Path) -> bytes:
        with path.open("rb") as file:
            file.seek(self.offset)
            return file.read(self.size)


def parts_of(prepared: PreparedUpload) -> list[Part]:
    parts, offset = [], 0
    for number, item in enumerate(prepared.presigned_urls, start=1):
        parts.append(Part(number, item.url, offset, item.size))
        offset += item.size
    return parts


@dataclass
class Tracker:
    """Counts what has been sent and tells the caller's progress callback, if any."""

    total_bytes: int
    parts_total: int
    callback: Progress | None
    sent_bytes: int = 0
    parts_done: int = 0

    def part_sent(self, part: Part) -> None:
        self.sent_bytes += part.size
        self.parts_done += 1
        self.report(UploadProgress(phase="parts", **self.counts()))

    def ingesting(self, attempt: IngestionAttempt) -> None:
        self.report(UploadProgress(phase="ingestion", attempt=attempt, **self.counts()))

    def counts(self) -> dict[str, int]:
        return {
            "total_bytes": self.total_bytes,
            "sent_bytes": self.sent_bytes,
            "parts_done": self.parts_done,
            "parts_total": self.parts_total,
        }

    def report(self, progress: UploadProgress) -> None:
        if self.callback is not None:
            self.callback(progress)
