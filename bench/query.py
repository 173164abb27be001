"""What the query language costs: checker overhead and guarded execution against the same SQL
run directly on the database, on a 1,000,000-row dataset.

    .venv/bin/python -m bench.query                       # SQLite in a temporary folder
    .venv/bin/python -m bench.query --url postgresql+asyncpg://postgres@127.0.0.1:55433/postgres

With --url the benchmark creates its own database on that server and drops it at the end.
Never run by the test suite."""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import shutil
import statistics
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from datawell.config import Settings
from datawell.llm.embeddings import HashingEmbedder
from datawell.llm.models import FixedChatModels
from datawell.llm.scripted import ScriptedChatModel
from datawell.services import Overrides, Services, build_services
from datawell.storage import access
from datawell.storage.access import NamespaceRef
from datawell.storage.datasets import create_dataset
from datawell.storage.tables import Dataset, User
from datawell.storage.users import create_user
from datawell.storage.vectors import ROWS, Point
from datawell.tools.checker import compile_query, parse
from datawell.tools.ql import QueryTools, SemanticHits
from datawell.tools.sandbox import Limits
from datawell.tools.sandbox.postgres import drop_roles

QUERIES = [
    ("count", "SELECT COUNT(*) AS n FROM orders"),
    ("point lookup", "SELECT customer, total FROM orders WHERE order_id = 123456"),
    ("filter + top", "SELECT order_id, total FROM orders WHERE city = 'Paris' AND total > 900 ORDER BY total DESC LIMIT 20"),
    ("group by", "SELECT category, COUNT(*) AS n, ROUND(AVG(total), 2) AS average FROM orders GROUP BY category ORDER BY n DESC"),
    ("time buckets", "SELECT EXTRACT(MONTH FROM placed) AS month, SUM(total) AS revenue FROM orders WHERE paid GROUP BY 1 ORDER BY 1"),
    ("join", "SELECT c.segment, COUNT(*) AS n, SUM(o.total) AS revenue FROM orders o JOIN customers c ON c.name = o.customer GROUP BY c.segment ORDER BY revenue DESC"),
    ("cte + subquery", "WITH spend AS (SELECT customer, SUM(total) AS spent FROM orders GROUP BY customer) SELECT customer, spent FROM spend WHERE spent > (SELECT AVG(spent) * 1.2 FROM spend) ORDER BY spent DESC LIMIT 10"),
    ("window", "SELECT order_id, city, total, RANK() OVER (PARTITION BY city ORDER BY total DESC) AS place FROM orders WHERE category = 'garden' AND quantity = 9 ORDER BY place, order_id LIMIT 50"),
    ("text search", "SELECT order_id, note FROM orders WHERE note ILIKE '%apple pie%' AND city IN ('Oslo', 'Lima') LIMIT 100"),
    ("semantic", "SELECT order_id, note, semantic('fresh apple pie') AS score FROM orders ORDER BY semantic('fresh apple pie') DESC LIMIT 10"),
]  # fmt: skip

CITIES = ["Paris", "Oslo", "Lima", "Cairo", "Lagos", "Quito", "Seoul", "Perth", "Turin", "Hanoi"] * 5
CATEGORIES = ["garden", "kitchen", "books", "toys", "sports", "music", "tools", "food", "shoes", "games"] * 2
WORDS = [
    "apple",
    "pie",
    "fresh",
    "red",
    "green",
    "blue",
    "hose",
    "shoes",
    "running",
    "cream",
    "juice",
    "garden",
    "table",
    "lamp",
    "chair",
    "book",
    "game",
    "ball",
]


def order(number: int, rng: random.Random) -> dict[str, Any]:
    return {
        "order_id": number,
        "customer": f"customer{rng.randrange(5000)}",
        "city": rng.choice(CITIES),
        "category": rng.choice(CATEGORIES),
        "total": round(rng.uniform(1, 1000), 2),
        "quantity": rng.randrange(1, 10),
        "paid": rng.random() < 0.7,
        "placed": datetime(2024, 1, 1, tzinfo=UTC) + timedelta(minutes=rng.randrange(525_600)),
        "note": " ".join(rng.sample(WORDS, 4)),
    }


