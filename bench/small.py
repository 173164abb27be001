"""What a small upload costs: a 60-row CSV whose header names its fields, from `complete` to
SUCCEEDED, as the first upload after the server starts and then on the warm server.

    .venv/bin/python -m bench.small                       # the default embedder (minilm-static)
    .venv/bin/python -m bench.small --embed off --uploads 10 --rows 60

The server runs in this process on a loopback port (`datawell serve`'s app, its worker in
process, no chat model: the header names the fields, so none is asked). Each upload is timed
from the `complete` request to the attempt's SUCCEEDED (polled every 10 ms), and split into
the attempt's phases by timers wrapped around the pipeline's steps in this process only:
waiting to be claimed, reading and mapping the columns, writing the rows (writer start,
type inference, coercion), publishing, the query hints, and the row embeddings. The models
folder is kept between runs (a restart is measured, not a first install). Never run by the
test suite; print the load beside the figures."""

from __future__ import annotations

import argparse
import asyncio
import csv
import functools
import io
import os
import socket
import statistics
import tempfile
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import uvicorn

from datawell.app import create_app
from datawell.config import Settings
from datawell.ingest import pipeline
from datawell.ingest.embedding import RowEmbedding
from datawell.services import build_services
from datawell.storage import hints
from datawell.storage.rows import RowStore
from datawell.storage.users import create_user

SCHEMA = {"order_id": "Order number", "customer": "Customer name", "city": "City", "total": "Amount in EUR",
          "paid": "Paid yet?", "placed_at": "Day the order was placed", "note": "The customer's note"}  # fmt: skip
MODELS_CACHE = Path(tempfile.gettempdir()) / "datawell-bench-models"
PHASES: dict[str, list[float]] = defaultdict(list)
STARTED: dict[str, float] = {}


def timed(name: str, function: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(function)
    async def wrapper(*args: Any, **kwargs: Any) -> Any:
        started = time.monotonic()
        try:
            return await function(*args, **kwargs)
        finally:
            PHASES[name].append(time.monotonic() - started)

    return wrapper


def instrument() -> None:
    """Timers around the pipeline's steps (this process only; the product is unchanged)."""
    run = pipeline.Ingest.run

    async def claimed(self: pipeline.Ingest) -> Any:
        PHASES["claim"].append(time.monotonic() - STARTED[self.attempt.id])
        return await run(self)

    pipeline.Ingest.run = claimed  # type: ignore[method-assign]
    pipeline.Ingest.structure_table = timed("read+map", pipeline.Ingest.structure_table)  # type: ignore[method-assign]
    pipeline.Ingest.write = timed("write", pipeline.Ingest.write)  # type: ignore[method-assign]
    RowStore.publish = timed("publish", RowStore.publish)  # type: ignore[method-assign]
    pipeline.hints.observed = timed("hints", hints.observed)  # type: ignore[attr-defined]
    pipeline.hints.store = timed("hints", hints.store)  # type: ignore[attr-defined]
    RowEmbedding.run = timed("embed", RowEmbedding.run)  # type: ignore[method-assign]


def csv_bytes(rows: int) -> bytes:
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(SCHEMA)
    for i in range(rows):
        writer.writerow([i, f"customer {i % 17}", f"city {i % 5}", f"{i * 1.5:.2f}", i % 2 == 0,
                         f"2024-03-{1 + i % 28:02d}", f"note about order {i}"])  # fmt: skip
    return out.getvalue().encode()


async def seed(settings: Settings) -> str:
    services = await build_services(settings)
    try:
        async with services.db.session() as session:
            await create_user(session, "bench")
        _, token = await services.tokens.issue("bench", timedelta(hours=1), "bench.small")
        return token
    finally:
        await services.close()


def upload(http: httpx.Client, name: str, data: bytes) -> tuple[str, float]:
    """Prepare, PUT the one part, complete; then the seconds from `complete` to SUCCEEDED."""
    base = "/api/v1/upload/multipart/bench/shop/orders"
    prepared = http.post(f"{base}/prepare", json={"filename": name, "size": len(data)})
    prepared.raise_for_status()
    body = prepared.json()
    [part] = body["presignedUrls"]
    http.put(part["url"], content=data, headers={"Authorization": ""}).raise_for_status()
    started = time.monotonic()
    completed = http.post(f"{base}/complete", json={"uploadId": body["uploadId"], "key": body["key"]})
    completed.raise_for_status()
    attempt_id = completed.json()["id"]
    STARTED[attempt_id] = started
    while True:
        attempt = http.get(f"/api/v1/ingestionTracking/{attempt_id}")
        attempt.raise_for_status()
        status = attempt.json()["status"]
        if status not in ("QUEUED", "RUNNING"):
            assert status == "SUCCEEDED", attempt.json()
            return attempt_id, time.monotonic() - started
        time.sleep(0.01)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=60)
    parser.add_argument("--uploads", type=int, default=6, help="uploads in all (the first one right after start)")
    parser.add_argument(
        "--embed", default="minilm-static", choices=["minilm-static", "minilm", "off"], help="off: no row embeddings"
    )
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} CPUs")
    instrument()
    data = csv_bytes(args.rows)
    with tempfile.TemporaryDirectory(prefix="datawell-bench-small-") as folder:
        MODELS_CACHE.mkdir(parents=True, exist_ok=True)
        (Path(folder) / "models").symlink_to(MODELS_CACHE)
        settings = Settings(
            _env_file=None,  # type: ignore[call-arg]
            data_dir=Path(folder),
            embedded_model_enabled=False,
            embeddings_enabled=args.embed != "off",
            ingest_embed_rows=args.embed != "off",
            embeddings_model="minilm-static" if args.embed == "off" else args.embed,
        )
        token = asyncio.run(seed(settings))
        with socket.socket() as s:
            s.bind(("127.0.0.1", args.port))
            port = s.getsockname()[1]
        server = uvicorn.Server(uvicorn.Config(create_app(settings), host="127.0.0.1", port=port, log_level="warning"))
        thread = threading.Thread(target=server.run, daemon=True)
        started = time.monotonic()
        thread.start()
        while not server.started:
            time.sleep(0.01)
        print(f"server up in {time.monotonic() - started:.2f} s")
        headers = {"Authorization": f"Bearer {token}"}
        times = []
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", headers=headers, timeout=600) as http:
            http.post(
                "/api/v1/ingest/new/shop/orders", json={"dataDescription": "orders", "schemaDefinition": SCHEMA}
            ).raise_for_status()
            for number in range(args.uploads):
                _, seconds = upload(http, f"orders-{number}.csv", data)
                times.append(seconds)
        server.should_exit = True
        thread.join()
    print(f"{args.rows} rows, embeddings {args.embed}: complete -> SUCCEEDED")
    print(f"first upload after start {times[0]:.2f} s; warm: median {statistics.median(times[1:]):.2f} s, "
          f"each {' '.join(f'{t:.2f}' for t in times[1:])}")  # fmt: skip
    print("phases (first, then the warm median):")
    for name, values in PHASES.items():
        warm = statistics.median(values[1:]) if len(values) > 1 else 0.0
        print(f"  {name:<10} {values[0]:6.3f} s  {warm:6.3f} s  ({len(values)} timings)")
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
