"""What metrics and traces add to one request, in process: direct ASGI calls of one cheap
route through the whole app (every middleware, the router, the handler, the error handler),
no server and no client, with four settings side by side in the same run:

    off       metrics off, traces off
    metrics   DATAWELL_METRICS=open
    traced    metrics, and every request traced (a batch span processor whose exporter drops)
    1%        metrics, and OTEL_TRACES_SAMPLER_ARG=0.01

    .venv/bin/python -m bench.request_overhead                 # 3,000 calls a round, 5 rounds
    .venv/bin/python -m bench.request_overhead --calls 5000 --rounds 7 --path /health

The default route is the dataset listing of `bench/api.py` without a token (a 401 from the
resolver: a matched route in the middle of the route table, no database). The rounds alternate
the settings; a round's figure is the process's CPU time (all threads), each setting's its
fastest round (the machine's other work only ever adds time), and only the differences from
`off` mean anything. Never run by the test suite."""

from __future__ import annotations

import argparse
import asyncio
import shutil
import statistics
import tempfile
import time
from collections.abc import Sequence
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult
from starlette.types import ASGIApp, Message, Scope

SECRET = "bench-secret-bench-secret-bench-secret"
SETTINGS: dict[str, tuple[str, float | None]] = {
    "off": ("off", None),
    "metrics": ("open", None),
    "traced": ("open", 1.0),
    "1%": ("open", 0.01),
}


class Dropping(SpanExporter):
    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        return SpanExportResult.SUCCESS


async def served(stack: AsyncExitStack, folder: Path, metrics: str, ratio: float | None) -> ASGIApp:
    from datawell.app import create_app
    from datawell.config import Settings
    from datawell.llm.embeddings import HashingEmbedder
    from datawell.llm.models import FixedChatModels
    from datawell.llm.scripted import ScriptedChatModel
    from datawell.services import Overrides

    settings = Settings(
        data_dir=folder,
        jwt_secret=SECRET,
        embeddings_enabled=False,
        embedded_model_enabled=False,
        run_worker_in_process=False,
        metrics=metrics,  # type: ignore[arg-type]
        otel_traces_sampler_arg=1.0 if ratio is None else ratio,
    )
    spans = None if ratio is None else BatchSpanProcessor(Dropping())
    overrides = Overrides(models=FixedChatModels(ScriptedChatModel([])), embedder=HashingEmbedder())
    app = create_app(settings, overrides, spans=spans)
    state = await stack.enter_async_context(app.router.lifespan_context(app)) or {}

    async def with_state(scope: Scope, receive: Any, send: Any) -> None:
        scope["state"] = dict(state)
        await app(scope, receive, send)

    return with_state


async def calls(app: ASGIApp, path: str, count: int) -> float:
    """CPU microseconds a call (the process's, every thread: the span processor's too), over
    `count` calls: the time other processes take from it does not count."""
    statuses: list[int] = []

    async def receive() -> Message:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: Message) -> None:
        if message["type"] == "http.response.start":
            statuses.append(message["status"])

    headers = [(b"host", b"127.0.0.1:18500"), (b"user-agent", b"bench"), (b"accept", b"*/*")]
    began = time.process_time()
    for _ in range(count):
        scope = {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": "GET",
            "scheme": "http",
            "path": path,
            "raw_path": path.encode(),
            "root_path": "",
            "query_string": b"",
            "headers": headers,
            "client": ("127.0.0.1", 50000),
            "server": ("127.0.0.1", 18500),
        }
        await app(scope, receive, send)
    elapsed = time.process_time() - began
    assert len(set(statuses)) == 1, statuses[:5]
    return elapsed / count * 1e6


async def bench(args: argparse.Namespace) -> None:
    folder = Path(tempfile.mkdtemp(prefix="bench-request-overhead-"))
    try:
        async with AsyncExitStack() as stack:
            apps = {
                name: await served(stack, folder / name.strip("%"), metrics, ratio)
                for name, (metrics, ratio) in SETTINGS.items()
            }
            for app in apps.values():
                await calls(app, args.path, 300)  # warm: imports, caches, the first label children
            timings: dict[str, list[float]] = {name: [] for name in apps}
            for _ in range(args.rounds):
                for name, app in apps.items():
                    timings[name].append(await calls(app, args.path, args.calls))
        base = min(timings["off"])
        print(f"GET {args.path}: {args.calls} calls a round, {args.rounds} rounds, fastest round of each")
        for name, found in timings.items():
            best, median = min(found), statistics.median(found)
            print(f"{name:<8} {best:7.1f} µs CPU a request (median {median:7.1f})   {best - base:+7.1f} µs over off")
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--path", default="/api/v1/datasets/alice/sales")
    parser.add_argument("--calls", type=int, default=3000)
    parser.add_argument("--rounds", type=int, default=5)
    asyncio.run(bench(parser.parse_args()))


if __name__ == "__main__":
    main()
