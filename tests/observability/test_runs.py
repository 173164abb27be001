"""`GET /api/v1/runs/{id}` and `GET /api/v1/runs`: the record of a real assistant run, seen by
the asker (with prompts), the namespace's owner (without), and nobody else."""

from __future__ import annotations

import html
from datetime import timedelta

import httpx

from datawell.graphs.assistant.state import PlanOutput
from datawell.llm.scripted import ScriptedChatModel
from datawell.services import Services
from datawell.storage import access
from datawell.storage.tables import RunRow, utcnow
from tests.conftest import Account, make_account
from tests.console.test_pages import sign_in
from tests.observability.conftest import ANSWER, QUERY, ask


async def test_the_asker_reads_the_whole_run(client: httpx.AsyncClient, alice: Account, sales: str) -> None:
    run_id = await ask(client, alice)
    response = await client.get(f"/api/v1/runs/{run_id}", headers=alice.headers)
    assert response.status_code == 200
    run = response.json()
    assert (run["id"], run["graph"], run["outcome"], run["answer"]) == (run_id, "assistant", "ok", ANSWER)
    assert (run["username"], run["namespace"], run["question"]) == ("alice", "alice/sales", "Who paid the most?")
    stages = [(s["name"], s["parent"]) for s in run["stages"]]
    # The assistant's nodes, and the nl2ql graph's inside its step.
    assert [name for name, _ in stages][:2] == ["plan", "step"]
    step = [name for name, _ in stages].index("step")
    assert {"check", "run"} <= {name for name, parent in stages if parent == step}
    assert stages[-1] == ("answer", None)
    assert all(s["seconds"] >= 0 and s["start"] <= run["seconds"] for s in run["stages"])
    calls = run["modelCalls"]
    assert [c["stage"] for c in calls] == ["plan", "answer"]
    plan, answer = calls
    assert plan["promptTokens"] > plan["cachedTokens"] > 0 and plan["outputTokens"] > 0
    assert any(m["role"] == "human" and "Who paid the most?" in m["content"] for m in plan["prompt"])
    assert QUERY in plan["reply"] and answer["reply"] == ANSWER
    [query] = run["queries"]
    assert (query["text"], query["rows"], query["errorCode"]) == (QUERY, 3, None)
    assert run["stages"][query["parent"]]["name"] == "run"
    assert "Ada" not in str(run["queries"])  # counts, never the rows


async def test_nobody_else_reads_it_and_the_namespace_owner_sees_no_prompts(
    client: httpx.AsyncClient, services: Services, alice: Account, bob: Account, sales: str
) -> None:
    async with services.db.session() as session:
        await access.set_grant(session, "alice", "sales", "bob", access.Permission.READ)
    carol = await make_account(services, "carol")
    run_id = await ask(client, bob)  # bob asks in alice's namespace
    assert (await client.get(f"/api/v1/runs/{run_id}", headers=carol.headers)).status_code == 404
    assert (await client.get(f"/api/v1/runs/{run_id}")).status_code == 401
    own = (await client.get(f"/api/v1/runs/{run_id}", headers=bob.headers)).json()
    assert own["modelCalls"][0]["prompt"]
    owner = (await client.get(f"/api/v1/runs/{run_id}", headers=alice.headers)).json()
    assert [(c["prompt"], c["reply"]) for c in owner["modelCalls"]] == [([], ""), ([], "")]
    assert owner["modelCalls"][0]["promptTokens"] == own["modelCalls"][0]["promptTokens"]
    alice_run = await ask(client, alice)
    # bob reads from alice's namespace but does not own it: alice's own run is hers alone.
    assert (await client.get(f"/api/v1/runs/{alice_run}", headers=bob.headers)).status_code == 404
    assert (await client.get("/api/v1/runs/not-a-uuid", headers=alice.headers)).status_code == 422
    listed = (await client.get("/api/v1/runs", headers=carol.headers)).json()
    assert listed == {"data": []}


async def test_the_list_filters_and_orders(
    client: httpx.AsyncClient, services: Services, alice: Account, bob: Account, sales: str
) -> None:
    async with services.db.session() as session:
        await access.set_grant(session, "alice", "sales", "bob", access.Permission.READ)
    first = await ask(client, alice)
    second = await ask(client, bob)
    listed = (await client.get("/api/v1/runs", headers=alice.headers)).json()["data"]
    assert [r["id"] for r in listed] == [second, first]
    assert listed[0]["username"] == "bob" and listed[0]["promptTokens"] > 0
    by_bob = (await client.get("/api/v1/runs?user=bob", headers=alice.headers)).json()["data"]
    assert [r["id"] for r in by_bob] == [second]
    slowest = (await client.get("/api/v1/runs?order=slowest", headers=alice.headers)).json()["data"]
    assert [r["seconds"] for r in slowest] == sorted((r["seconds"] for r in listed), reverse=True)
    failed = (await client.get("/api/v1/runs?outcome=QUERY_ERROR", headers=alice.headers)).json()
    assert failed == {"data": []}
    assert (await client.get("/api/v1/runs?order=fastest", headers=alice.headers)).status_code == 422
    assert [r["id"] for r in (await client.get("/api/v1/runs", headers=bob.headers)).json()["data"]] == [second]


