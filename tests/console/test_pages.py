"""The console through httpx against the app: sessions, CSRF, access, and each page's content."""

from __future__ import annotations

import re
from pathlib import Path

import httpx

from datawell.services import Services
from tests.conftest import Account, Running


def csrf_of(page: httpx.Response) -> str:
    found = re.search(r'name="csrf-token" content="([0-9a-f]+)"', page.text)
    assert found, page.text[:500]
    return found.group(1)


async def sign_in(client: httpx.AsyncClient, account: Account) -> str:
    """Signs in as `account`; returns the CSRF token of the signed-in pages."""
    page = await client.get("/signin")
    response = await client.post("/signin", data={"csrf": csrf_of(page), "token": account.token, "next": "/"})
    assert response.status_code == 303, response.text
    return csrf_of(await client.get("/"))


async def test_pages_need_a_session(client: httpx.AsyncClient) -> None:
    response = await client.get("/")
    assert response.status_code == 303
    assert response.headers["location"] == "/signin?next=/"


async def test_sign_in_sets_a_protected_session_cookie_and_sign_out_ends_it(
    client: httpx.AsyncClient, alice: Account, sales: str
) -> None:
    page = await client.get("/signin")
    response = await client.post("/signin", data={"csrf": csrf_of(page), "token": alice.token})
    cookie = next(c for c in response.headers.get_list("set-cookie") if c.startswith("datawell_session="))
    assert "HttpOnly" in cookie and "SameSite=Lax" in cookie and "Secure" not in cookie
    home = await client.get("/")
    assert "alice/sales" in home.text and ">orders</a>" in home.text
    session_cookie = client.cookies["datawell_session"]

    out = await client.post("/signout", data={"csrf": csrf_of(home)})
    assert out.status_code == 303
    # The session's own token is revoked: the cookie is worthless even if kept.
    client.cookies.set("datawell_session", session_cookie)
    assert (await client.get("/")).status_code == 303
    # The pasted token is untouched.
    assert (await client.get("/api/v1/build-specs", headers=alice.headers)).status_code == 200


async def test_a_bad_token_is_refused_in_the_page(client: httpx.AsyncClient) -> None:
    page = await client.get("/signin")
    response = await client.post("/signin", data={"csrf": csrf_of(page), "token": "not-a-token"})
    assert response.status_code == 401
    assert "the bearer token is not a valid JWT" in response.text


async def test_a_form_without_its_csrf_token_is_refused(
    client: httpx.AsyncClient, alice: Account, services: Services
) -> None:
    await sign_in(client, alice)
    response = await client.post("/new-dataset", data={"namespace": "sales", "name": "orders", "field": "a"})
    assert response.status_code == 403
    assert "did not carry the console's security token" in response.text
    forged = await client.post("/new-dataset", data={"csrf": "0" * 64, "namespace": "sales", "name": "x"})
    assert forged.status_code == 403
    assert (await client.get("/api/v1/datasets/alice/sales", headers=alice.headers)).status_code == 404
    # The API with the session cookie: reading works, writing needs the CSRF header.
    assert (await client.get("/api/v1/build-specs")).status_code == 200
    assert (await client.post("/api/v1/ingest/new/sales/x", json={"schemaDefinition": {"a": "b"}})).status_code == 401


async def test_another_users_namespace_is_not_visible(
    client: httpx.AsyncClient, alice: Account, bob: Account, sales: str
) -> None:
    await sign_in(client, bob)
    home = await client.get("/")
    assert "alice/sales" not in home.text
    for path in ("/datasets/alice/sales/orders", "/ask/alice/sales", "/ontology/alice/sales"):
        response = await client.get(path)
        assert response.status_code == 403, path
        assert "has no read access to namespace alice/sales" in response.text
        assert "Traceback" not in response.text


async def test_create_a_dataset_with_its_schema(client: httpx.AsyncClient, alice: Account) -> None:
    csrf = await sign_in(client, alice)
    form = {"csrf": csrf, "namespace": "shop", "name": "orders", "description": "Orders",
            "field": ["customer", "total"], "field_description": ["Who", "EUR"]}  # fmt: skip
    created = await client.post("/new-dataset", data=form)
    assert created.status_code == 303
    page = await client.get(created.headers["location"])
    assert "<code>customer</code>" in page.text and "EUR" in page.text
    assert "Dataset shop/orders created." in page.text

    taken = await client.post("/new-dataset", data=form)
    assert taken.status_code == 409
    assert "already exists" in taken.text and 'value="customer"' in taken.text


