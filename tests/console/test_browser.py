"""The console in a real headless Chromium (Debian's, through Playwright) against a real
`datawell serve`-style uvicorn process with fakes (`serve_console.py`).

Set DATAWELL_CONSOLE_SCREENSHOTS=docs/console to write the README's screenshots while the
walk-through runs; CI leaves them alone."""

from __future__ import annotations

import asyncio
import html
import http.server
import os
import re
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path

import httpx
import pytest
import pytest_asyncio

from datawell.config import Settings
from datawell.llm.embeddings import HashingEmbedder
from datawell.llm.models import FixedChatModels
from datawell.llm.scripted import ScriptedChatModel
from datawell.services import Overrides, build_services
from datawell.storage.users import create_user
from tests.agents.test_server_process import free_port, stop
from tests.fake_runs import ANSWER, PLAN

CHROMIUM = Path("/usr/bin/chromium")
REPO = Path(__file__).resolve().parents[2]
SECRET = "console-browser-secret-console-browser-secret"
SHOTS = os.environ.get("DATAWELL_CONSOLE_SCREENSHOTS")
LAUNCH_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]

pytestmark = [
    pytest.mark.browser,
    pytest.mark.asyncio(loop_scope="module"),
    pytest.mark.skipif(
        not CHROMIUM.exists(), reason="needs Debian's chromium at /usr/bin/chromium (.ci/run installs it)"
    ),
]

if CHROMIUM.exists():
    from playwright.async_api import Browser, ConsoleMessage, Page, async_playwright, expect

CUSTOMERS = "customer_id,name\n" + "".join(f"C{i:03d},Customer {i}\n" for i in range(1, 13))
ORDERS = "order_id,customer_id,total\n" + "".join(f"O{i:03d},C{1 + i % 12:03d},{10 * i}\n" for i in range(1, 61))


@dataclass
class Server:
    base: str
    tokens: dict[str, str]


async def _accounts(settings: Settings, names: list[str]) -> dict[str, str]:
    services = await build_services(
        settings, Overrides(models=FixedChatModels(ScriptedChatModel([])), embedder=HashingEmbedder())
    )
    try:
        tokens = {}
        for name in names:
            async with services.db.session() as session:
                await create_user(session, name)
            tokens[name] = (await services.tokens.issue(name, timedelta(hours=1)))[1]
        return tokens
    finally:
        await services.close()


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def server(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Server]:
    root = tmp_path_factory.mktemp("console")
    port = free_port()
    env = {
        "DATAWELL_DATA_DIR": str(root / "data"),
        "DATAWELL_DATABASE_URL": f"sqlite+aiosqlite:///{root / 'datawell.db'}",
        "DATAWELL_JWT_SECRET": SECRET,
        "DATAWELL_PUBLIC_BASE_URL": f"http://127.0.0.1:{port}",
        "DATAWELL_EMBEDDINGS_ENABLED": "false",
        "DATAWELL_EMBEDDED_MODEL_ENABLED": "false",
        "DATAWELL_WORKER_POLL_SECONDS": "0.2",
        "DATAWELL_EVALS_DIR": str(REPO / "docs" / "evals"),
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    }
    settings = Settings(
        data_dir=root / "data", database_url=env["DATAWELL_DATABASE_URL"], jwt_secret=SECRET, embeddings_enabled=False
    )
    tokens = await _accounts(settings, ["alice", "bob"])
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.console.serve_console", str(port)],
        cwd=REPO,
        env={**os.environ, **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    base = env["DATAWELL_PUBLIC_BASE_URL"]
    try:
        deadline = time.monotonic() + 60
        async with httpx.AsyncClient() as http:
            while True:
                if process.poll() is not None:
                    pytest.fail(f"the server exited: {process.stdout.read().decode() if process.stdout else ''}")
                try:
                    if (await http.get(base + "/health")).status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                if time.monotonic() > deadline:
                    pytest.fail("the server did not start")
                await asyncio.sleep(0.1)
        yield Server(base, tokens)
    finally:
        stop(process)


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def browser() -> AsyncIterator[Browser]:
    async with async_playwright() as playwright:
        launched = await playwright.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=LAUNCH_ARGS)
        yield launched
        await launched.close()


