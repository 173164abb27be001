"""`GET /metrics`: the Prometheus text format, behind the `metrics` setting, with the request,
run, model-token and query series of a real question."""

from __future__ import annotations

import re

import httpx
import pytest
from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client import metrics as client_metrics
from prometheus_client.openmetrics.exposition import generate_latest as openmetrics_latest
from prometheus_client.parser import text_string_to_metric_families
from pydantic import SecretStr

from datawell.app import create_app
from datawell.config import Settings
from datawell.errors import QueryError
from datawell.llm.embeddings import HashingEmbedder
from datawell.llm.models import FixedChatModels
from datawell.observability import metrics
from datawell.services import Overrides, Services
from datawell.storage.access import namespace_named
from datawell.storage.users import find_user
from tests.conftest import Account, served
from tests.observability.conftest import ask


def samples(text: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def value(found: dict[tuple[str, frozenset[tuple[str, str]]], float], name: str, **labels: str) -> float:
    return found.get((name, frozenset(labels.items())), 0.0)


async def scrape(client: httpx.AsyncClient, **headers: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    response = await client.get("/metrics", headers=headers)
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain; version=")
    return samples(response.text)


async def test_a_question_shows_in_every_series(client: httpx.AsyncClient, alice: Account, sales: str) -> None:
    before = await scrape(client)
    await ask(client, alice)
    await client.get("/api/v1/runs/00000000-0000-0000-0000-000000000000", headers=alice.headers)
    after = await scrape(client)

    def grew(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    route = "/api/v1/query/autorag"
    assert grew("datawell_http_requests_total", route=route, method="POST", status="200") == 1
    assert grew("datawell_http_request_duration_seconds_count", route=route, method="POST") == 1
    # By template, never by the raw path: the run id is no label.
    assert grew("datawell_http_requests_total", route="/api/v1/runs/{runId}", method="GET", status="404") == 1
    assert grew("datawell_runs_total", graph="assistant", outcome="ok") == 1
    assert grew("datawell_run_duration_seconds_count", graph="assistant") == 1
    assert grew("datawell_model_calls_total", stage="plan", model="scripted", outcome="ok") == 1
    assert grew("datawell_model_calls_total", stage="answer", model="scripted", outcome="ok") == 1
    prompt = grew("datawell_model_tokens_total", stage="plan", model="scripted", kind="prompt")
    cached = grew("datawell_model_tokens_total", stage="plan", model="scripted", kind="cached")
    assert prompt > cached > 0
    assert grew("datawell_model_tokens_total", stage="answer", model="scripted", kind="output") == 6
    assert grew("datawell_queries_total", outcome="ok") == 1
    # The scheduler's queue: the run took its slot (a wait of ~0 s) and nothing waits now.
    assert grew("datawell_model_queue_wait_seconds_count", model="embedded") == 1
    assert value(after, "datawell_model_queue_depth", model="embedded") == 0


async def test_a_refused_query_counts_under_its_error_code(
    client: httpx.AsyncClient, services: Services, alice: Account, sales: str
) -> None:
    before = await scrape(client)
    async with services.db.session() as session:
        user = await find_user(session, "alice")
        namespace = await namespace_named(session, "alice", "sales")
    assert user is not None
    with pytest.raises(QueryError):
        await services.query_tools.run(user, namespace, "SELECT nothing FROM orders")
    after = await scrape(client)
    assert (
        value(after, "datawell_queries_total", outcome="QUERY_ERROR")
        - value(before, "datawell_queries_total", outcome="QUERY_ERROR")
        == 1
    )


async def metrics_response(settings: Settings, **headers: str) -> httpx.Response:
    app = create_app(settings, Overrides(models=FixedChatModels(None), embedder=HashingEmbedder()))  # type: ignore[arg-type]
    async with served(app) as running:
        transport = httpx.ASGITransport(app=running.asgi)
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as http:
            return await http.get("/metrics", headers=headers)


async def test_the_setting_guards_the_endpoint(settings: Settings) -> None:
    token = settings.model_copy(update={"metrics": "token", "metrics_token": SecretStr("scrape-secret")})
    refused = await metrics_response(token)
    assert refused.status_code == 401 and refused.json()["error_code"] == "UNAUTHORIZED"
    assert (await metrics_response(token, authorization="Bearer wrong")).status_code == 401
    assert (await metrics_response(token, authorization="Bearer scrape-secret")).status_code == 200
    no_token = settings.model_copy(update={"metrics": "token"})
    assert "DATAWELL_METRICS_TOKEN" in (await metrics_response(no_token)).json()["message"]
    off = await metrics_response(settings.model_copy(update={"metrics": "off"}))
    assert off.status_code == 404
    assert (await metrics_response(settings)).status_code == 200  # open by default


async def test_a_body_refused_for_its_size_is_counted(client: httpx.AsyncClient, alice: Account) -> None:
    """The request series see every answer, a refusal before any route too."""
    before = await scrape(client)
    response = await client.post("/api/v1/query/autorag", content=b"x" * (9 * 1024 * 1024), headers=alice.headers)
    assert response.status_code == 422
    after = await scrape(client)
    labels = {"route": "<unmatched>", "method": "POST", "status": "422"}
    assert (
        value(after, "datawell_http_requests_total", **labels)
        == value(before, "datawell_http_requests_total", **labels) + 1
    )


@pytest.mark.parametrize("created", [True, False])
def test_the_request_series_are_what_a_counter_and_a_histogram_expose(
    monkeypatch: pytest.MonkeyPatch, created: bool
) -> None:
    """`metrics.RequestSeries` keeps the request series itself (cheaper a request): a scrape
    must read exactly what the client's `Counter` and `Histogram` of the same names give,
    bucket edges, `_created` (and its switch) and both text formats included."""
    monkeypatch.setattr(client_metrics, "_use_created", created)
    client, ours = CollectorRegistry(), CollectorRegistry()
    counter = Counter(
        "datawell_http_requests",
        "HTTP requests answered, by route template, method and status.",
        ["route", "method", "status"],
        registry=client,
    )
    histogram = Histogram(
        "datawell_http_request_duration_seconds",
        "Time to answer an HTTP request (to the end of its body), by route template and method.",
        ["route", "method"],
        buckets=metrics.FAST_BUCKETS,
        registry=client,
    )
    series = metrics.RequestSeries(ours)
    # On a bucket's edge, just over it, past the last one, zero: each in its own bucket.
    for route, method, status, seconds in [
        ("/api/v1/runs/{runId}", "GET", 200, 0.0025),
        ("/api/v1/runs/{runId}", "GET", 200, 0.00251),
        ("/api/v1/runs/{runId}", "GET", 404, 31.0),
        ("/api/v1/runs/{runId}", "POST", 500, 0.0),
        (metrics.UNMATCHED_ROUTE, "GET", 422, 0.4),
    ]:
        counter.labels(route, method, str(status)).inc()
        histogram.labels(route, method).observe(seconds)
        series.record(route, method, status, seconds)

    def lines(exposed: bytes) -> list[str]:  # the creation times differ by microseconds
        return sorted(re.sub(r"(_created.*) \S+$", r"\1 T", line) for line in exposed.decode().splitlines())

    for render in (generate_latest, openmetrics_latest):
        assert lines(render(ours)) == lines(render(client))
    assert ("_created" in render(ours).decode()) is created
    assert (
        ours.get_sample_value(
            "datawell_http_request_duration_seconds_bucket",
            {"route": "/api/v1/runs/{runId}", "method": "GET", "le": "0.0025"},
        )
        == 1.0
    )