async def test_tokens_issue_and_revoke(client: httpx.AsyncClient, alice: Account, bob: Account) -> None:
    csrf = await sign_in(client, alice)
    issued = await client.post("/tokens", data={"csrf": csrf, "description": "laptop", "days": "7"})
    assert "it is shown only once" in issued.text
    token_id = re.search(r"New token <code>([0-9a-f-]+)</code>", issued.text)
    assert token_id
    revoked = await client.post(f"/tokens/{token_id.group(1)}/revoke", data={"csrf": csrf})
    assert revoked.status_code == 303
    assert "revoked" in (await client.get("/tokens")).text
    others = await client.post(f"/tokens/{bob.token_id}/revoke", data={"csrf": csrf})
    assert others.status_code == 404


def test_a_queued_run_shows_its_place_where_the_plan_will_appear() -> None:
    from datawell.console.ask import _render
    from datawell.graphs.events import RunQueued

    event = _render(RunQueued(position=2))
    assert event is not None and event.event == "queued"
    assert "number 2 in the queue" in str(event.data)
    turn = (Path(__file__).parents[2] / "datawell/console/templates/ask_turn.html").read_text()
    assert 'sse-swap="plan,queued"' in turn


async def test_a_datasets_rows_page_by_cursor_and_download(
    client: httpx.AsyncClient, services: Services, alice: Account
) -> None:
    import io

    import pyarrow.parquet as pq

    from tests.ingest.support import create_dataset, drain, upload

    await create_dataset(client, alice, body={"schemaDefinition": {"n": "A number"}})
    await upload(services, "alice", "n.csv", ("n\n" + "".join(f"{i}\n" for i in range(1, 61))).encode())
    await drain(services)
    await sign_in(client, alice)
    first = await client.get("/datasets/alice/sales/orders")
    assert "50 rows of 60" in first.text and "First page" not in first.text
    cursor = re.search(r'href="\?cursor=([^"]+)">Next', first.text)
    assert cursor is not None
    second = await client.get(f"/datasets/alice/sales/orders?cursor={cursor.group(1)}")
    assert "10 rows of 60" in second.text and "← First page" in second.text and "Next →" not in second.text
    assert "<td>60</td>" in second.text and "<td>1</td>" not in second.text
    for format in ("parquet", "csv", "jsonl"):
        assert f'href="/datasets/alice/sales/orders/rows.{format}"' in first.text
    download = await client.get("/datasets/alice/sales/orders/rows.parquet")
    assert download.status_code == 200
    assert pq.read_table(io.BytesIO(download.content)).column("n").to_pylist() == list(range(1, 61))
    csv = await client.get("/datasets/alice/sales/orders/rows.csv", params={"filter": "n > 58"})
    assert csv.text.splitlines() == ['"n"', "59", "60"]
    assert (await client.get("/datasets/alice/sales/orders/rows.xml")).status_code == 404


async def test_edit_rename_and_delete_a_dataset(client: httpx.AsyncClient, alice: Account, sales: str) -> None:
    csrf = await sign_in(client, alice)
    page = await client.get("/datasets/alice/sales/orders/edit")
    assert 'value="customer"' in page.text
    form = {"csrf": csrf, "name": "purchases", "description": "Shop orders",
            "field": ["customer", "total", "placed"], "field_description": ["Who", "EUR", "When"]}  # fmt: skip
    saved = await client.post("/datasets/alice/sales/orders/edit", data=form)
    assert saved.status_code == 303 and saved.headers["location"].startswith("/datasets/alice/sales/purchases")
    shown = await client.get(saved.headers["location"])
    assert (
        "Saved sales/purchases." in shown.text and "<code>placed</code>" in shown.text and "Shop orders" in shown.text
    )
    bad = await client.post(
        "/datasets/alice/sales/purchases/edit", data={**form, "field": ["1x"], "field_description": ["?"]}
    )
    assert bad.status_code == 422 and 'value="1x"' in bad.text

    asked = await client.get("/datasets/alice/sales/purchases/clear")
    assert "Clear alice/sales/purchases?" in asked.text and "rows and their search vectors" in asked.text
    assert 'action="/datasets/alice/sales/purchases/clear"' in asked.text
    confirm = await client.get("/datasets/alice/sales/purchases/delete")
    assert "Delete alice/sales/purchases?" in confirm.text and "The name is free again at once." in confirm.text
    assert 'action="/datasets/alice/sales/purchases/delete"' in confirm.text
    deleted = await client.post("/datasets/alice/sales/purchases/delete", data={"csrf": csrf})
    assert deleted.status_code == 303
    home = await client.get(deleted.headers["location"])
    assert "Deleted sales/purchases: 0 rows" in home.text
    assert (await client.get("/api/v1/datasets/alice/sales/purchases", headers=alice.headers)).status_code == 404


