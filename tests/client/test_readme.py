"""The README's walk-through runs as written: its `sh` blocks marked `<!-- walkthrough -->`,
in order, in one shell at the repository's root, beside a real server (scripted runs, no
model) on which user `demo` exists, as `scripts/serve.sh` leaves it."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from tests.client.conftest import REPO, Live

MARKED = re.compile(r"<!-- walkthrough[^>]*-->\n```sh\n(.*?)```", re.DOTALL)


def walkthrough() -> str:
    blocks = MARKED.findall((REPO / "README.md").read_text())
    assert len(blocks) >= 3, "the README's walk-through blocks are marked <!-- walkthrough -->"
    return "\n".join(blocks)


def test_the_readme_walkthrough_runs(live: Live, tmp_path: Path) -> None:
    # Where the repository has no .venv (a development checkout on a shared venv), `datawell`
    # is this interpreter's.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "datawell").write_text(f'#!/bin/sh\nexec {sys.executable} -m datawell "$@"\n')
    (bin_dir / "datawell").chmod(0o755)
    env = {k: v for k, v in {**os.environ, **live.env}.items() if k != "DATAWELL_TOKEN"}
    env["PATH"] = f"{bin_dir}:{env['PATH']}"
    result = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", walkthrough()],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    assert "demo/shop/orders: 60 rows from orders.csv (ingestion " in out
    assert re.search(r"^orders +order_id, customer_id, product, quantity, unit_price, order_date", out, re.M)
    assert re.search(r"^[0-9a-f-]{36} +SUCCEEDED +60 ", out, re.M)
    assert "\nA: " in out and '"response"' in out