@dataclass
class Console:
    """A browser tab on the console that records every JavaScript error."""

    page: Page
    server: Server
    errors: list[str] = field(default_factory=list)

    def watch(self, message: ConsoleMessage) -> None:
        # A page answered with its error status (a refused form, a 409 conflict) is logged by
        # Chromium as a failed load of the document itself; the tests assert those statuses.
        own_status = message.text.startswith("Failed to load resource") and message.location["url"] == self.page.url
        if message.type == "error" and not own_status:
            self.errors.append(f"{self.page.url}: {message.text}")

    async def go(self, path: str) -> None:
        await self.page.goto(self.server.base + path)

    async def shot(self, name: str, full_page: bool = True) -> None:
        if SHOTS:
            await self.page.screenshot(path=str(Path(SHOTS) / f"{name}.png"), full_page=full_page)

    async def sign_in(self, user: str) -> None:
        await self.go("/")
        await expect(self.page.get_by_role("heading", name="Sign in")).to_be_visible()
        await self.page.get_by_label("Token").fill(self.server.tokens[user])
        await self.page.get_by_role("button", name="Sign in").click()
        await expect(self.page.get_by_role("heading", name="Datasets")).to_be_visible()


@pytest_asyncio.fixture(loop_scope="module")
async def console(browser: Browser, server: Server) -> AsyncIterator[Console]:
    context = await browser.new_context(viewport={"width": 1200, "height": 800})
    page = await context.new_page()
    tab = Console(page, server)
    page.on("console", tab.watch)
    page.on("pageerror", lambda error: tab.errors.append(f"{page.url}: {error}"))
    yield tab
    await context.close()


async def create_dataset(console: Console, name: str, fields: dict[str, str]) -> None:
    page = console.page
    await console.go("/new-dataset")
    await page.get_by_label("Namespace").fill("shop")
    await page.get_by_label("Name", exact=True).fill(name)
    await page.get_by_label("Description", exact=True).fill(f"The shop's {name}")
    for index, (field_name, text) in enumerate(fields.items()):
        if index:
            await page.get_by_role("button", name="Add field").click()
        await page.get_by_label("field name").nth(index).fill(field_name)
        await page.get_by_label("field description").nth(index).fill(text)
    if name == "orders":
        await console.shot("new-dataset")
    await page.get_by_role("button", name="Create dataset").click()
    await expect(page.get_by_text(f"Dataset shop/{name} created.")).to_be_visible()


async def upload(console: Console, filename: str, content: str, rows: int) -> None:
    page = console.page
    await page.locator("[data-file]").set_input_files(
        files=[{"name": filename, "mimeType": "text/csv", "buffer": content.encode()}]
    )
    await expect(page.locator("[data-upload-status]")).to_contain_text("is QUEUED", timeout=15_000)
    attempt = page.locator("tr.attempt").first
    await expect(attempt).to_have_attribute("data-status", "SUCCEEDED", timeout=30_000)
    await expect(attempt.locator(".processed-rows")).to_have_text(str(rows))
    await page.reload()
    await expect(page.locator("[data-row-count]")).to_have_text(str(rows))


