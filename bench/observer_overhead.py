"""What `RequestObserver` itself costs a request, in a loop: the middleware around a stub app
that answers at once (route template set, two `send` messages), no Datawell app below it, so
that the figure is the observer's alone and moves little with the machine's load (unlike
`bench/request_overhead.py`, whose full app varies by a few µs between processes).

    .venv/bin/python -m bench.observer_overhead            # 20,000 calls a round, 7 rounds

Settings, side by side in one process: `bare` (the stub alone), `layer` (the observer with
nothing on), `metrics`, `1%` (metrics and `OTEL_TRACES_SAMPLER_ARG=0.01`, a batch span
processor whose exporter drops), `0%` (the same, every request dropped: `1%` less `0%` is the
sampled requests' share, spans and batch thread), `100%` (every request traced), `1% OTLP`
and `100% OTLP` (the batch thread also encodes each batch as the OTLP/HTTP exporter does,
short of the post) and `1% no metrics`. Each its fastest round, CPU µs a call.
Never run by the test suite."""

from __future__ import annotations

import argparse
import asyncio
import time
from collections.abc import Sequence

from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
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


class Encoding(SpanExporter):
    """Encodes each batch as the OTLP/HTTP exporter does before it posts it, and drops it."""

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        encode_spans(spans).SerializePartialToString()
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


async def calls(app: ASGIApp, count: int, provider: TracerProvider | None) -> float:
    """CPU µs a call, the batch thread's export of the calls' spans included (flushed before
    the clock is read, so that none of it falls into the next setting's round)."""
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
    if provider is not None:
        provider.force_flush()
    return (time.process_time() - began) / count * 1e6


async def bench(args: argparse.Namespace) -> None:
    def traced(ratio: float, exporter: SpanExporter) -> TracerProvider:
        # A queue that holds a round's spans: none dropped, every one exported.
        return tracing.new_provider(ratio, BatchSpanProcessor(exporter, max_queue_size=args.calls + 1))

    one, every = traced(0.01, Dropping()), traced(1.0, Dropping())
    one_encoded, every_encoded = traced(0.01, Encoding()), traced(1.0, Encoding())
    apps: dict[str, tuple[ASGIApp, TracerProvider | None]] = {
        "bare": (stub, None),
        "layer": (RequestObserver(stub, None, counted=False), None),
        "metrics": (RequestObserver(stub, None), None),
        "1%": (RequestObserver(stub, tracing.tracer(one), ratio=0.01), one),
        "0%": (RequestObserver(stub, tracing.tracer(one), ratio=0.0), one),
        "1% no metrics": (RequestObserver(stub, tracing.tracer(one), ratio=0.01, counted=False), one),
        "1% OTLP": (RequestObserver(stub, tracing.tracer(one_encoded), ratio=0.01), one_encoded),
        "100%": (RequestObserver(stub, tracing.tracer(every), ratio=1.0), every),
        "100% OTLP": (RequestObserver(stub, tracing.tracer(every_encoded), ratio=1.0), every_encoded),
    }
    timings: dict[str, list[float]] = {name: [] for name in apps}
    for _ in range(args.rounds):
        for name, (app, provider) in apps.items():
            timings[name].append(await calls(app, args.calls, provider))
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