async def publish(services: Services, dataset: Dataset, rows: Any) -> None:
    """Stage, write in batches, publish."""
    ingestion = str(uuid.uuid4())
    await services.rows.stage(dataset, ingestion)
    batch: list[dict[str, Any]] = []
    for row in rows:
        batch.append(row)
        if len(batch) == 20_000:
            await services.rows.write(dataset, ingestion, batch)
            batch = []
    await services.rows.write(dataset, ingestion, batch)
    await services.rows.publish(dataset, ingestion, source="bench.csv")


async def embed_notes(services: Services, dataset: Dataset, count: int) -> None:
    """Vectors for the notes of `count` rows (point id = the row's __id), as ingestion stores them."""
    table = services.rows.table(dataset)
    async with services.rows.engine.connect() as connection:
        rows = (await connection.execute(sa.select(table.c["__id"], table.c["note"]).limit(count))).all()
    for start in range(0, len(rows), 1000):
        chunk = rows[start : start + 1000]
        vectors = await services.embedder.embed([note for _, note in chunk])
        points = [Point(row_id, vector, {}) for (row_id, _), vector in zip(chunk, vectors, strict=True)]
        await services.vectors.upsert(ROWS, dataset.id, points)


async def setup(services: Services, size: int, embed: int) -> tuple[User, NamespaceRef]:
    async with services.db.session() as session:
        user = await create_user(session, "bench")
        namespace = await access.ensure_namespace(session, user, "shop")
        fields = {
            "order_id": ("integer", "order number"), "customer": ("text", "who"), "city": ("text", "where"),
            "category": ("text", "what kind"), "total": ("real", "EUR"), "quantity": ("integer", "items"),
            "paid": ("boolean", "paid yet"), "placed": ("timestamp", "when"), "note": ("text", "what"),
        }  # fmt: skip
        orders = (
            await create_dataset(session, namespace, "orders", "orders", {k: v[1] for k, v in fields.items()}, user)
        ).record
        orders.field_types = {k: v[0] for k, v in fields.items()}
        customers = (
            await create_dataset(session, namespace, "customers", "people", {"name": "name", "segment": "kind"}, user)
        ).record
        customers.field_types = {"name": "text", "segment": "text"}
    rng = random.Random(7)
    started = time.perf_counter()
    await publish(services, orders, (order(n, rng) for n in range(1, size + 1)))
    segments = ["retail", "wholesale", "online", "partner"]
    await publish(services, customers, ({"name": f"customer{i}", "segment": segments[i % 4]} for i in range(5000)))
    loaded = time.perf_counter()
    await embed_notes(services, orders, embed)
    print(
        f"loaded {size:,} orders and 5,000 customers in {loaded - started:.0f} s, "
        f"embedded {embed:,} notes in {time.perf_counter() - loaded:.0f} s",
        flush=True,
    )
    return user, namespace


async def direct(services: Services, sql: str, hits: SemanticHits) -> None:
    """The compiled SQL, straight through the driver on the writer's connection: no checker, no
    sandbox (read-only connection, authorizer or role, limits), no conversion."""
    async with services.rows.engine.connect() as connection:
        if hits.functions:  # SQLite's semantic() score functions
            driver = (await connection.get_raw_connection()).driver_connection
            for name, scores in hits.functions.items():
                await driver.create_function(name, 1, scores.get, deterministic=True)
        (await connection.exec_driver_sql(sql, tuple(hits.parameters))).all()


async def elapsed_ms(work: Callable[[], Awaitable[Any]]) -> float:
    started = time.perf_counter()
    await work()
    return (time.perf_counter() - started) * 1000