async def test_console_walkthrough(console: Console) -> None:
    page = console.page
    await console.go("/")
    await console.shot("signin")
    await console.sign_in("alice")

    await create_dataset(console, "customers", {"customer_id": "Customer number", "name": "Customer name"})
    await upload(console, "customers.csv", CUSTOMERS, 12)
    await create_dataset(console, "orders", {"order_id": "Order number", "customer_id": "Who ordered", "total": "EUR"})
    await upload(console, "orders.csv", ORDERS, 60)
    await expect(page.locator("table.schema")).to_contain_text("integer")
    await console.shot("dataset")
    await page.get_by_role("link", name="Next →").click()
    await expect(page.get_by_text("10 rows of 60")).to_be_visible()
    await expect(page.locator("table.rows")).to_contain_text("O051")

    await console.go("/")
    await expect(page.get_by_role("link", name="orders")).to_be_visible()
    await console.shot("datasets")

    await console.go("/ask/alice/shop")
    await page.get_by_placeholder("Ask a question").fill("Who orders most?")
    await page.get_by_role("button", name="Ask").click()
    turn = page.locator("article.turn").first
    await expect(turn.locator(".plan li")).to_have_count(len(PLAN))
    await expect(turn.locator(".step")).to_have_count(2)
    await expect(turn.locator(".step table.rows").first).to_contain_text("carol")
    await expect(turn.locator(".step pre.query").first).to_contain_text("GROUP BY customer")
    await expect(turn.locator(".answer.final")).to_contain_text(ANSWER)
    await page.get_by_placeholder("Ask a question").fill("And the second?")
    await page.get_by_role("button", name="Ask").click()
    await expect(page.locator("article.turn").nth(1).locator(".answer.final")).to_contain_text(
        "(after: Who orders most?)"
    )
    await console.shot("ask")

    await console.go("/ontology/alice/shop")
    await page.get_by_role("button", name="Curate links").click()
    await expect(page.get_by_text(re.compile(r"Curated 2 datasets: [1-9]\d* links suggested\."))).to_be_visible()
    suggested = page.locator("table.links").nth(1)
    await expect(suggested).to_contain_text("shop/orders.customer_id")
    await suggested.get_by_role("button", name="Activate").first.click()
    await expect(page.get_by_text(re.compile(r"is now Active\."))).to_be_visible()
    await expect(page.locator("table.links").first).to_contain_text("ExactMatch")
    await expect(page.locator("svg path.edge.active")).to_have_count(1)
    await expect(page.locator("svg")).to_contain_text("customer_id ↔ customer_id")
    await console.shot("ontology")

    await console.go("/build-specs/new")
    await page.get_by_label("Sources").fill("alice/shop/orders\nalice/shop/customers")
    await page.get_by_label("Destination").fill("alice/shop/orders")
    await page.get_by_label("Code").fill("SELECT * FROM orders")
    await page.get_by_role("button", name="Create").click()
    await expect(page.get_by_text("BuildSpec created.")).to_be_visible()
    spec_id = page.url.rsplit("/", 1)[1]
    saved_meanwhile = await asyncio.to_thread(
        httpx.put,
        f"{console.server.base}/api/v1/build-specs/{spec_id}",
        headers={"Authorization": f"Bearer {console.server.tokens['alice']}", "If-Match": "1"},
        json={
            "sources": [{"owner": "alice", "namespace": "shop", "datasetName": "orders"}],
            "destination": {"owner": "alice", "namespace": "shop", "datasetName": "orders"},
            "code": {"payload": "saved meanwhile"},
        },
    )
    assert saved_meanwhile.status_code == 200
    await page.get_by_label("Code").fill("my edit")
    await page.get_by_role("button", name="Save").click()
    await expect(page.get_by_text("Version conflict:")).to_be_visible()
    await expect(page.locator(".conflict")).to_contain_text("saved meanwhile")
    await console.shot("build-spec-conflict")

    await console.go("/evals")
    await page.get_by_role("link", name="nl2ql", exact=True).click()
    await expect(page.locator("table.cases")).to_contain_text("retail-count-orders")
    await console.shot("eval-report", full_page=False)
    await console.go("/evals")
    await console.shot("evals")

    await console.go("/tokens")
    await page.get_by_label("Description").fill("laptop")
    await page.get_by_role("button", name="Issue a token").click()
    await expect(page.get_by_text("it is shown only once")).to_be_visible()
    await console.shot("tokens")

    await console.go("/datasets/alice/shop/customers/clear")
    await expect(page.locator(".warning")).to_contain_text("12 rows")
    await expect(page.locator(".warning")).to_contain_text("ontology links")
    await console.shot("clear")
    await page.get_by_role("button", name="Clear customers").click()
    await expect(page.get_by_text(re.compile(r"Cleared shop/customers: 12 rows"))).to_be_visible()

    await page.get_by_role("button", name="Sign out").click()
    await expect(page.get_by_text("Signed out.")).to_be_visible()
    await console.go("/tokens")
    await expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
    assert console.errors == []


