"""The embedded vector index (and pgvector) against exact search (NumPy) in the same run: build rate, recall@10,
query time with the dataset filter, the memory a reopened index adds and the time it takes.

    python -m bench.vectors --rows 1000000
    python -m bench.vectors --rows 1000000 --widths 512,2048   # recall and time at other search widths too
    python -m bench.vectors --rows 1000000 --pgvector pgserver   # pgvector beside it
    python -m bench.vectors --rows 1000000 --pgvector pgserver --pgvector-widths 200,400
    python -m bench.vectors --rows 1000000 --pgvector pgserver --pgvector-settings shared_buffers=6GB

The vectors are synthetic, of the default embedder's 384 dimensions and shaped like text
embeddings (clusters, a low-dimensional spread around them, a direction they all share);
the store is written as ingestion writes it (batches of 512 through `upsert`, then `flush`).
Beside the big dataset, a second one of 1% of its size is searched too: each dataset's
search opens only its own index. The reopened index is measured in a child process, so the
vectors this process made are not counted in its memory: its growth in all (`rss_growth_mb`),
its own (`rss_anon_growth_mb`) and the mapped index's pages the searches visited
(`rss_file_growth_mb`: the kernel's page cache, dropped under pressure).

With `--pgvector URL` (a PostgreSQL with pgvector, `postgresql+asyncpg://…/db`, or `pgserver`:
a throwaway cluster of the pgserver wheel, tests/pgvector_server.py) the same vectors and
questions go through `PgVectorStore` too, in a new database dropped after: build rate,
recall@10, query time, the tables' size on disk and the big dataset's index beside the
server's `shared_buffers` (rows `pgvector_…`). `--pgvector-settings` starts the pgserver
cluster with other server settings: an index larger than `shared_buffers` is read through the
operating system at each search (docs/decisions.md, "Issue 48: pgvector searches from shared
buffers")."""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path

import numpy as np
import sqlalchemy as sa

from datawell.storage import pgvector as pgvector_store
from datawell.storage import vector_index
from datawell.storage.db import create_engine
from datawell.storage.pgvector import PgVectorStore, enable_pgvector
from datawell.storage.vector_index import EmbeddedVectorStore
from datawell.storage.vectors import ROWS, Point

DIMENSION = 384
BATCH = 512  # rows a batch, as ingestion embeds them (DATAWELL_INGEST_EMBED_BATCH_ROWS)
QUERIES = 200
K = 10


