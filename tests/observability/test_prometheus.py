"""Debian's Prometheus server scrapes a live server (`serve_scripted.py`: `datawell serve`
with a scripted model) after an upload and a question, and the request, run, model-token and
ingestion series come back through Prometheus' HTTP API."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import httpx
import pytest

from datawell.client import Client
from datawell.config import Settings
from datawell.llm.embeddings import HashingEmbedder
from datawell.llm.models import FixedChatModels
from datawell.llm.scripted import ScriptedChatModel
from datawell.services import Overrides, build_services
from datawell.storage.users import create_user
from tests.agents.test_server_process import free_port, stop
from tests.observability.serve_scripted import ANSWER

PROMETHEUS = Path("/usr/bin/prometheus")
REPO = Path(__file__).resolve().parents[2]
SECRET = "prometheus-test-secret-prometheus-test-secret"
ORDERS = "order_id,customer,total\n1,Ada,30\n2,Bob,12.5\n3,Cy,7\n"

pytestmark = pytest.mark.skipif(
    not PROMETHEUS.exists(), reason="needs Debian's prometheus at /usr/bin/prometheus (.ci/run installs it)"
)


def wait_for(url: str, seconds: float = 60.0) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            if httpx.get(url, timeout=2).status_code < 500:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    raise AssertionError(f"{url} did not answer in {seconds:g} s")


def alice_token(settings: Settings) -> str:
    async def make() -> str:
        services = await build_services(
            settings, Overrides(models=FixedChatModels(ScriptedChatModel([])), embedder=HashingEmbedder())
        )
        try:
            async with services.db.session() as session:
                await create_user(session, "alice")
            return (await services.tokens.issue("alice", timedelta(hours=1)))[1]
        finally:
            await services.close()

    return asyncio.run(make())


@pytest.fixture
def server(tmp_path: Path) -> Iterator[tuple[str, str]]:
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "DATAWELL_DATA_DIR": str(tmp_path / "data"),
        "DATAWELL_JWT_SECRET": SECRET,
        "DATAWELL_EMBEDDINGS_ENABLED": "false",
        "DATAWELL_EMBEDDED_MODEL_ENABLED": "false",
        "DATAWELL_WORKER_POLL_SECONDS": "0.2",
        "DATAWELL_METRICS": "token",
        "DATAWELL_METRICS_TOKEN": "scrape-me",
    }
    settings = Settings(data_dir=tmp_path / "data", jwt_secret=SECRET, embeddings_enabled=False)
    token = alice_token(settings)
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.observability.serve_scripted", str(port)], cwd=REPO, env=env
    )
    try:
        wait_for(f"http://127.0.0.1:{port}/health")
        yield f"http://127.0.0.1:{port}", token
    finally:
        stop(process)


@pytest.fixture
def prometheus(server: tuple[str, str], tmp_path: Path) -> Iterator[str]:
    target = server[0].removeprefix("http://")
    port = free_port()
    config = tmp_path / "prometheus.yml"
    config.write_text(
        "global:\n  scrape_interval: 1s\n"
        "scrape_configs:\n"
        "  - job_name: datawell\n"
        "    authorization:\n      credentials: scrape-me\n"
        f"    static_configs:\n      - targets: ['{target}']\n"
    )
    process = subprocess.Popen(
        [
            str(PROMETHEUS),
            f"--config.file={config}",
            f"--storage.tsdb.path={tmp_path / 'tsdb'}",
            f"--web.listen-address=127.0.0.1:{port}",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for(f"http://127.0.0.1:{port}/-/ready")
        yield f"http://127.0.0.1:{port}"
    finally:
        stop(process)


def query(prometheus: str, expression: str) -> dict[frozenset[tuple[str, str]], float]:
    response = httpx.get(f"{prometheus}/api/v1/query", params={"query": expression}, timeout=10)
    assert response.status_code == 200, response.text
    result = response.json()["data"]["result"]
    return {
        frozenset((k, v) for k, v in r["metric"].items() if k not in ("instance", "job")): float(r["value"][1])
        for r in result
    }


def scraped(prometheus: str, expression: str, seconds: float = 30.0) -> dict[frozenset[tuple[str, str]], float]:
    """The series once a scrape after the work has reached Prometheus."""
    deadline = time.monotonic() + seconds
    while True:
        found = query(prometheus, expression)
        if found or time.monotonic() > deadline:
            return found
        time.sleep(0.5)


def test_prometheus_reads_the_series_back(server: tuple[str, str], prometheus: str, tmp_path: Path) -> None:
    base, token = server
    assert httpx.get(f"{base}/metrics", timeout=5).status_code == 401  # DATAWELL_METRICS=token
    csv = tmp_path / "orders.csv"
    csv.write_text(ORDERS)
    with Client(base, token) as client:
        client.create_dataset("sales", "orders", {"order_id": "order", "customer": "who", "total": "EUR"})
        attempt = client.upload(csv, "alice", "sales", "orders", poll_seconds=0.2)
        assert attempt.status == "SUCCEEDED", attempt.status_message
        assert client.autorag("sales", "Who paid the most?").response == ANSWER

    requests = scraped(prometheus, 'datawell_http_requests_total{route="/api/v1/query/autorag"}')
    assert requests == {
        frozenset(
            {
                ("__name__", "datawell_http_requests_total"),
                ("route", "/api/v1/query/autorag"),
                ("method", "POST"),
                ("status", "200"),
            }
        ): 1.0
    }
    runs = scraped(prometheus, 'datawell_runs_total{graph="assistant"}')
    assert list(runs.values()) == [1.0] and ("outcome", "ok") in next(iter(runs))
    tokens = scraped(prometheus, 'sum by (stage, kind) (datawell_model_tokens_total{stage=~"plan|answer"})')
    by = {(dict(k)["stage"], dict(k)["kind"]): v for k, v in tokens.items()}
    assert by[("plan", "prompt")] > by[("plan", "cached")] > 0 and by[("answer", "output")] == len(ANSWER.split())
    ingestions = scraped(prometheus, "datawell_ingestions_total")
    assert {dict(k)["status"]: v for k, v in ingestions.items()} == {"succeeded": 1.0}
    rows = scraped(prometheus, "datawell_ingested_rows_total")
    assert list(rows.values()) == [3.0]
    size = scraped(prometheus, "datawell_ingested_bytes_total")
    assert list(size.values()) == [float(len(ORDERS))]