async def test_a_failed_attempt_shows_its_message_and_can_be_retried(console: Console) -> None:
    await console.sign_in("alice")
    await create_dataset(console, "notes", {"text": "A note"})
    page = console.page
    await page.locator("[data-file]").set_input_files(
        files=[{"name": "broken.json", "mimeType": "application/json", "buffer": b'{"text": '}]
    )
    attempt = page.locator("tr.attempt").first
    await expect(attempt).to_have_attribute("data-status", "FAILED", timeout=30_000)
    await expect(page.locator("tr.message").first).not_to_be_empty()
    await page.get_by_role("button", name="Retry").first.click()
    await expect(page.get_by_text(re.compile(r"Retrying as ingestion"))).to_be_visible()
    assert console.errors == []


async def test_another_users_namespace_is_not_visible_and_forms_need_their_csrf_token(console: Console) -> None:
    alice = {"Authorization": f"Bearer {console.server.tokens['alice']}"}
    created = await asyncio.to_thread(
        httpx.post,
        f"{console.server.base}/api/v1/ingest/new/private/diary",
        json={"schemaDefinition": {"entry": "Text"}},
        headers=alice,
    )
    assert created.status_code == 201
    await console.sign_in("bob")
    page = console.page
    await expect(page.get_by_text("alice/private")).to_have_count(0)
    response = await page.goto(console.server.base + "/datasets/alice/private/diary")
    assert response is not None and response.status == 403
    await expect(page.get_by_role("alert")).to_contain_text("has no read access to namespace alice/private")

    await console.go("/new-dataset")
    await page.locator('form.stacked input[name="csrf"]').evaluate("input => input.remove()")
    await page.get_by_label("Namespace").fill("mine")
    await page.get_by_label("Name", exact=True).fill("things")
    await page.get_by_role("button", name="Create dataset").click()
    await expect(page.get_by_role("heading", name="Form refused")).to_be_visible()
    await console.shot("refused")
    assert console.errors == []


