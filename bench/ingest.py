"""What structuring a CSV costs: Datawell's ingestion (sniff, map, infer types, coerce, stage,
publish) against what a user would write instead, in one interleaved run per size.

    .venv/bin/python -m bench.ingest                                   # 100,000 and 1,000,000 rows
    .venv/bin/python -m bench.ingest --rows 20000 --embed minilm-static --skip-peers  # + embedding rate
    .venv/bin/python -m bench.ingest --postgres postgresql://postgres@127.0.0.1:55432/postgres

SQLite peers: a `csv.reader` + `sqlite3.executemany` script with the same conversions;
pandas `read_csv` + `to_sql`; DuckDB `read_csv` into SQLite (its sqlite extension cannot be
downloaded here, so DuckDB's Arrow batches go through `sqlite3.executemany`). PostgreSQL
peer: one plain `COPY … FROM` of the same file into a typed table. Each side runs in its own
process (its own peak RSS). The column mapping comes from a scripted model (the right answer,
at once), so the numbers are the pipeline's, not a model's. The attempt is queued as an
upload's `complete` queues it and timed until SUCCEEDED, by a worker as it runs in a server
(its SQLite writer process started, a rows connection open and the queue polled once before
the file comes, as `Worker.run` does). Needs the `bench` extra (pandas,
duckdb). Never run by the test suite."""

from __future__ import annotations

import argparse
import asyncio
import csv
import gc
import multiprocessing
import os
import random
import resource
import sqlite3
import tempfile
import time
from datetime import date, timedelta
from pathlib import Path
from typing import Any

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


def write_csv(path: Path, rows: int, seed: int = 7, *, decimal_comma: bool = False) -> None:
    """`decimal_comma`: totals written `12,34`, which only the row-by-row path reads."""
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
                    f"{rng.uniform(1, 999):.2f}".replace(".", "," if decimal_comma else "."),
                    rng.choice(["true", "false"]),
                    (start + timedelta(days=rng.randrange(700))).isoformat(),
                    " ".join(rng.choices(WORDS, k=4)),
                ]
            )


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


Result = tuple[int, float, float, float, str]  # rows, seconds, peak RSS (MB), RSS growth (MB), a note


class TimedEmbedder:
    """The embedder under test, timed: when its first batch began, and the time and texts
    spent inside it (the model alone, without reading rows back or storing vectors)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.dimension, self.space = inner.dimension, inner.space
        self.first = 0.0
        self.seconds = 0.0
        self.texts = 0

    async def embed(self, texts: list[str]) -> list[list[float]]:
        started = time.perf_counter()
        self.first = self.first or started
        vectors = await self.inner.embed(texts)
        self.seconds += time.perf_counter() - started
        self.texts += len(texts)
        return list(vectors)

    def note(self, finished: float, storing: float) -> str:
        """The embedding rate: rows from the first batch until the vectors were complete
        (reading rows back, the model, storing vectors), the model's own rate and the vector
        store's (`storing`: seconds inside its `upsert` and `flush`, the index included)."""
        if not self.texts:
            return ""
        return (
            f"embeddings ({self.space or 'minilm'}): {self.texts:,} rows in {finished - self.first:.1f} s after "
            f"publishing, {self.texts / (finished - self.first):,.0f} rows/s; the model alone "
            f"{self.texts / self.seconds:,.0f} rows/s; the vector store alone {self.texts / storing:,.0f} rows/s"
        )


