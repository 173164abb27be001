"""What structuring a CSV costs: Datawell's ingestion (sniff, map, infer types, coerce, stage,
publish) against a plain script that loads the same CSV into a SQLite table, in one run.

    .venv/bin/python -m bench.ingest                  # 200,000 rows, no row embeddings
    .venv/bin/python -m bench.ingest --rows 1000000
    .venv/bin/python -m bench.ingest --embed          # also embed each row (hashing embedder, local Qdrant)

The peer is what a careful script would do: `csv.reader`, the same type conversions, one
`executemany` in one transaction. Each side runs in its own process, so each peak RSS is
its own. The column mapping comes from a scripted model (the right answer, at once), so the
numbers are the pipeline's, not a model's.
Never run by the test suite."""

from __future__ import annotations

import argparse
import asyncio
import csv
import multiprocessing
import random
import resource
import sqlite3
import tempfile
import time
from datetime import date, timedelta
from pathlib import Path

SCHEMA = {
    "order_id": "Order number",
    "customer": "Customer name",
    "city": "City of delivery",
    "total": "Amount in EUR",
    "paid": "Whether the order is paid",
    "placed_at": "Day the order was placed",
    "note": "The customer's note",
}
CITIES = ["Paris", "Oslo", "Lima", "Cairo", "Lagos", "Quito", "Seoul", "Perth", "Turin", "Hanoi"]
WORDS = ["apple", "pie", "fresh", "red", "green", "hose", "shoes", "running", "cream", "lamp", "chair", "book"]


def write_csv(path: Path, rows: int, seed: int = 7) -> None:
    rng = random.Random(seed)
    start = date(2024, 1, 1)
    with path.open("w", newline="", encoding="utf-8") as out:
        writer = csv.writer(out)
        writer.writerow(SCHEMA)
        for number in range(1, rows + 1):
            writer.writerow(
                [
                    number,
                    f"customer {rng.randrange(5000)}",
                    rng.choice(CITIES),
                    f"{rng.uniform(1, 999):.2f}",
                    rng.choice(["true", "false"]),
                    (start + timedelta(days=rng.randrange(700))).isoformat(),
                    " ".join(rng.choices(WORDS, k=4)),
                ]
            )


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


Result = tuple[int, float, float, float]  # rows, seconds, peak RSS, RSS growth during the load (MB)


def peer(path: Path, folder: Path) -> Result:
    """csv.reader → typed tuples → one executemany into a fresh SQLite table."""
    baseline = peak_rss_mb()
    started = time.perf_counter()
    database = sqlite3.connect(folder / "peer.sqlite")
    database.execute(
        "CREATE TABLE orders (order_id INTEGER, customer TEXT, city TEXT, total REAL, paid INTEGER, "
        "placed_at TEXT, note TEXT)"
    )
    with path.open(newline="", encoding="utf-8") as source:
        reader = csv.reader(source)
        next(reader)
        rows = (
            (int(a), b, c, float(d), e == "true", date.fromisoformat(f).isoformat(), g)
            for a, b, c, d, e, f, g in reader
        )
        with database:
            database.executemany("INSERT INTO orders VALUES (?, ?, ?, ?, ?, ?, ?)", rows)
    count = database.execute("SELECT COUNT(*) FROM orders").fetchone()[0]
    database.close()
    return count, time.perf_counter() - started, peak_rss_mb(), peak_rss_mb() - baseline


def datawell(path: Path, folder: Path, embed: bool) -> Result:
    return asyncio.run(_datawell(path, folder, embed))


async def _datawell(path: Path, folder: Path, embed: bool) -> Result:
    import sqlalchemy as sa

    from datawell.config import Settings
    from datawell.ingest.mapping import ColumnMapping, FieldSource
    from datawell.ingest.worker import Worker
    from datawell.llm.embeddings import HashingEmbedder
    from datawell.llm.models import FixedChatModels
    from datawell.llm.scripted import ScriptedChatModel
    from datawell.services import Overrides, build_services
    from datawell.storage import access
    from datawell.storage.datasets import create_dataset
    from datawell.storage.ingestions import enqueue
    from datawell.storage.tables import Ingestion
    from datawell.storage.users import create_user

    settings = Settings(
        data_dir=folder / "datawell",
        embedded_model_enabled=False,
        embeddings_enabled=False,
        ingest_embed_rows=embed,
        run_worker_in_process=False,
    )
    mapping = ColumnMapping(fields=[FieldSource(field=name, column=name) for name in SCHEMA])
    overrides = Overrides(models=FixedChatModels(ScriptedChatModel([mapping])), embedder=HashingEmbedder())
    services = await build_services(settings, overrides)
    try:
        key = "bench/orders.csv"
        size = path.stat().st_size
        await services.objects.put(key, path.read_bytes())
        async with services.db.session() as session:
            user = await create_user(session, "bench")
            namespace = await access.ensure_namespace(session, user, "shop")
            dataset = (await create_dataset(session, namespace, "orders", "Web shop orders", SCHEMA, user)).record
            attempt = await enqueue(session, dataset, key, "orders.csv", size, user)
        baseline = peak_rss_mb()
        started = time.perf_counter()
        await Worker(services, "bench").run_once()
        elapsed = time.perf_counter() - started
        async with services.db.session() as session:
            done = await session.get_one(Ingestion, attempt.id)
            if done.status != "SUCCEEDED":
                raise RuntimeError(f"ingestion ended {done.status}: {done.status_message}")
        async with services.rows.engine.connect() as connection:
            table = services.rows.table(dataset)
            count = (await connection.execute(sa.select(sa.func.count()).select_from(table))).scalar_one()
        return count, elapsed, peak_rss_mb(), peak_rss_mb() - baseline
    finally:
        await services.close()


def in_child(target, *args):  # type: ignore[no-untyped-def]
    """Run `target` in a fresh process (its own peak RSS) and return its result."""
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        return pool.apply(target, args)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--embed", action="store_true", help="also embed every row into the vector store")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as temporary:
        folder = Path(temporary)
        path = folder / "orders.csv"
        write_csv(path, args.rows)
        megabytes = path.stat().st_size / 1e6
        print(f"{args.rows:,} rows, {megabytes:.1f} MB of CSV; embeddings {'on' if args.embed else 'off'}")
        ours = in_child(datawell, path, folder, args.embed)
        theirs = in_child(peer, path, folder)
    print("| | rows | seconds | rows/s | MB/s | peak RSS (MB) | RSS growth during the load (MB) |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, (count, seconds, rss, growth) in (("datawell ingestion", ours), ("csv + sqlite3 script", theirs)):
        print(
            f"| {name} | {count:,} | {seconds:.1f} | {count / seconds:,.0f} | {megabytes / seconds:.1f} "
            f"| {rss:.0f} | {growth:.0f} |"
        )
    print(f"datawell ÷ peer: {ours[1] / theirs[1]:.2f}× the time")


if __name__ == "__main__":
    main()