async def test_a_minted_visitor_pair_does_not_pass_for_a_session(
    client: httpx.AsyncClient, service: Running, alice: Account, bob: Account, sales: str
) -> None:
    """Issue 26: the form token was HMAC(key, CSRF cookie), so any visitor could mint a pair and
    a same-site page could plant it. A token is now bound to the session: neither a visitor's
    pair nor another user's session pair passes for alice's session."""
    transport = httpx.ASGITransport(app=service.asgi, raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as attacker:
        minted = csrf_of(await attacker.get("/signin"))
        minted_cookie = attacker.cookies["datawell_csrf"]
        bobs = await sign_in(attacker, bob)
    await sign_in(client, alice)
    client.cookies.set("datawell_csrf", minted_cookie)
    for token in (minted, bobs):
        forged = await client.post("/new-dataset", data={"csrf": token, "namespace": "sales", "name": "planted"})
        assert forged.status_code == 403
        api = await client.post("/api/v1/ingest/new/sales/planted", json={"schemaDefinition": {"a": "b"}},
                                headers={"X-CSRF-Token": token})  # fmt: skip
        assert api.status_code == 401
    assert (await client.get("/api/v1/datasets/alice/sales/planted", headers=alice.headers)).status_code == 404
    own = csrf_of(await client.get("/new-dataset"))
    created = await client.post("/new-dataset", data={"csrf": own, "namespace": "sales", "name": "mine",
                                                      "field": "a", "field_description": "A"})  # fmt: skip
    assert created.status_code == 303


async def test_every_console_response_carries_the_security_headers(client: httpx.AsyncClient, alice: Account) -> None:
    await sign_in(client, alice)
    for path in ("/signin", "/", "/tokens", "/static/console.css"):
        response = await client.get(path)
        assert response.headers["x-frame-options"] == "DENY", path
        policy = response.headers["content-security-policy"]
        assert "frame-ancestors 'none'" in policy and "script-src 'self'" in policy, path
        assert "'unsafe-inline'" not in policy and "'unsafe-eval'" not in policy
        assert response.headers["x-content-type-options"] == "nosniff"
        assert response.headers["referrer-policy"] == "same-origin"
        assert (response.headers.get("cache-control") == "no-store") == (not path.startswith("/static/")), path
    assert "x-frame-options" not in (await client.get("/api/v1/build-specs", headers=alice.headers)).headers


async def test_over_https_the_cookies_are_host_prefixed(service: Running, alice: Account) -> None:
    transport = httpx.ASGITransport(app=service.asgi, raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport, base_url="https://testserver") as https:
        page = await https.get("/signin")
        assert [c.split("=")[0] for c in page.headers.get_list("set-cookie")] == ["__Host-datawell_csrf"]
        response = await https.post("/signin", data={"csrf": csrf_of(page), "token": alice.token})
        cookies = {c.split("=")[0]: c for c in response.headers.get_list("set-cookie")}
        assert set(cookies) == {"__Host-datawell_session", "__Host-datawell_csrf"}
        assert all("Secure" in c and "Path=/" in c and "Domain" not in c for c in cookies.values())
        assert (await https.get("/tokens")).status_code == 200
        # A plain-named cookie (which any page of the site could set over http) is no session here.
        session = https.cookies["__Host-datawell_session"]
        https.cookies.clear()
        https.cookies.set("datawell_session", session)
        assert (await https.get("/tokens")).status_code == 303


async def test_unsafe_requests_a_browser_marks_as_from_another_origin_are_refused(
    client: httpx.AsyncClient, service: Running, alice: Account
) -> None:
    """Fetch Metadata: even with the right token, a form a browser sends from another origin of
    the site (another port: `same-site`) or another site is refused; the sign-in form too."""
    own = await sign_in(client, alice)
    form = {"csrf": own, "namespace": "sales", "name": "x", "field": "a", "field_description": "A"}
    for where in ("same-site", "cross-site"):
        assert (await client.post("/new-dataset", data=form, headers={"Sec-Fetch-Site": where})).status_code == 403
        api = await client.post("/api/v1/ingest/new/sales/x", json={"schemaDefinition": {"a": "b"}},
                                headers={"X-CSRF-Token": own, "Sec-Fetch-Site": where})  # fmt: skip
        assert api.status_code == 401
    transport = httpx.ASGITransport(app=service.asgi, raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as visitor:
        page = await visitor.get("/signin")
        login = {"csrf": csrf_of(page), "token": alice.token}
        assert (await visitor.post("/signin", data=login, headers={"Sec-Fetch-Site": "same-site"})).status_code == 403
        assert (await visitor.post("/signin", data=login, headers={"Sec-Fetch-Site": "same-origin"})).status_code == 303
    created = await client.post("/new-dataset", data=form, headers={"Sec-Fetch-Site": "same-origin"})
    assert created.status_code == 303
