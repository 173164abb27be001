"""What exporting a dataset costs: Datawell's rows endpoint (`GET /data/{user}/{ns}/{ds}/rows`
with `format=parquet` / `csv`, over HTTP from a real `datawell serve`) against DuckDB writing
the same file from the same table, in one run per store.

    .venv/bin/python -m bench.export                                   # 1,000,000 rows, SQLite
    .venv/bin/python -m bench.export --postgres postgresql://postgres@127.0.0.1:55445/postgres

The dataset is ingested first (bench.ingest's orders file, not timed). Datawell's side is the
whole REST path: the request, the checked query, the export process reading through ADBC and
writing the file, the stream to the client, which writes it to disk. Its memory is the
server's and its export process's resident set, sampled every 10 ms (the server's start-up
resident set is printed apart: it holds the whole app, whatever the export does).

The peer: DuckDB (the `bench` extra) writes the same file (`COPY … TO`, same columns and
types) from the same table. DuckDB's sqlite and postgres extensions cannot be downloaded
here, so it reads the table as an Arrow stream from the same ADBC driver, in a process of its
own. Never run by the test suite."""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx

from bench.ingest import SCHEMA, _drop_database, _fresh_database, load, write_csv

FORMATS = ("parquet", "csv")
SECRET = "bench-secret-bench-secret-bench-secret"


def server_env(folder: Path, database_url: str | None, port: int) -> dict[str, str]:
    env = {
        "DATAWELL_DATA_DIR": str(folder / "datawell"),
        "DATAWELL_JWT_SECRET": SECRET,
        "DATAWELL_PORT": str(port),
        "DATAWELL_EMBEDDINGS_ENABLED": "false",
        "DATAWELL_EMBEDDED_MODEL_ENABLED": "false",
        "DATAWELL_RUN_WORKER_IN_PROCESS": "false",
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        "HF_HUB_OFFLINE": "1",
    }
    if database_url:
        env["DATAWELL_DATABASE_URL"] = database_url
    return env


async def prepare(csv_path: Path, folder: Path, database_url: str | None) -> tuple[str, str, str, int]:
    """Ingest the file into bench/shop/orders; the rows database URL, the row table, a token, the rows."""
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
        database_url=database_url,
        jwt_secret=SECRET,
        embedded_model_enabled=False,
        embeddings_enabled=False,
        ingest_embed_rows=False,
        run_worker_in_process=False,
    )
    mapping = ColumnMapping(fields=[FieldSource(field=name, column=name) for name in SCHEMA])
    overrides = Overrides(models=FixedChatModels(ScriptedChatModel([mapping])), embedder=HashingEmbedder())
    services = await build_services(settings, overrides)
    try:
        await services.objects.put("bench/orders.csv", csv_path.read_bytes())
        async with services.db.session() as session:
            user = await create_user(session, "bench")
            namespace = await access.ensure_namespace(session, user, "shop")
            dataset = (await create_dataset(session, namespace, "orders", "Web shop orders", SCHEMA, user)).record
            attempt = await enqueue(session, dataset, "bench/orders.csv", "orders.csv", csv_path.stat().st_size, user)
        await Worker(services, "bench").run_once()
        async with services.db.session() as session:
            done = await session.get_one(Ingestion, attempt.id)
            if done.status != "SUCCEEDED":
                raise RuntimeError(f"ingestion ended {done.status}: {done.status_message}")
            record = await session.get_one(type(dataset), dataset.id)
        _, token = await services.tokens.issue("bench", timedelta(hours=2))
        rows = await services.rows.count(record)
        print(f"ingested {rows:,} rows; field types {record.field_types}", flush=True)
        return settings.resolved_rows_database_url, record.table_name, token, rows
    finally:
        await services.close()


