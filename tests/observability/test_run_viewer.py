"""The run viewer in a real headless Chromium against a live server with real runs
(`serve_scripted.py`): a question asked on the Ask page links to its timeline (stages, model
calls with tokens, the query with its row count, the prompts for the asker), and the runs
list finds it. With DATAWELL_CONSOLE_SCREENSHOTS=docs/console it writes docs/console/run.png."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from datawell.client import Client
from datawell.config import Settings
from tests.agents.test_server_process import free_port, stop
from tests.console.test_browser import CHROMIUM, LAUNCH_ARGS
from tests.observability.serve_scripted import ANSWER, QUERY
from tests.observability.test_prometheus import ORDERS, REPO, SECRET, alice_token, wait_for

SHOTS = os.environ.get("DATAWELL_CONSOLE_SCREENSHOTS")

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not CHROMIUM.exists(), reason="needs Debian's chromium at /usr/bin/chromium"),
]


@pytest.fixture
def server(tmp_path: Path) -> Iterator[tuple[str, str]]:
    port = free_port()
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "DATAWELL_DATA_DIR": str(tmp_path / "data"),
        "DATAWELL_JWT_SECRET": SECRET,
        "DATAWELL_PUBLIC_BASE_URL": f"http://127.0.0.1:{port}",
        "DATAWELL_EMBEDDINGS_ENABLED": "false",
        "DATAWELL_EMBEDDED_MODEL_ENABLED": "false",
        "DATAWELL_WORKER_POLL_SECONDS": "0.2",
    }
    token = alice_token(Settings(data_dir=tmp_path / "data", jwt_secret=SECRET, embeddings_enabled=False))
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.observability.serve_scripted", str(port)],
        cwd=REPO,
        env=env,
    )
    try:
        base = f"http://127.0.0.1:{port}"
        wait_for(base + "/health")
        csv = tmp_path / "orders.csv"
        csv.write_text(ORDERS)
        with Client(base, token) as client:
            client.create_dataset("sales", "orders", {"order_id": "order", "customer": "who", "total": "EUR"})
            assert client.upload(csv, "alice", "sales", "orders", poll_seconds=0.2).status == "SUCCEEDED"
        yield base, token
    finally:
        stop(process)


async def test_a_real_runs_timeline(server: tuple[str, str]) -> None:
    from playwright.async_api import async_playwright, expect

    base, token = server
    errors: list[str] = []
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=LAUNCH_ARGS)
        page = await (await browser.new_context(viewport={"width": 1200, "height": 800})).new_page()
        page.on("pageerror", lambda error: errors.append(str(error)))
        await page.goto(base + "/")
        await page.get_by_label("Token").fill(token)
        await page.get_by_role("button", name="Sign in").click()
        await expect(page.get_by_role("heading", name="Datasets")).to_be_visible()

        await page.goto(base + "/ask/alice/sales")
        await page.get_by_placeholder("Ask a question").fill("Who paid the most?")
        await page.get_by_role("button", name="Ask").click()
        turn = page.locator("article.turn").first
        await expect(turn.locator(".answer.final")).to_contain_text(ANSWER)
        await turn.get_by_role("link", name="Timeline of this run").click()

        await expect(page.get_by_role("heading", name="Timeline")).to_be_visible()
        await expect(page.locator(".run-facts")).to_contain_text("alice in alice/sales")
        await expect(page.locator(".run-facts")).to_contain_text("ok")
        bars = page.locator(".timeline .bar")
        await expect(bars.filter(has_text="plan: scripted")).to_contain_text("cached")
        await expect(bars.filter(has_text="answer: scripted")).to_contain_text("output tokens")
        query = bars.filter(has=page.locator("code", has_text=QUERY))
        await expect(query).to_contain_text("3 rows")
        await expect(page.locator(".timeline .stage .label", has_text="check")).to_be_visible()
        await bars.filter(has_text="plan: scripted").locator("summary").click()
        prompt = bars.filter(has_text="plan: scripted").locator("details pre")
        await expect(prompt.filter(has_text="Question: Who paid the most?")).to_have_count(1)
        await expect(page.locator(".answer-text")).to_have_text(ANSWER)
        if SHOTS:
            await page.screenshot(path=str(Path(SHOTS) / "run.png"), full_page=True)

        await page.get_by_role("link", name="All runs").click()
        rows = page.locator("table.runs tbody tr")
        await expect(rows).to_have_count(1)
        await expect(rows.first).to_contain_text("Who paid the most?")
        await page.get_by_label("Outcome").fill("QUERY_ERROR")
        await page.get_by_role("button", name="Show").click()
        await expect(rows.first).to_contain_text("No runs.")
        await browser.close()
    assert errors == []
