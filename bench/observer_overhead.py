"""What `RequestObserver` itself costs a request, in a loop: the middleware around a stub app
that answers at once (route template set, two `send` messages), no Datawell app below it, so
that the figure is the observer's alone and moves little with the machine's load (unlike
`bench/request_overhead.py`, whose full app varies by a few µs between processes).

    .venv/bin/python -m bench.observer_overhead            # 20,000 calls a round, 7 rounds

Settings, side by side in one process: `bare` (the stub alone), `layer` (the observer with
nothing on), `metrics`, `1%` (metrics and `OTEL_TRACES_SAMPLER_ARG=0.01`, a batch span
processor whose exporter drops), `0%` (the same, every request dropped: `1%` less `0%` is the
sampled requests' share, spans and batch thread), `100%` (every request traced) and
`1% no metrics`. Each its fastest round, CPU µs a call.
Never run by the test suite."""

from __future__ import annotations

import argparse
import asyncio
import time
from collections.abc import Sequence

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from datawell.observability import tracing
from datawell.observability.http import RequestObserver

HEADERS = [
    (b"host", b"127.0.0.1:8620"),
    (b"authorization", b"Bearer " + b"x" * 200),
    (b"accept", b"*/*"),
    (b"accept-encoding", b"gzip, deflate"),
    (b"user-agent", b"Python/3.12 aiohttp/3.11"),
]


class Dropping(SpanExporter):
    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        return SpanExportResult.SUCCESS


class Route:
    path = "/api/v1/datasets/{username}/{namespace}"


async def stub(scope: Scope, receive: Receive, send: Send) -> None:
    scope["route"] = Route
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]})
    await send({"type": "http.response.body", "body": b"{}"})


async def receive() -> Message:
    return {"type": "http.request", "body": b"", "more_body": False}


async def send(message: Message) -> None:
    pass


async def calls(app: ASGIApp, count: int) -> float:
    began = time.process_time()
    for _ in range(count):
        scope = {
            "type": "http",
            "method": "GET",
            "path": "/api/v1/datasets/alice/sales",
            "headers": HEADERS,
            "scheme": "http",
            "server": ("127.0.0.1", 8620),
            "http_version": "1.1",
        }
        await app(scope, receive, send)
    return (time.process_time() - began) / count * 1e6


async def bench(args: argparse.Namespace) -> None:
    tracer = tracing.tracer(tracing.new_provider(0.01, BatchSpanProcessor(Dropping())))
    everything = tracing.tracer(tracing.new_provider(1.0, BatchSpanProcessor(Dropping())))
    apps: dict[str, ASGIApp] = {
        "bare": stub,
        "layer": RequestObserver(stub, None, counted=False),
        "metrics": RequestObserver(stub, None),
        "1%": RequestObserver(stub, tracer, ratio=0.01),
        "0%": RequestObserver(stub, tracer, ratio=0.0),
        "100%": RequestObserver(stub, everything, ratio=1.0),
        "1% no metrics": RequestObserver(stub, tracer, ratio=0.01, counted=False),
    }
    timings: dict[str, list[float]] = {name: [] for name in apps}
    for _ in range(args.rounds):
        for name, app in apps.items():
            timings[name].append(await calls(app, args.calls))
    base = min(timings["bare"])
    print(f"{args.calls} calls a round, {args.rounds} rounds, fastest round of each")
    for name, found in timings.items():
        print(f"{name:<14} {min(found):6.2f} µs CPU a call   {min(found) - base:+6.2f} µs over bare")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=7)
    asyncio.run(bench(parser.parse_args()))


if __name__ == "__main__":
    main()