def rss_mb(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def children(pid: int) -> list[int]:
    """The process's children, whichever of its threads started them."""
    found: list[str] = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            found += (task / "children").read_text().split()
        except OSError:
            continue
    return [int(c) for c in found]


class Sampler:
    """The server's resident set and its export process's, every 10 ms, at their highest."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.server = 0.0
        self.export = 0.0
        self.together = 0.0
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)

    def run(self) -> None:
        while not self.stopped.is_set():
            server = rss_mb(self.pid)
            export = sum(rss_mb(c) for c in children(self.pid))
            self.server, self.export = max(self.server, server), max(self.export, export)
            self.together = max(self.together, server + export)
            time.sleep(0.01)

    def __enter__(self) -> Sampler:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stopped.set()
        self.thread.join()


def through_rest(url: str, token: str, format: str, destination: Path, pid: int) -> tuple[float, Sampler, int]:
    with Sampler(pid) as sampler:
        started = time.perf_counter()
        with httpx.stream(
            "GET",
            f"{url}/api/v1/data/bench/shop/orders/rows",
            params={"format": format},
            headers={"Authorization": f"Bearer {token}"},
            timeout=httpx.Timeout(30, read=None),
        ) as response:
            response.raise_for_status()
            with destination.open("wb") as file:
                for chunk in response.iter_bytes(1 << 16):
                    file.write(chunk)
        elapsed = time.perf_counter() - started
    return elapsed, sampler, count_rows(destination, format)


def count_rows(path: Path, format: str) -> int:
    if format == "parquet":
        import pyarrow.parquet as pq

        return int(pq.ParquetFile(path).metadata.num_rows)
    with path.open("rb") as file:
        return sum(chunk.count(b"\n") for chunk in iter(lambda: file.read(1 << 20), b"")) - 1


def duckdb_peer(rows_url: str, table: str, types: dict[str, str], format: str, destination: str) -> tuple[float, float]:
    """DuckDB writes the file from the table, read as Arrow through the ADBC driver; seconds, peak RSS."""
    import adbc_driver_manager as adbc
    import duckdb
    import pyarrow as pa
    from sqlalchemy.engine import make_url

    url = make_url(rows_url)
    started = time.perf_counter()
    if url.get_backend_name() == "sqlite":
        import adbc_driver_sqlite

        database = adbc_driver_sqlite.connect(f"file:{url.database}?mode=ro")
    else:
        import adbc_driver_postgresql

        database = adbc_driver_postgresql.connect(url.set(drivername="postgresql").render_as_string(False))
    columns = ", ".join(f'"{c}"' for c in SCHEMA)
    with database, adbc.AdbcConnection(database) as connection, adbc.AdbcStatement(connection) as statement:
        statement.set_sql_query(f'SELECT {columns} FROM "{table}"')
        handle, _ = statement.execute_query()
        reader = pa.RecordBatchReader._import_from_c(handle.address)
        duck = duckdb.connect()
        duck.register("source", reader)
        cast = {"boolean": "BOOLEAN", "timestamp": "TIMESTAMPTZ", "integer": "BIGINT", "real": "DOUBLE"}
        projected = ", ".join(
            f'CAST("{c}" AS {cast[types[c]]}) AS "{c}"' if types.get(c) in cast else f'"{c}"' for c in SCHEMA
        )
        options = "(FORMAT parquet)" if format == "parquet" else "(FORMAT csv, HEADER true)"
        duck.execute(f"COPY (SELECT {projected} FROM source) TO '{destination}' {options}")
    elapsed = time.perf_counter() - started
    return elapsed, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def in_child(target, *args):  # type: ignore[no-untyped-def]
    os.sync()
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        return pool.apply(target, args)


def start_server(env: dict[str, str], url: str) -> subprocess.Popen[bytes]:
    process = subprocess.Popen(
        [sys.executable, "-m", "datawell", "serve", "--host", "127.0.0.1", "--port", env["DATAWELL_PORT"]],
        env={**os.environ, **env},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError("the server exited")
        try:
            if httpx.get(f"{url}/health", timeout=2).status_code == 200:
                return process
        except httpx.TransportError:
            time.sleep(0.3)
    process.kill()
    raise RuntimeError("the server did not start")


def run_store(label: str, csv_path: Path, folder: Path, postgres: str, port: int) -> None:
    database_url = asyncio.run(_fresh_database(postgres)) if postgres else None
    shutil.rmtree(folder / "datawell", ignore_errors=True)
    try:
        rows_url, table, token, rows = asyncio.run(prepare(csv_path, folder, database_url))
        types = asyncio.run(_types(folder, database_url))
        env = server_env(folder, database_url, port)
        url = f"http://127.0.0.1:{port}"
        server = start_server(env, url)
        try:
            started_rss = rss_mb(server.pid)
            through_rest(url, token, "csv", folder / "warm.csv", server.pid)  # first request: imports, roles
            (folder / "warm.csv").unlink()
            for format in FORMATS:
                ours = folder / f"datawell.{format}"
                peer = folder / f"duckdb.{format}"
                before = load()
                idle_rss = rss_mb(server.pid)
                seconds, sampler, exported = through_rest(url, token, format, ours, server.pid)
                peer_before = load()
                peer_seconds, peer_rss = in_child(duckdb_peer, rows_url, table, types, format, str(peer))
                peer_rows = count_rows(peer, format)
                if exported != rows or peer_rows != rows:
                    raise RuntimeError(f"{format}: exported {exported:,}, DuckDB {peer_rows:,}, table {rows:,}")
                ratio = (rows / seconds) / (rows / peer_seconds)
                print(
                    f"| {label} | {format} | Datawell REST | {rows:,} | {seconds:.2f} | {rows / seconds:,.0f} "
                    f"| {ratio:.2f}× | server {sampler.server:.0f} (idle {idle_rss:.0f}, start {started_rss:.0f}) "
                    f"+ export process {sampler.export:.0f}; growth {sampler.together - idle_rss:.0f} "
                    f"| {ours.stat().st_size / 1e6:.0f} | {before} |",
                    flush=True,
                )
                print(
                    f"| {label} | {format} | DuckDB (ADBC → COPY) | {rows:,} | {peer_seconds:.2f} "
                    f"| {rows / peer_seconds:,.0f} | 1.00× | {peer_rss:.0f} | {peer.stat().st_size / 1e6:.0f} "
                    f"| {peer_before} |",
                    flush=True,
                )
                ours.unlink()
                peer.unlink()
        finally:
            server.terminate()
            server.wait(timeout=30)
    finally:
        if postgres and database_url:
            asyncio.run(_drop_database(postgres, database_url.rsplit("/", 1)[1]))


async def _types(folder: Path, database_url: str | None) -> dict[str, str]:
    from sqlalchemy import select

    from datawell.config import Settings
    from datawell.storage.db import Database
    from datawell.storage.tables import Dataset

    settings = Settings(data_dir=folder / "datawell", database_url=database_url)
    db = Database(settings.resolved_database_url)
    try:
        async with db.session() as session:
            return dict((await session.execute(select(Dataset.field_types))).scalar_one())
    finally:
        await db.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--postgres", default="", help="postgresql:// URL: also export from PostgreSQL")
    parser.add_argument("--port", type=int, default=18500, help="where the server listens")
    parser.add_argument("--skip-sqlite", action="store_true")
    args = parser.parse_args()
    print(f"uptime: {subprocess.run(['uptime'], capture_output=True, text=True).stdout.strip()}")
    print(
        "| store | format | contender | rows | seconds | rows/s | ratio to DuckDB | peak RSS (MB) | file MB "
        "| load before |"
    )
    print("|---|---|---|---:|---:|---:|---:|---|---:|---|")
    with tempfile.TemporaryDirectory(prefix="h-rows-export-bench-", dir="/tmp") as temporary:
        folder = Path(temporary)
        csv_path = folder / "orders.csv"
        write_csv(csv_path, args.rows)
        if not args.skip_sqlite:
            run_store("SQLite", csv_path, folder, "", args.port)
        if args.postgres:
            run_store("PostgreSQL", csv_path, folder, args.postgres, args.port + 1)
    print(f"uptime: {subprocess.run(['uptime'], capture_output=True, text=True).stdout.strip()}")


if __name__ == "__main__":
    main()