class Attacker:
    """A page on another loopback port of the same host: same site as the console (a site is
    the scheme and host; ports do not count), so the browser sends the console's SameSite=Lax
    cookies with the forms it posts, and cookies it sets reach the console."""

    def __init__(self, pages: dict[str, tuple[str, list[str]]]) -> None:
        self.pages = pages  # path -> (html, set-cookie headers)
        served = self.pages

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                html, cookies = served.get(self.path, ("not here", []))
                self.send_response(200)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                for cookie in cookies:
                    self.send_header("Set-Cookie", cookie)
                self.end_headers()
                self.wfile.write(html.encode())

            def log_message(self, *_args: object) -> None:
                pass

        self.http = http.server.ThreadingHTTPServer(("127.0.0.1", free_port()), Handler)
        self.base = f"http://127.0.0.1:{self.http.server_address[1]}"
        threading.Thread(target=self.http.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.http.shutdown()
        self.http.server_close()


def auto_post(action: str, fields: dict[str, str]) -> str:
    inputs = "".join(
        f'<input type="hidden" name="{html.escape(k)}" value="{html.escape(v)}">' for k, v in fields.items()
    )
    return (f'<form id="f" method="post" action="{html.escape(action)}">{inputs}</form>'
            '<script>document.getElementById("f").submit()</script>')  # fmt: skip


async def minted_pair(base: str) -> tuple[str, str]:
    """What any visitor gets from the console without signing in: a CSRF cookie and the form
    token its pages carry."""
    async with httpx.AsyncClient() as http_client:
        page = await http_client.get(base + "/signin")
    token = re.search(r'name="csrf-token" content="([^"]+)"', page.text)
    assert token, page.text[:300]
    return http_client.cookies["datawell_csrf"], token.group(1)


async def test_a_same_site_page_cannot_post_with_a_minted_csrf_pair(console: Console) -> None:
    """The attack of issue 26: a page on another port of the host plants a CSRF cookie it
    minted and auto-posts the matching token to clear the victim's dataset and to create one."""
    await console.sign_in("alice")
    await create_dataset(console, "victim", {"item": "An item"})
    await upload(console, "victim.csv", "item\napple\npear\n", 2)
    cookie, token = await minted_pair(console.server.base)
    base = console.server.base
    planted = [f"datawell_csrf={cookie}; Path=/; SameSite=Lax"]
    attacker = Attacker(
        {
            "/clear": (auto_post(f"{base}/datasets/alice/shop/victim/clear", {"csrf": token}), planted),
            "/new": (
                auto_post(f"{base}/new-dataset", {"csrf": token, "namespace": "shop", "name": "planted", "field": "x"}),
                planted,
            ),
        }
    )
    try:
        page = await console.page.context.new_page()
        for path in ("/clear", "/new"):
            await page.goto(attacker.base + path)
            await page.wait_for_load_state("networkidle")
        await page.close()
    finally:
        attacker.close()
    alice = {"Authorization": f"Bearer {console.server.tokens['alice']}"}
    created = await asyncio.to_thread(httpx.get, f"{base}/api/v1/datasets/alice/shop/planted", headers=alice)
    await console.go("/datasets/alice/shop/victim")
    rows = await console.page.locator("[data-row-count]").text_content()
    assert (rows, created.status_code) == ("2", 404)
    # The victim's own session still works (the planted cookie did not end it).
    await console.go("/datasets/alice/shop/victim/clear")
    await console.page.get_by_role("button", name="Clear victim").click()
    await expect(console.page.get_by_text(re.compile(r"Cleared shop/victim: 2 rows"))).to_be_visible()


async def test_a_same_site_frame_of_tokens_does_not_render_signed_in(console: Console) -> None:
    """Issue 26: a page on another port framed /tokens and it loaded signed in (the frame is
    same-site, so the session cookie went along). X-Frame-Options and frame-ancestors refuse it."""
    await console.sign_in("alice")
    attacker = Attacker({"/frame": (f'<iframe name="victim" src="{console.server.base}/tokens"></iframe>', [])})
    try:
        page = await console.page.context.new_page()
        await page.goto(attacker.base + "/frame")
        await page.wait_for_load_state("networkidle")
        frame = page.frame(name="victim")
        assert frame is not None
        framed = await frame.content()
        await page.close()
    finally:
        attacker.close()
    assert "Sign out" not in framed and "alice" not in framed and "Issue a token" not in framed
    await console.go("/tokens")
    await expect(console.page.get_by_role("button", name="Issue a token")).to_be_visible()


async def test_a_same_site_page_cannot_sign_the_victim_in_as_someone_else(console: Console) -> None:
    """Login CSRF: the sign-in form's token is bound to the visitor cookie, which a page on
    another port can mint and plant; it posts the attacker's own token, and the victim would
    work (upload, ask) in the attacker's account. Browsers say where a request comes from
    (`Sec-Fetch-Site: same-site`), and the console refuses unsafe requests from other origins.
    (A signed-in victim is safe anyway: the form's token is then bound to the session.)"""
    await console.go("/signin")
    cookie, token = await minted_pair(console.server.base)
    attacker = Attacker(
        {
            "/signin": (
                auto_post(f"{console.server.base}/signin", {"csrf": token, "token": console.server.tokens["bob"]}),
                [f"datawell_csrf={cookie}; Path=/; SameSite=Lax"],
            )
        }
    )
    try:
        page = await console.page.context.new_page()
        await page.goto(attacker.base + "/signin")
        await page.wait_for_load_state("networkidle")
        await page.close()
    finally:
        attacker.close()
    await console.go("/tokens")
    await expect(console.page.get_by_role("heading", name="Sign in")).to_be_visible()
    await console.sign_in("alice")