def timed(method: Any, spent: list[float]) -> Any:
    """`method` (a coroutine), adding the seconds each call takes to `spent[0]`."""

    async def call(*args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return await method(*args, **kwargs)
        finally:
            spent[0] += time.perf_counter() - started

    return call


ORDERS_TABLE = (
    "CREATE TABLE orders (order_id INTEGER, customer TEXT, city TEXT, total REAL, paid INTEGER, placed_at TEXT, "
    "note TEXT)"
)


def finished(database: sqlite3.Connection, started: float, baseline: float) -> Result:
    """A SQLite peer's result once its load is committed: rows in `orders`, time, memory."""
    count = database.execute("SELECT COUNT(*) FROM orders").fetchone()[0]
    database.close()
    return count, time.perf_counter() - started, peak_rss_mb(), peak_rss_mb() - baseline, ""


def peer(path: Path, folder: Path) -> Result:
    """csv.reader → typed tuples → one executemany into a fresh SQLite table."""
    baseline = peak_rss_mb()
    started = time.perf_counter()
    database = sqlite3.connect(folder / "peer.sqlite")
    database.execute(ORDERS_TABLE)
    with path.open(newline="", encoding="utf-8") as source:
        reader = csv.reader(source)
        next(reader)
        rows = (
            (int(a), b, c, float(d), e == "true", date.fromisoformat(f).isoformat(), g)
            for a, b, c, d, e, f, g in reader
        )
        with database:
            database.executemany("INSERT INTO orders VALUES (?, ?, ?, ?, ?, ?, ?)", rows)
    return finished(database, started, baseline)


def pandas_peer(path: Path, folder: Path) -> Result:
    import pandas

    baseline = peak_rss_mb()
    started = time.perf_counter()
    database = sqlite3.connect(folder / "pandas.sqlite")
    for frame in pandas.read_csv(path, chunksize=100_000, parse_dates=["placed_at"]):
        frame.to_sql("orders", database, if_exists="append", index=False)
    database.commit()
    return finished(database, started, baseline)


def duckdb_peer(path: Path, folder: Path) -> Result:
    import duckdb

    baseline = peak_rss_mb()
    started = time.perf_counter()
    database = sqlite3.connect(folder / "duckdb.sqlite")
    database.execute(ORDERS_TABLE)
    reader = duckdb.sql(f"SELECT * REPLACE (CAST(placed_at AS VARCHAR) AS placed_at) FROM read_csv('{path}')")
    with database:
        for batch in reader.fetch_record_batch(100_000):
            columns = [c.to_pylist() for c in batch.columns]
            database.executemany("INSERT INTO orders VALUES (?, ?, ?, ?, ?, ?, ?)", zip(*columns, strict=True))
    return finished(database, started, baseline)


def copy_peer(path: Path, folder: Path, postgres: str) -> Result:
    return asyncio.run(_copy_peer(path, postgres))


async def _copy_peer(path: Path, postgres: str) -> Result:
    import asyncpg

    baseline = peak_rss_mb()
    connection = await asyncpg.connect(postgres)
    try:
        await connection.execute("DROP TABLE IF EXISTS bench_orders")
        await connection.execute(
            "CREATE TABLE bench_orders (order_id BIGINT, customer TEXT, city TEXT, total DOUBLE PRECISION, "
            "paid BOOLEAN, placed_at TIMESTAMPTZ, note TEXT)"
        )
        started = time.perf_counter()
        await connection.copy_to_table("bench_orders", source=path, format="csv", header=True)
        elapsed = time.perf_counter() - started
        count = await connection.fetchval("SELECT COUNT(*) FROM bench_orders")
        await connection.execute("DROP TABLE bench_orders")
    finally:
        await connection.close()
    return count, elapsed, peak_rss_mb(), peak_rss_mb() - baseline, ""


def datawell(path: Path, folder: Path, embed: str, models: Path, postgres: str = "") -> Result:
    return asyncio.run(_datawell(path, folder, embed, models, postgres))


async def _drop_database(postgres: str, name: str) -> None:
    import asyncpg

    admin = await asyncpg.connect(postgres)
    await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    await admin.close()


async def _fresh_database(postgres: str) -> str:
    """A new, empty database on the PostgreSQL server; its SQLAlchemy URL."""
    import uuid

    import asyncpg

    name = f"dw_bench_{uuid.uuid4().hex[:10]}"
    admin = await asyncpg.connect(postgres)
    await admin.execute(f'CREATE DATABASE "{name}"')
    await admin.close()
    return postgres.replace("postgresql://", "postgresql+asyncpg://").rsplit("/", 1)[0] + f"/{name}"


def bench_embedder(embed: str, models: Path) -> Any:
    from datawell.llm.embeddings import HashingEmbedder, MiniLMEmbedder, StaticMiniLMEmbedder

    if embed == "minilm":
        return MiniLMEmbedder()
    if embed == "minilm-static":
        return StaticMiniLMEmbedder(models / "minilm-static")
    return HashingEmbedder()


LATER_ROWS = 10_000  # the dataset ingested after the measured one, whose rows semantic() must cover too


async def coverage(services: Any, dataset: Any, rows: int) -> str:
    """How many of `dataset`'s rows semantic() can find: the vectors the store holds for it,
    and whether its first and last rows' own texts are found first (the generated rows repeat
    their texts, so the first hit may be another row with the same text)."""
    import sqlalchemy as sa

    from datawell.ingest.embedding import row_text
    from datawell.storage.row_tables import dataset_columns
    from datawell.storage.vectors import ROWS

    held = await services.vectors.count(ROWS, dataset.id)
    fields = [f for f, kind in dataset_columns(dataset).items() if kind == "text"]
    table = services.rows.table(dataset)
    found = 0
    async with services.rows.engine.connect() as connection:
        for order in (table.c["__id"], table.c["__id"].desc()):
            row = (
                await connection.execute(
                    sa.select(table.c["__id"], *(table.c[f] for f in fields)).order_by(order).limit(1)
                )
            ).one()
            text = row_text(fields, tuple(row[1:]), services.settings.ingest_embed_text_chars)
            (vector,) = await services.embedder.embed([text])
            hits = await services.vectors.search(ROWS, dataset.id, vector, 1)
            found += bool(hits) and hits[0].payload.get("text") == text
    return f"semantic() covers {held:,} of {rows:,} rows; its first and last rows' texts found first: {found} of 2"


async def _datawell(path: Path, folder: Path, embed: str, models: Path, postgres: str) -> Result:
    import shutil

    import sqlalchemy as sa

    from datawell.config import Settings
    from datawell.ingest.mapping import ColumnMapping, FieldSource
    from datawell.ingest.worker import Worker
    from datawell.llm.models import FixedChatModels
    from datawell.llm.scripted import ScriptedChatModel
    from datawell.services import Overrides, build_services
    from datawell.storage import access
    from datawell.storage.datasets import create_dataset
    from datawell.storage.ingestions import enqueue
    from datawell.storage.tables import Dataset, Ingestion
    from datawell.storage.users import create_user

    shutil.rmtree(folder / "datawell", ignore_errors=True)
    settings = Settings(
        data_dir=folder / "datawell",
        database_url=await _fresh_database(postgres) if postgres else None,
        embedded_model_enabled=False,
        embeddings_enabled=False,
        ingest_embed_rows=bool(embed),
        run_worker_in_process=False,
    )
    mapping = ColumnMapping(fields=[FieldSource(field=name, column=name) for name in SCHEMA])
    embedder = TimedEmbedder(bench_embedder(embed, models))
    await embedder.inner.embed(["warm up"])  # load (or distill) the model before the clock starts
    overrides = Overrides(models=FixedChatModels(ScriptedChatModel([mapping])), embedder=embedder)
    services = await build_services(settings, overrides)
    storing = [0.0]  # seconds inside the vector store's writes
    services.vectors.upsert = timed(services.vectors.upsert, storing)  # type: ignore[method-assign]
    services.vectors.flush = timed(services.vectors.flush, storing)  # type: ignore[method-assign]
    # As `datawell serve` and `datawell worker` do once started: the objects of the imports and
    # of start-up are frozen, so the collector's full passes do not walk them (0.2-0.45 s, once
    # in each 100,000-row attempt of a fresh process, before).
    gc.collect()
    gc.freeze()
    # As a started worker has it (`Worker.run`) before the file comes: the SQLite writer process
    # is up, a connection to the rows database open, and the queue polled once (found empty).
    if (writer := services.rows.prepare_writer()) is not None:
        await asyncio.to_thread(writer.wait_ready)
    await services.rows.connect()
    worker = Worker(services, "bench")
    await worker.run_once()
    try:
        async with services.db.session() as session:
            user = await create_user(session, "bench")
            namespace = await access.ensure_namespace(session, user, "shop")

        async def ingest(name: str, source: Path) -> tuple[Dataset, int]:
            """One dataset of `source`, ingested by the worker; it and its rows."""
            key = f"bench/{name}.csv"
            await services.objects.put(key, source.read_bytes())
            async with services.db.session() as session:
                dataset = (await create_dataset(session, namespace, name, "Web shop orders", SCHEMA, user)).record
                attempt = await enqueue(session, dataset, key, f"{name}.csv", source.stat().st_size, user)
            await worker.run_once()
            async with services.db.session() as session:
                done = await session.get_one(Ingestion, attempt.id)
                if done.status != "SUCCEEDED":
                    raise RuntimeError(f"ingestion ended {done.status}: {done.status_message}")
                dataset = await session.get_one(Dataset, dataset.id)  # with the columns' types it inferred
            async with services.rows.engine.connect() as connection:
                table = services.rows.table(dataset)
                count = (await connection.execute(sa.select(sa.func.count()).select_from(table))).scalar_one()
            return dataset, count

        baseline = peak_rss_mb()
        started = time.perf_counter()
        dataset, count = await ingest("orders", path)
        finished = time.perf_counter()
        rss, note = peak_rss_mb(), embedder.note(finished, storing[0])
        if embed:  # every row searchable, and a dataset ingested after it too (issue 48)
            later = path.with_name("later.csv")
            write_csv(later, LATER_ROWS, seed=8)
            note += "; " + await coverage(services, dataset, count)
            note += "; a second dataset after it: " + await coverage(services, *(await ingest("later", later)))
        return count, finished - started, rss, rss - baseline, note
    finally:
        await services.close()
        if postgres:
            await _drop_database(postgres, settings.resolved_database_url.rsplit("/", 1)[1])


def in_child(target, *args):  # type: ignore[no-untyped-def]
    """Run `target` in a fresh process (its own peak RSS) and return its result. The files
    the one before wrote are flushed to disk first: else its write-back would slow the
    next contender's commits (measured: the script took 5.3 s after Datawell, 3.8 s alone)."""
    os.sync()
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        return pool.apply(target, args)


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", default="100000,1000000", help="comma-separated sizes, run in this order")
    parser.add_argument(
        "--embed", choices=["hashing", "minilm", "minilm-static"], help="also embed every row (and say how fast)"
    )
    parser.add_argument(
        "--models",
        type=Path,
        default=Path(tempfile.gettempdir()) / "datawell-bench-models",
        help="where the distilled minilm-static is kept between runs",
    )
    parser.add_argument("--postgres", default="", help="postgresql:// URL: also compare with COPY there")
    parser.add_argument("--skip-peers", action="store_true", help="only Datawell")
    args = parser.parse_args()
    sizes = [int(n) for n in args.rows.split(",")]
    print("| rows | MB | contender | seconds | rows/s | ratio | peak RSS (MB) | load before |")
    print("|---:|---:|---|---:|---:|---:|---:|---|")
    with tempfile.TemporaryDirectory(prefix="ingest-bench-", dir="/tmp") as temporary:
        folder = Path(temporary)
        for size in sizes:
            path = folder / "orders.csv"
            write_csv(path, size)
            megabytes = path.stat().st_size / 1e6
            contenders: list[tuple[str, Any, tuple[Any, ...]]] = [
                (
                    "Datawell → SQLite" + (f", embeddings ({args.embed})" if args.embed else ""),
                    datawell,
                    (path, folder, args.embed or "", args.models),
                ),
            ]
            if not args.skip_peers:
                contenders += [
                    ("csv + sqlite3 script", peer, (path, folder)),
                    ("pandas → SQLite", pandas_peer, (path, folder)),
                    ("DuckDB → SQLite", duckdb_peer, (path, folder)),
                ]
            if args.postgres:
                contenders.append(
                    ("Datawell → PostgreSQL", datawell, (path, folder, args.embed or "", args.models, args.postgres))
                )
                if not args.skip_peers:
                    contenders.append(("COPY → PostgreSQL", copy_peer, (path, folder, args.postgres)))
            results = []
            for name, target, arguments in contenders:
                before = load()
                for stale in folder.glob("*.sqlite"):
                    stale.unlink()
                count, seconds, rss, _growth, note = in_child(target, *arguments)
                results.append((name, count, seconds, rss, before, note))
            ours = {r[0]: r for r in results}
            for name, count, seconds, rss, before, _note in results:
                peer_name = "COPY → PostgreSQL" if "PostgreSQL" in name else "csv + sqlite3 script"
                base = ours.get(peer_name)
                ratio = f"{(count / seconds) / (base[1] / base[2]):.2f}×" if base else ""
                print(
                    f"| {size:,} | {megabytes:.0f} | {name} | {seconds:.2f} | {count / seconds:,.0f} | {ratio} "
                    f"| {rss:.0f} | {before} |",
                    flush=True,
                )
            for name, *_, before, note in results:
                if note:
                    print(f"\n{size:,} rows, {name}, load before {before}: {note}", flush=True)


if __name__ == "__main__":
    main()
