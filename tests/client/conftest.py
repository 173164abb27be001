"""A real server process for the client, the client commands and the README walk-through:
`tests.agents.serve_fakes` (the app under uvicorn, the assistant replaced by scripted runs,
no model) with its in-process ingestion worker, on a free loopback port and a fresh data
folder. One per test module: starting it takes seconds."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from tests.agents.test_server_process import free_port, stop

REPO = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Live:
    url: str
    env: dict[str, str]  # the DATAWELL_* settings of the server, for commands run beside it
    token: str  # user demo's

    def datawell(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        """`datawell ARGS` as a separate process, as a user runs it beside the server."""
        return subprocess.run(
            [sys.executable, "-m", "datawell", *args],
            cwd=REPO,
            env={**os.environ, **self.env},
            capture_output=True,
            text=True,
            check=check,
            timeout=120,
        )


def server_env(data: Path, port: int) -> dict[str, str]:
    return {
        "DATAWELL_DATA_DIR": str(data),
        "DATAWELL_PORT": str(port),
        "DATAWELL_EMBEDDINGS_ENABLED": "false",
        "DATAWELL_EMBEDDED_MODEL_ENABLED": "false",
        "DATAWELL_WORKER_POLL_SECONDS": "0.1",
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        "HF_HUB_OFFLINE": "1",
    }


def start(command: list[str], env: dict[str, str], url: str) -> subprocess.Popen[bytes]:
    """Start a server process and wait until /health answers."""
    process = subprocess.Popen(
        command, cwd=REPO, env={**os.environ, **env}, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            output = process.stdout.read().decode() if process.stdout else ""
            pytest.fail(f"the server exited: {output}")
        try:
            if httpx.get(f"{url}/health", timeout=2).status_code == 200:
                return process
        except httpx.TransportError:
            time.sleep(0.2)
    stop(process)
    pytest.fail("the server did not start")


def demo_token(url: str, env: dict[str, str]) -> str:
    """User `demo` created on the server's data folder, as a user does beside it, and a token of theirs."""
    bare = Live(url, env, "")
    bare.datawell("users", "create", "demo")
    return bare.datawell("token", "issue", "demo").stdout.strip()


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    port = free_port()
    env = server_env(tmp_path_factory.mktemp("live") / "data", port)
    url = f"http://127.0.0.1:{port}"
    process = start([sys.executable, "-m", "tests.agents.serve_fakes", str(port)], env, url)
    try:
        token = demo_token(url, env)
        yield Live(url, {**env, "DATAWELL_SERVER": url, "DATAWELL_TOKEN": token}, token)
    finally:
        stop(process)
