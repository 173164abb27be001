"""What one request adds to the server's memory: a real `datawell serve` (its worker in
process), its resident set sampled every 10 ms before, during and after each request kind.

    .venv/bin/python -m bench.memory                      # 3,000,000 rows, minilm-static if cached
    .venv/bin/python -m bench.memory --rows 500000 --export-rows 200000 --port 18810

Request kinds: a presigned multipart upload of a header-named CSV and its ingestion (until
SUCCEEDED, row embeddings included when `minilm-static` is in /tmp/datawell-bench-models,
else embeddings off; no chat model: the header names the fields), a restart of the server on
what that left (the local vector store loads every point it holds), a query answering the
most rows a query may (`query_row_cap`), and a JSON body at the request size limit
(`max_request_bytes`, the DataLinks SDK's row ingestion). The export of 1,000,000 rows is
measured by `bench.export` (server plus its export process). Child processes (the SQLite
writer of large delimited files, started with the worker) are sampled with the server: the
verdict is on the whole tree's growth, the peak of server plus children during the request
minus their sum just before it (the server's own growth is shown beside it). Never run by the test
suite; print the load beside the figures (other work on the machine slows it, not the memory)."""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import subprocess
import tempfile
import time
from datetime import timedelta
from pathlib import Path

import httpx

from bench.export import SECRET, Sampler, children, rss_mb, start_server
from bench.ingest import SCHEMA, _drop_database, _fresh_database, load, write_csv

MODELS_CACHE = Path(tempfile.gettempdir()) / "datawell-bench-models"
LIMIT_MB = 300


def server_env(folder: Path, port: int, embed: bool) -> dict[str, str]:
    return {
        "DATAWELL_DATA_DIR": str(folder / "datawell"),
        "DATAWELL_JWT_SECRET": SECRET,
        "DATAWELL_PORT": str(port),
        "DATAWELL_PUBLIC_BASE_URL": f"http://127.0.0.1:{port}",
        "DATAWELL_EMBEDDINGS_ENABLED": str(embed).lower(),
        "DATAWELL_INGEST_EMBED_ROWS": str(embed).lower(),
        "DATAWELL_EMBEDDINGS_MODEL": "minilm-static",
        "DATAWELL_EMBEDDED_MODEL_ENABLED": "false",
        "DATAWELL_RUN_WORKER_IN_PROCESS": "true",
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        "HF_HUB_OFFLINE": "1",
    }


async def seed(folder: Path, database_url: str | None = None) -> str:
    from datawell.config import Settings
    from datawell.services import build_services
    from datawell.storage.users import create_user

    settings = Settings(
        _env_file=None,  # type: ignore[call-arg]
        data_dir=folder / "datawell",
        database_url=database_url,
        jwt_secret=SECRET,
        embedded_model_enabled=False,
        embeddings_enabled=False,
        run_worker_in_process=False,
    )
    services = await build_services(settings)
    try:
        async with services.db.session() as session:
            await create_user(session, "bench")
        _, token = await services.tokens.issue("bench", timedelta(hours=3), "bench.memory")
        return token
    finally:
        await services.close()


def tree_mb(pid: int) -> float:
    """The server's resident set and its child processes' (the SQLite writer, an export)."""
    return rss_mb(pid) + sum(rss_mb(c) for c in children(pid))


def line(
    kind: str, before: float, tree_before: float, sampler: Sampler, after: float, seconds: float, note: str,
    load_before: str,
) -> None:  # fmt: skip
    growth = sampler.together - tree_before  # the service's whole tree, as issue 26 means
    verdict = "yes" if growth <= LIMIT_MB else "NO"
    print(
        f"| {kind} | {before:.0f} | {sampler.server:.0f} | {after:.0f} | {sampler.server - before:+.0f} "
        f"| {tree_before:.0f} | {sampler.export:.0f} | {sampler.together:.0f} | {growth:+.0f} | {verdict} "
        f"| {seconds:.1f} | {note} | {load_before} |",
        flush=True,
    )