def shape(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """The clusters' centers (sharing one direction) and the low-dimensional spread around them."""
    centers = rng.standard_normal((2000, DIMENSION), dtype=np.float32) * 0.5 + rng.standard_normal(DIMENSION) * 2
    basis = rng.standard_normal((32, DIMENSION), dtype=np.float32) / 4
    return centers, basis


def vectors(rng: np.random.Generator, count: int, centers: np.ndarray, basis: np.ndarray) -> np.ndarray:
    spread = rng.standard_normal((count, basis.shape[0]), dtype=np.float32) @ basis
    noise = 0.05 * rng.standard_normal((count, DIMENSION), dtype=np.float32)
    made = centers[rng.integers(0, len(centers), count)] + spread + noise
    return made / np.linalg.norm(made, axis=1, keepdims=True)


RESIDENT = {"VmRSS": "rss", "RssAnon": "rss_anon", "RssFile": "rss_file"}


def resident_mb() -> dict[str, float]:
    """This process's resident memory (`rss`) and its parts: `rss_anon` (its own, what the
    kernel cannot take back) and `rss_file` (pages of mapped files, such as a viewed index,
    which the kernel drops under pressure and reads again when a search visits them)."""
    found = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        field, _, value = line.partition(":")
        if field in RESIDENT:
            found[RESIDENT[field]] = int(value.split()[0]) / 1024
    return found


def uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


async def build(folder: Path, datasets: dict[str, np.ndarray]) -> dict[str, float]:
    store = EmbeddedVectorStore(DIMENSION, folder)
    figures = await write(store, datasets)
    await store.close()
    return figures


async def write(store: EmbeddedVectorStore | PgVectorStore, datasets: dict[str, np.ndarray]) -> dict[str, float]:
    figures = {}
    for name, matrix in datasets.items():
        ids = [str(uuid.UUID(int=i + 1)) for i in range(len(matrix))]
        started = time.perf_counter()
        for start in range(0, len(matrix), BATCH):
            part = matrix[start : start + BATCH]
            points = [Point(ids[start + i], v, {"ingestion_id": "bench"}) for i, v in enumerate(part.tolist())]
            await store.upsert(ROWS, name, points)
        flushing = time.perf_counter()
        await store.flush()
        figures[f"{name}_rows_per_s"] = len(matrix) / (time.perf_counter() - started)
        figures[f"{name}_flush_s"] = time.perf_counter() - flushing
    return figures


async def query(folder: Path, work: Path, widths: list[int]) -> dict[str, float]:
    """In the child: open the saved index, search each dataset, report time, recall and memory;
    then again at each further search width (usearch's expansion), its figures suffixed `@width`."""
    before = resident_mb()
    started = time.perf_counter()
    store = EmbeddedVectorStore(DIMENSION, folder)
    figures = await search(store, work, started)
    figures |= {f"{part}_growth_mb": mb - before[part] for part, mb in resident_mb().items()}
    figures |= await at_widths(store, work, widths, partial(setattr, vector_index, "EXPANSION_SEARCH"))
    await store.close()
    return figures


async def search(store: EmbeddedVectorStore | PgVectorStore, work: Path, started: float) -> dict[str, float]:
    figures: dict[str, float] = {}
    for name in json.loads((work / "names.json").read_text()):
        questions, truth = np.load(work / f"{name}-q.npy"), np.load(work / f"{name}-truth.npy")
        times, found = [], 0.0
        for question, expected in zip(questions.tolist(), truth.tolist(), strict=True):
            began = time.perf_counter()
            hits = await store.search(ROWS, name, question, K)
            times.append(time.perf_counter() - began)
            if not figures.get("open_s"):
                figures["open_s"] = time.perf_counter() - started  # opening and the first search
            found += len({uuid.UUID(h.id).int - 1 for h in hits} & set(expected)) / K
        times.sort()
        figures[f"{name}_recall"] = found / len(questions)
        figures[f"{name}_p50_ms"] = 1000 * times[len(times) // 2]
        figures[f"{name}_p95_ms"] = 1000 * times[int(len(times) * 0.95)]
    return figures


async def at_widths(
    store: EmbeddedVectorStore | PgVectorStore, work: Path, widths: list[int], widen: Callable[[int], None]
) -> dict[str, float]:
    """`search` again at each further width (`widen` sets the store's), its figures suffixed `@width`."""
    figures: dict[str, float] = {}
    for width in widths:
        widen(width)
        wider = await search(store, work, time.perf_counter())
        figures |= {f"{key}@{width}": value for key, value in wider.items() if key != "open_s"}
    return figures


async def pgvector(server: str, datasets: dict[str, np.ndarray], work: Path, widths: list[int]) -> dict[str, float]:
    """The same vectors and questions through `PgVectorStore`, in a new database on `server`,
    written as the service writes them: each dataset's partition without its index, then
    `flush` builds the index in one statement (its time: `…_flush_s`, inside the build rate).
    Then again at each further search width (`hnsw.ef_search`), its figures suffixed `@width`."""
    from tests.pgvector_server import fresh_database

    async with fresh_database(server) as url:
        engine = create_engine(url)
        why_not = await enable_pgvector(engine)
        if why_not:
            raise SystemExit(f"--pgvector {server}: {why_not}")
        store = PgVectorStore(engine, DIMENSION)
        table = store.table(ROWS).name
        figures = await write(store, datasets)
        figures |= await search(store, work, time.perf_counter())
        figures |= await at_widths(store, work, widths, partial(setattr, pgvector_store, "EF_SEARCH"))
        async with engine.connect() as connection:
            query = (
                "SELECT sum(pg_total_relation_size(inhrelid)) FROM pg_inherits WHERE inhparent = CAST(:t AS regclass)"
            )
            size = await connection.scalar(sa.text(query), {"t": table})
            index = pgvector_store.hnsw_index(pgvector_store.partition_name(table, "big"))
            figures["big_index_mb"] = float(await connection.scalar(sa.func.pg_relation_size(index)) or 0) / 1e6
            buffers = await connection.scalar(sa.func.pg_size_bytes(sa.func.current_setting("shared_buffers")))
            figures["shared_buffers_mb"] = float(buffers or 0) / 1e6
        figures["disk_mb"] = float(size or 0) / 1e6
        await engine.dispose()
    return {f"pgvector_{key}": value for key, value in figures.items()}


@contextmanager
def pgvector_server(setting: str | None, server_settings: dict[str, str]) -> Iterator[str | None]:
    if setting != "pgserver":
        if server_settings:
            raise SystemExit(
                "--pgvector-settings needs --pgvector pgserver (a server of one's own is set up by its owner)"
            )
        yield setting
        return
    from tests.pgvector_server import pgserver_cluster

    with pgserver_cluster(server_settings) as url:
        yield url


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000, help="vectors of the big dataset")
    parser.add_argument("--folder", type=Path, default=None, help="where the index goes (default: a new one in /tmp)")
    parser.add_argument(
        "--pgvector", default=None, help="a PostgreSQL with pgvector (an asyncpg URL), or `pgserver`: measured too"
    )
    parser.add_argument(
        "--widths",
        default="",
        help="further search widths to measure the embedded index at, e.g. 512,1024 (default: only the store's own)",
    )
    parser.add_argument(
        "--pgvector-widths",
        default="",
        help="further hnsw.ef_search widths to measure pgvector at, e.g. 200,400 (default: only the store's own)",
    )
    parser.add_argument(
        "--pgvector-graph",
        default="",
        help="pgvector's HNSW graph as m,ef_construction, e.g. 16,128 (default: the store's own)",
    )
    parser.add_argument(
        "--pgvector-settings",
        default="",
        help="server settings for the pgserver cluster as name=value,…, e.g. shared_buffers=6GB (default: initdb's)",
    )
    parser.add_argument("--child", type=Path, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        widths = [int(w) for w in args.widths.split(",") if w]
        print(json.dumps(asyncio.run(query(args.folder, args.child, widths))))
        return
    print(f"uptime before: {uptime()}")
    rng = np.random.default_rng(48)
    centers, basis = shape(rng)
    datasets = {"big": vectors(rng, args.rows, centers, basis), "small": vectors(rng, args.rows // 100, centers, basis)}
    folder = args.folder or Path(tempfile.mkdtemp(prefix="datawell-vectors-", dir="/tmp"))
    work = Path(tempfile.mkdtemp(prefix="datawell-vectors-work-", dir="/tmp"))
    try:
        exact = {}
        for name, matrix in datasets.items():
            picked = matrix[rng.integers(0, len(matrix), QUERIES)]
            questions = picked + 0.05 * rng.standard_normal(picked.shape, dtype=np.float32)
            questions /= np.linalg.norm(questions, axis=1, keepdims=True)
            started = time.perf_counter()
            truth = [np.argpartition(-(matrix @ q), K)[:K] for q in questions]
            exact[f"{name}_exact_ms_per_query"] = 1000 * (time.perf_counter() - started) / QUERIES
            np.save(work / f"{name}-q.npy", questions)
            np.save(work / f"{name}-truth.npy", np.asarray(truth))
        (work / "names.json").write_text(json.dumps(list(datasets)))
        built = asyncio.run(build(folder, datasets))
        print(f"uptime after building: {uptime()}")
        if args.pgvector_graph:
            pgvector_store.CONNECTIVITY, pgvector_store.EF_CONSTRUCTION = map(int, args.pgvector_graph.split(","))
        pg_widths = [int(w) for w in args.pgvector_widths.split(",") if w]
        server_settings = dict(pair.split("=", 1) for pair in args.pgvector_settings.split(",") if pair)
        with pgvector_server(args.pgvector, server_settings) as server:
            in_postgres = asyncio.run(pgvector(server, datasets, work, pg_widths)) if server else {}
        if server:
            print(f"uptime after pgvector: {uptime()}")
        del datasets
        child = [sys.executable, __file__, "--folder", str(folder), "--child", str(work), "--widths", args.widths]
        searched = json.loads(subprocess.run(child, capture_output=True, text=True, check=True).stdout)
        print(f"uptime after searching: {uptime()}")
        size = sum(f.stat().st_size for f in folder.rglob("*") if f.is_file()) / 1e6
        print(f"| figure | {args.rows:,} vectors (+{args.rows // 100:,} in a second dataset) |")
        print("|---|---:|")
        for key, value in {**built, **exact, **searched, "disk_mb": size, **in_postgres}.items():
            print(f"| {key} | {value:,.3f} |")
    finally:
        shutil.rmtree(work, ignore_errors=True)
        if not args.folder:
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