async def test_the_retention_drops_old_runs(
    client: httpx.AsyncClient, services: Services, alice: Account, sales: str
) -> None:
    old = await ask(client, alice)
    async with services.db.session() as session:
        row = await session.get(RunRow, old)
        assert row is not None
        row.started_at = utcnow() - timedelta(days=services.settings.run_retention_days + 1)
    new = await ask(client, alice)  # saving a run drops the ones past the retention
    listed = (await client.get("/api/v1/runs", headers=alice.headers)).json()["data"]
    assert [r["id"] for r in listed] == [new]
    services.settings.run_retention_days = 0  # keep none
    await ask(client, alice)
    assert [r["id"] for r in (await client.get("/api/v1/runs", headers=alice.headers)).json()["data"]] == [new]


async def test_the_python_client_reads_the_run_and_lists_it(
    client: httpx.AsyncClient, alice: Account, sales: str
) -> None:
    from datawell.client import AsyncClient

    run_id = await ask(client, alice)
    token = alice.headers["Authorization"].removeprefix("Bearer ")
    async with AsyncClient("http://datawell.test", token, transport=client._transport) as python:
        run = await python.run(run_id)
        listed = await python.runs(order="slowest")
    assert (run.id, run.outcome, run.answer, run.username) == (run_id, "ok", ANSWER, "alice")
    assert [q.text for q in run.queries] == [QUERY]
    assert run_id in [r.id for r in listed.data]


async def test_a_stored_field_the_record_does_not_declare_is_not_served(
    client: httpx.AsyncClient, services: Services, alice: Account, sales: str
) -> None:
    """The record is the client's wire model, which keeps unknown fields it reads; the service
    reads stored records with `extra="ignore"`, so it sends only what the document declares."""
    run_id = await ask(client, alice)
    async with services.db.session() as session:
        row = await session.get(RunRow, run_id)
        assert row is not None
        row.record = {**row.record, "retiredField": "stale", "stages": [{**row.record["stages"][0], "old": 1}]}
    run = (await client.get(f"/api/v1/runs/{run_id}", headers=alice.headers)).json()
    assert "retiredField" not in run and "old" not in run["stages"][0]
    assert run["answer"] == ANSWER
    [summary] = (await client.get("/api/v1/runs", headers=alice.headers)).json()["data"]
    assert "retiredField" not in summary and summary["id"] == run_id


async def test_the_record_names_each_rule_that_changed_a_query(
    client: httpx.AsyncClient, alice: Account, sales: str, chat_model: ScriptedChatModel
) -> None:
    """Issue 47: the plan's query had a LIMIT the question did not ask for; the record says
    which rule dropped it, the query before and after, and the stage it ran in."""
    chat_model.script[:] = [PlanOutput(query=f"{QUERY} LIMIT 10"), ANSWER]
    run_id = await ask(client, alice, "List what each customer paid")

    run = (await client.get(f"/api/v1/runs/{run_id}", headers=alice.headers)).json()

    assert [(r["rule"], r["before"], r["after"]) for r in run["rewrites"]] == [
        ("drop_unasked_limit", f"{QUERY} LIMIT 10", QUERY)
    ]
    assert run["stages"][run["rewrites"][0]["parent"]]["name"] == "check"
    assert [q["text"] for q in run["queries"]] == [QUERY]


async def test_the_console_run_page_shows_each_rewrite_as_a_before_and_after(
    client: httpx.AsyncClient, alice: Account, sales: str, chat_model: ScriptedChatModel
) -> None:
    """Issue 47: the run viewer names the rule and marks what it took out of the query."""
    chat_model.script[:] = [PlanOutput(query=f"{QUERY} LIMIT 10"), ANSWER]
    run_id = await ask(client, alice, "List what each customer paid")
    await sign_in(client, alice)

    page = (await client.get(f"/runs/{run_id}")).text

    section = page[page.index("<h2>Query rewrites</h2>") :]
    assert '<code class="rule">drop_unasked_limit</code> in check' in section
    assert f'<pre class="before">{html.escape(QUERY, quote=False)} <del>LIMIT 10</del></pre>' in section
    assert f'<pre class="after">{html.escape(QUERY, quote=False)}</pre>' in section