def upload_and_ingest(http: httpx.Client, path: Path, dataset: str) -> dict[str, object]:
    base = f"/api/v1/upload/multipart/bench/shop/{dataset}"
    size = path.stat().st_size
    prepared = http.post(f"{base}/prepare", json={"filename": path.name, "size": size})
    prepared.raise_for_status()
    body = prepared.json()
    with path.open("rb") as file:
        for part in body["presignedUrls"]:
            data = file.read(part["size"])
            httpx.put(part["url"], content=data, timeout=600).raise_for_status()
    done = http.post(f"{base}/complete", json={"uploadId": body["uploadId"], "key": body["key"]})
    done.raise_for_status()
    attempt_id = done.json()["id"]
    while True:
        attempt = http.get(f"/api/v1/ingestionTracking/{attempt_id}")
        attempt.raise_for_status()
        found = attempt.json()
        if found["status"] not in ("QUEUED", "RUNNING"):
            if found["status"] != "SUCCEEDED":
                raise RuntimeError(f"ingestion ended {found['status']}: {found.get('statusMessage')}")
            return dict(found)
        time.sleep(0.5)


def measure(pid: int, kind: str, note: str, action) -> object:  # type: ignore[no-untyped-def]
    load_before = load()
    before, tree_before = rss_mb(pid), tree_mb(pid)
    with Sampler(pid) as sampler:
        started = time.perf_counter()
        result = action()
        seconds = time.perf_counter() - started
    time.sleep(1)
    summary = note(result) if callable(note) else note
    line(kind, before, tree_before, sampler, rss_mb(pid), seconds, summary, load_before)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=3_000_000, help="rows of the uploaded CSV")
    parser.add_argument("--port", type=int, default=18650)
    parser.add_argument("--folder", type=Path, default=None, help="data folder (default: a new one in /tmp)")
    parser.add_argument("--no-embed", action="store_true", help="row embeddings off even if minilm-static is cached")
    parser.add_argument(
        "--decimal-comma", action="store_true", help="totals written 12,34: the row-by-row path reads the file"
    )
    parser.add_argument(
        "--postgres", default="", help="a PostgreSQL server URL: the service's stores in a new database there"
    )
    args = parser.parse_args()
    database_url = asyncio.run(_fresh_database(args.postgres)) if args.postgres else None
    print(f"store: {'PostgreSQL' if database_url else 'SQLite'}")
    embed = (MODELS_CACHE / "minilm-static").exists() and not args.no_embed
    print(f"uptime: {subprocess.run(['uptime'], capture_output=True, text=True).stdout.strip()}")
    why = "--no-embed" if args.no_embed else f"no minilm-static in {MODELS_CACHE}"
    print(f"row embeddings: {'minilm-static' if embed else f'off ({why})'}")
    folder = Path(args.folder or tempfile.mkdtemp(prefix="datawell-memory-", dir="/tmp"))
    folder.mkdir(parents=True, exist_ok=True)
    try:
        (folder / "datawell").mkdir(exist_ok=True)
        if embed:
            (folder / "datawell" / "models").symlink_to(MODELS_CACHE)
        token = asyncio.run(seed(folder, database_url))
        csv_path = folder / "orders.csv"
        started = time.perf_counter()
        write_csv(csv_path, args.rows, decimal_comma=args.decimal_comma)
        print(
            f"{csv_path.stat().st_size / 1e6:.0f} MB CSV of {args.rows:,} rows in {time.perf_counter() - started:.0f} s"
        )
        env = server_env(folder, args.port, embed)
        if database_url:
            env["DATAWELL_DATABASE_URL"] = database_url
        url = f"http://127.0.0.1:{args.port}"
        headers = {"Authorization": f"Bearer {token}"}
        print(
            "| request | server RSS before (MB) | server peak | server after | server growth | tree before "
            "| children's peak | tree peak | tree growth | ≤ 300 MB | seconds | what it did | load before |"
        )
        print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---|---|")
        server = start_server(env, url)
        first_start, first_tree = rss_mb(server.pid), tree_mb(server.pid)
        try:
            with httpx.Client(base_url=url, headers=headers, timeout=600) as http:
                http.post(
                    "/api/v1/ingest/new/shop/orders", json={"dataDescription": "orders", "schemaDefinition": SCHEMA}
                ).raise_for_status()
                # Warm the paths once (imports, the embedder's first load) on a small file.
                small = folder / "small.csv"
                write_csv(small, 2_000)
                measure(server.pid, "first upload (2,000 rows: imports, embedder load)", "warm-up",
                        lambda: upload_and_ingest(http, small, "orders"))  # fmt: skip
                measure(
                    server.pid,
                    f"presigned upload + ingestion of {args.rows:,} rows",
                    lambda found: str(found.get("statusMessage", ""))[:160],
                    lambda: upload_and_ingest(http, csv_path, "orders"),
                )
                body = {"namespace": "shop", "query": 'Ontology("shop/orders").limit(1000)'}
                measure(
                    server.pid,
                    "query answering the most rows a query may",
                    lambda response: (
                        f"{len(response.json().get('data') or response.json().get('rows') or [])} rows, "
                        f"{len(response.content) / 1e6:.1f} MB answer, status {response.status_code}"
                    ),
                    lambda: http.post("/api/v1/query", json=body),
                )
                limit = 8 * 1024 * 1024
                rows, size = [], 2
                while size < limit - 200:
                    row = {"order_id": len(rows), "customer": f"customer {len(rows)}", "note": "x" * 60}
                    size += len(json.dumps(row)) + 2
                    rows.append(row)
                payload = json.dumps({"data": rows[:-1]}).encode()
                measure(
                    server.pid,
                    f"JSON rows body at the size limit ({len(payload) / 1e6:.2f} MB)",
                    lambda response: f"status {response.status_code}: {response.text[:100]}",
                    lambda: http.post(
                        "/api/v1/ingest/shop/bulk", content=payload, headers={"Content-Type": "application/json"}
                    ),
                )
                over = payload + b" " * (limit - len(payload) + 1)
                measure(
                    server.pid,
                    f"body one byte past the limit ({len(over) / 1e6:.2f} MB)",
                    lambda response: f"status {response.status_code}: {response.text[:100]}",
                    lambda: http.post(
                        "/api/v1/ingest/shop/bulk", content=over, headers={"Content-Type": "application/json"}
                    ),
                )
        finally:
            server.terminate()
            server.wait(timeout=60)
        # A restart on what the ingestion left: the local vector store loads every point it holds.
        load_before = load()
        started = time.perf_counter()
        server = start_server(env, url)
        try:
            with Sampler(server.pid) as sampler:
                with httpx.Client(base_url=url, headers=headers, timeout=600) as http:
                    http.post("/api/v1/query", json={"namespace": "shop", "query": 'Ontology("shop/orders").limit(1)'})
                time.sleep(1)
            seconds = time.perf_counter() - started
            print(
                f"| restart + first query (the store loads its points; before: the first start's RSS) "
                f"| {first_start:.0f} | {sampler.server:.0f} | {rss_mb(server.pid):.0f} "
                f"| {sampler.server - first_start:+.0f} | {first_tree:.0f} | {sampler.export:.0f} "
                f"| {sampler.together:.0f} | {sampler.together - first_tree:+.0f} | (start) "
                f"| {seconds:.1f} | vector store {du(folder / 'datawell' / 'qdrant')} on disk | {load_before} |",
                flush=True,
            )
        finally:
            server.terminate()
            server.wait(timeout=60)
    finally:
        if args.folder is None:
            shutil.rmtree(folder, ignore_errors=True)
        if database_url:
            asyncio.run(_drop_database(args.postgres, database_url.rsplit("/", 1)[1]))
    print(f"uptime: {subprocess.run(['uptime'], capture_output=True, text=True).stdout.strip()}")


def du(path: Path) -> str:
    total = sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) if path.exists() else 0
    return f"{total / 1e6:.0f} MB"


if __name__ == "__main__":
    main()