async def measure(
    tools: QueryTools, services: Services, user: User, namespace: NamespaceRef, sql: str, repeat: int
) -> dict[str, float]:
    """Medians over `repeat` rounds; each round runs every variant once, so they share the
    machine's load alike."""
    tables = await tools.resolve(user, namespace, parse(sql).references)
    compiled = await tools.prepare(user, namespace, sql)
    hits = await tools.search(compiled)

    async def check() -> None:
        compile_query(parse(sql), tables, tools.target, tools.row_cap)

    variants: dict[str, Callable[[], Awaitable[Any]]] = {
        "check": check,
        "prepare": lambda: tools.prepare(user, namespace, sql),
        "search": lambda: tools.search(compiled),
        "run": lambda: tools.run(user, namespace, sql),
        "direct": lambda: direct(services, compiled.sql, hits),
    }
    for work in variants.values():  # warm caches and pools
        await work()
    times: dict[str, list[float]] = {name: [] for name in variants}
    for _ in range(repeat):
        for name, work in variants.items():
            for _ in range(10 if name in ("check", "prepare") else 1):
                times[name].append(await elapsed_ms(work))
    result = {name: statistics.median(values) for name, values in times.items()}
    result["check best"] = min(times["check"])
    return result


async def bench(services: Services, size: int, embed: int, repeat: int) -> None:
    user, namespace = await setup(services, size, embed)
    tools = services.query_tools
    print(f"store: {services.rows.dialect}, {size:,} rows; medians of {repeat} interleaved rounds, in ms")
    print(f"load average before: {' '.join(f'{x:.1f}' for x in os.getloadavg())} on {os.cpu_count()} CPUs")
    print(
        f"{'query':15} {'check':>6} {'(best)':>6} {'prepare':>8} {'search':>7} {'QL run':>8} {'direct':>8} "
        f"{'check/direct':>12} {'run/direct':>10}"
    )
    for name, sql in QUERIES:
        t = await measure(tools, services, user, namespace, sql, repeat)
        search = f"{t['search']:7.1f}" if "semantic" in sql else f"{'-':>7}"
        print(
            f"{name:15} {t['check']:6.2f} {t['check best']:6.2f} {t['prepare']:8.2f} {search} {t['run']:8.1f} "
            f"{t['direct']:8.1f} {t['check'] / t['direct']:12.2%} {t['run'] / t['direct']:10.2f}",
            flush=True,
        )
    print(f"load average after: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", help="a PostgreSQL server (postgresql+asyncpg://...); default: SQLite")
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--embed", type=int, default=20_000, help="rows given vectors for semantic()")
    parser.add_argument("--repeat", type=int, default=5)
    options = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="datawell-bench-"))
    database_url, drop = None, None
    if options.url:
        import asyncpg

        name = f"dw_bench_{uuid.uuid4().hex[:8]}"
        admin_dsn = options.url.replace("postgresql+asyncpg://", "postgresql://")
        admin = await asyncpg.connect(admin_dsn)
        await admin.execute(f'CREATE DATABASE "{name}"')
        database_url = options.url.rsplit("/", 1)[0] + f"/{name}"

        async def drop_database() -> None:
            await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            await drop_roles(admin, name)  # the query roles the sandbox made for it
            await admin.close()

        drop = drop_database
    settings = Settings(
        data_dir=folder, database_url=database_url, embeddings_enabled=False, embedded_model_enabled=False
    )
    services = await build_services(
        settings, Overrides(models=FixedChatModels(ScriptedChatModel([])), embedder=HashingEmbedder())
    )
    services.query_tools = QueryTools(
        services.db,
        services.rows,
        services.vectors,
        services.embedder,
        row_cap=settings.query_row_cap,
        limits=Limits(seconds=120),  # a busy machine must not turn a measurement into a refusal
    )
    try:
        await bench(services, options.rows, options.embed, options.repeat)
    finally:
        await services.close()
        if drop is not None:
            await drop()
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    asyncio.run(main())
