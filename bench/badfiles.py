"""Bad files against a real `datawell serve`: each is uploaded one after another (a ZIP bomb,
JSON nested 100,000 deep, a UTF-16 CSV without BOM, a header of 4,000 repeated names, a
PDF of 3,000 pages, a 30 MB single-line CSV field) while a normal CSV is uploaded too. The
service must stay healthy, every attempt must end FAILED or SUCCEEDED within its time budget,
and the normal CSV must succeed.

    .venv/bin/python -m bench.badfiles                 # budget 60 s per attempt, port 18402

No model is reachable (its address refuses connections): tables are mapped by name.
Never run by the test suite."""

from __future__ import annotations

import argparse
import asyncio
import io
import os
import shutil
import sys
import tempfile
import time
import zipfile
from pathlib import Path

import httpx

from bench.api import SECRET, seed_datawell, start
from tests.ingest.support import pdf_bytes, xlsx_bytes


def zip_bomb() -> bytes:
    workbook = zipfile.ZipFile(io.BytesIO(xlsx_bytes([["field_0", "field_1"], [1, "placeholder"]])))
    packed = io.BytesIO()
    with zipfile.ZipFile(packed, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as bomb:
        for member in workbook.infolist():
            bomb.writestr(member.filename, workbook.read(member).replace(b"placeholder", b"a" * 400_000_000))
    return packed.getvalue()


def bad_files() -> dict[str, bytes]:
    return {
        "bomb.xlsx": zip_bomb(),
        "deep.json": ('[{"field_0": ' + "[" * 100_000 + "]" * 100_000 + "}]").encode(),
        "utf16.csv": "field_0,field_1\n1,Åsa\n2,Bob\n".encode("utf-16-le"),
        "repeated.csv": ("a," * 3999 + "a\n" + "1," * 3999 + "1\n").encode(),
        "pages.pdf": pdf_bytes(["page"] * 3000),
        "wide-field.csv": b"field_0,field_1\n1," + b"x" * 30_000_000 + b"\n",
    }


NORMAL = ("normal.csv", b"field_0,field_1\n" + b"".join(b"%d,row %d\n" % (i, i) for i in range(10_000)))


def upload(http: httpx.Client, name: str, data: bytes, dataset: str = "orders_0") -> str:
    base = f"/api/v1/upload/multipart/alice/sales/{dataset}"
    prepared = http.post(f"{base}/prepare", json={"filename": name, "size": len(data)}).json()
    offset = 0
    for part in prepared["presignedUrls"]:
        response = httpx.put(part["url"], content=data[offset : offset + part["size"]], timeout=120)
        response.raise_for_status()
        offset += part["size"]
    done = http.post(f"{base}/complete", json={"uploadId": prepared["uploadId"], "key": prepared["key"]})
    done.raise_for_status()
    return str(done.json()["id"])


def bench(args: argparse.Namespace) -> int:
    folder = Path(tempfile.mkdtemp(prefix="robust-badfiles-"))
    token = asyncio.run(seed_datawell(folder))
    env = {
        **os.environ,
        "DATAWELL_DATA_DIR": str(folder),
        "DATAWELL_JWT_SECRET": SECRET,
        "DATAWELL_PUBLIC_BASE_URL": f"http://127.0.0.1:{args.port}",
        "DATAWELL_EMBEDDINGS_ENABLED": "false",
        "DATAWELL_EMBEDDED_MODEL_ENABLED": "false",
        "DATAWELL_MODEL": "openai/unreachable",
        "OPENAI_API_BASE": f"http://127.0.0.1:{args.port + 1}",  # nothing listens there
        "OPENAI_API_KEY": "none",
        "DATAWELL_LLM_MAX_RETRIES": "0",
        "DATAWELL_INGEST_ATTEMPT_SECONDS": str(args.budget),
        "DATAWELL_WORKER_POLL_SECONDS": "0.2",
        "HF_HUB_OFFLINE": "1",
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    }
    command = [sys.executable, "-m", "datawell", "serve", "--host", "127.0.0.1", "--port", str(args.port)]
    server = start(command, env, args.port)
    failures = 0
    try:
        base_url = f"http://127.0.0.1:{args.port}"
        with httpx.Client(base_url=base_url, headers={"Authorization": f"Bearer {token}"}, timeout=120) as http:
            started: dict[str, tuple[str, float]] = {}
            for name, data in bad_files().items():
                started[name] = (upload(http, name, data), time.monotonic())
                if name == "repeated.csv":
                    # A normal file for another dataset arrives while the bad ones run or wait:
                    # those of one dataset run in order, but never hold up another dataset's.
                    started[NORMAL[0]] = (upload(http, *NORMAL, dataset="orders_1"), time.monotonic())
            pending = dict(started)
            deadline = time.monotonic() + args.budget * (len(started) + 1) + 60
            while pending and time.monotonic() < deadline:
                health = http.get("/health")
                if health.status_code != 200:
                    print(f"health: {health.status_code}")
                    failures += 1
                for name, (ingestion_id, began) in list(pending.items()):
                    attempt = http.get(f"/api/v1/ingestionTracking/{ingestion_id}").json()
                    if attempt["status"] in ("SUCCEEDED", "FAILED", "CANCELLED"):
                        took = time.monotonic() - began
                        print(
                            f"{name:<15} {attempt['status']:<9} after {took:6.1f} s: {attempt['statusMessage'][:150]}"
                        )
                        pending.pop(name)
                        if name == NORMAL[0] and attempt["status"] != "SUCCEEDED":
                            failures += 1
                time.sleep(0.5)
            for name in pending:
                print(f"{name:<15} still not ended")
                failures += 1
            rss = Path(f"/proc/{server.pid}/status").read_text().split("VmHWM:")[1].split("\n")[0].strip()
            print(f"server healthy: {http.get('/health').status_code == 200}; peak memory {rss}")
    finally:
        server.terminate()
        server.wait(30)
        shutil.rmtree(folder, ignore_errors=True)
    print("OK" if failures == 0 else f"{failures} problems")
    return 1 if failures else 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--port", type=int, default=18402)
    parser.add_argument("--budget", type=float, default=60.0, help="DATAWELL_INGEST_ATTEMPT_SECONDS for the run")
    raise SystemExit(bench(parser.parse_args()))


if __name__ == "__main__":
    main()
