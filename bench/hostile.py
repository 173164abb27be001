"""Issue 51's attacks against one real server: how fast each is refused, what the server's
memory is after them, and how `/health` answers meanwhile, against `/health` with no attack
measured in the same run (the peer).

    .venv/bin/python -m bench.hostile                      # SQLite, 3 rounds of every attack
    .venv/bin/python -m bench.hostile --database-url postgresql+asyncpg://postgres@127.0.0.1:5432/dw_bench
    .venv/bin/python -m bench.hostile --rounds 5 --out docs/bench/hostile-DATE.txt

The server is `tests.agents.serve_fakes` (uvicorn, the real query tools, scripted runs) on a
free loopback port and a fresh data folder; the attacks go through MCP `run_query`, as the
outside attack sent them. A PostgreSQL database given by URL must exist and be empty.
Never run by the test suite; print and keep `uptime`'s load beside the figures."""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from tests.agents.test_server_process import free_port, stop
from tests.api.test_hostile_queries import MCP_HEADERS, tool_call
from tests.api.test_hostile_server import ATTACKS, HealthWatch, resident_mb
from tests.client.conftest import demo_token, server_env, start


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--database-url", default=None)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    lines = [f"uptime: {subprocess.run(['uptime'], capture_output=True, text=True).stdout.strip()}"]
    with tempfile.TemporaryDirectory() as folder:
        port = free_port()
        env = server_env(Path(folder) / "data", port)
        if args.database_url:
            env["DATAWELL_DATABASE_URL"] = args.database_url
        url = f"http://127.0.0.1:{port}"
        process = start([sys.executable, "-m", "tests.agents.serve_fakes", str(port)], env, url)
        try:
            token = demo_token(url, env)
            headers = {"Authorization": f"Bearer {token}", **MCP_HEADERS}
            with httpx.Client(timeout=120) as client:
                client.post(
                    f"{url}/api/v1/ingest/new/shop/orders",
                    json={"dataDescription": "Orders", "schemaDefinition": {"product": "Product"}},
                    headers=headers,
                ).raise_for_status()
                ask = tool_call("run_query", {"namespace": "shop", "query": "SELECT 1 AS x"})
                client.post(f"{url}/api/v1/mcp", json=ask, headers=headers).raise_for_status()
                with HealthWatch(url) as alone:  # the peer: /health with nothing else running
                    time.sleep(5)
                before = resident_mb(process.pid)
                took: dict[str, list[float]] = {name: [] for name in ATTACKS}
                answers: dict[str, str] = {}
                with HealthWatch(url) as attacked:
                    for _ in range(args.rounds):
                        for name, query in ATTACKS.items():
                            call = tool_call("run_query", {"namespace": "shop", "query": query})
                            started = time.perf_counter()
                            response = client.post(f"{url}/api/v1/mcp", json=call, headers=headers)
                            took[name].append(time.perf_counter() - started)
                            answers[name] = response.text.split('"text":"', 1)[-1][:90]
                after = resident_mb(process.pid)
        finally:
            stop(process)
    store = "postgresql" if args.database_url else "sqlite"
    lines.append(f"store: {store}; rounds: {args.rounds}; attacks through MCP run_query")
    for name, seconds in took.items():
        lines.append(
            f"  {name:18} median {statistics.median(seconds):6.3f} s  max {max(seconds):6.3f} s  {answers[name]}"
        )
    lines.append(f"resident memory: {before:.0f} MB before, {after:.0f} MB after ({after - before:+.0f} MB)")
    peer, during = alone.times, attacked.times
    p99_peer, p99_during = percentile(peer, 0.99), percentile(during, 0.99)
    lines.append(
        f"/health p50 {percentile(during, 0.5) * 1000:.1f} ms, p99 {p99_during * 1000:.1f} ms during the attacks "
        f"({len(during)} polls); alone p50 {percentile(peer, 0.5) * 1000:.1f} ms, p99 {p99_peer * 1000:.1f} ms "
        f"({len(peer)} polls); p99 ratio {p99_during / p99_peer:.2f}"
    )
    text = "\n".join(lines)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
