"""OpenTelemetry: one trace per question, with a span per request, run, graph node, model call
(GenAI attributes) and query (the QL text and row count, never a row); `traceparent` in the
response; the same spans over OTLP/HTTP to a loopback receiver."""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator, Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any, ClassVar

import httpx
import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind

from datawell.app import create_app
from datawell.config import Settings
from datawell.graphs.assistant.state import PlanOutput
from datawell.ingest.mapping import ColumnMapping, FieldSource
from datawell.llm.embeddings import HashingEmbedder
from datawell.llm.models import FixedChatModels
from datawell.llm.scripted import ScriptedChatModel
from datawell.observability import metrics
from datawell.scheduler import Limits, ModelScheduler
from datawell.services import Overrides, Services
from datawell.slots import Rates, SlotBook
from tests.conftest import Account, Running, make_account, served
from tests.ingest.support import create_dataset, drain, upload
from tests.observability.conftest import ANSWER, QUERY, ask
from tests.observability.test_metrics import scrape
from tests.tools.conftest import ORDERS

RECEIVER_PORT = 18611  # this branch's range (18600-18699)


@pytest.fixture
def exporter() -> InMemorySpanExporter:
    return InMemorySpanExporter()


@pytest.fixture
def ratio() -> float:
    """`OTEL_TRACES_SAMPLER_ARG` (a test parametrizes it to change it)."""
    return 1.0


@pytest.fixture
async def service(
    settings: Settings, chat_models: FixedChatModels, exporter: InMemorySpanExporter, ratio: float
) -> AsyncIterator[Running]:
    sampled = settings.model_copy(update={"otel_traces_sampler_arg": ratio})
    app = create_app(
        sampled, Overrides(models=chat_models, embedder=HashingEmbedder()), spans=SimpleSpanProcessor(exporter)
    )
    async with served(app) as running:
        yield running


def attributes(span: ReadableSpan) -> dict[str, Any]:
    return dict(span.attributes or {})


def check_question_trace(spans: list[Any], name: Any, attrs: Any, trace_of: Any) -> None:
    """The spans of one question (any span type, read through `name`, `attrs`, `trace_of`)."""
    names = [name(s) for s in spans]
    assert len({trace_of(s) for s in spans}) == 1, "one trace per question"
    assert "POST /api/v1/query/autorag" in names
    assert {"run assistant", "node plan", "node step", "node check", "node run", "node answer", "query"} <= set(names)
    chats = [s for s in spans if name(s).startswith("chat ")]
    assert [attrs(s)["datawell.stage"] for s in chats] == ["plan", "answer"]
    for chat in chats:
        values = attrs(chat)
        assert values["gen_ai.operation.name"] == "chat"
        assert values["gen_ai.request.model"]
        assert values["gen_ai.usage.input_tokens"] > values["gen_ai.usage.cache_read.input_tokens"] > 0
        assert values["gen_ai.usage.output_tokens"] > 0
    [query] = [s for s in spans if name(s) == "query"]
    assert attrs(query)["db.query.text"] == QUERY
    assert attrs(query)["db.response.returned_rows"] == 3
    every_value = " ".join(str(v) for s in spans for v in attrs(s).values())
    assert not any(str(row["note"]) in every_value for row in ORDERS), "a row value reached a span"


async def test_one_trace_per_question(
    client: httpx.AsyncClient, alice: Account, sales: str, exporter: InMemorySpanExporter
) -> None:
    exporter.clear()
    response = await client.post(
        "/api/v1/query/autorag", json={"namespace": "sales", "query": "Who paid the most?"}, headers=alice.headers
    )
    assert response.status_code == 200
    spans = list(exporter.get_finished_spans())
    check_question_trace(spans, lambda s: s.name, attributes, lambda s: s.context.trace_id)
    # The response names the request's span, so a client can find its trace.
    version, trace_id, _span, flags = response.headers["traceparent"].split("-")
    [server] = [s for s in spans if s.name == "POST /api/v1/query/autorag"]
    assert (version, int(trace_id, 16)) == ("00", server.context.trace_id)
    assert int(flags, 16) & 1, "sampled"
    assert server.kind is SpanKind.SERVER and server.parent is None
    assert {k: v for k, v in attributes(server).items() if k.startswith(("http.", "url."))} == {
        "http.request.method": "POST",
        "http.route": "/api/v1/query/autorag",
        "http.response.status_code": 200,
        "url.path": "/api/v1/query/autorag",
        "url.scheme": "http",
    }
    # The run's span is the request span's child; the nodes, model calls and query the run's.
    run = next(s for s in spans if s.name == "run assistant")
    assert run.parent is not None and run.parent.span_id == server.context.span_id
    by_id = {s.context.span_id: s for s in spans}

    def ancestors(span: ReadableSpan) -> list[str]:
        found = []
        while span.parent is not None:
            span = by_id[span.parent.span_id]
            found.append(span.name)
        return found

    for span in spans:
        if span is not server:
            assert ancestors(span)[-2:] in (["run assistant", server.name], [server.name]), span.name
    assert attributes(run)["datawell.run.id"] == response.headers["datawell-run-id"]
    # The run record names its trace.
    record = (await client.get(f"/api/v1/runs/{response.headers['datawell-run-id']}", headers=alice.headers)).json()
    assert record["traceId"] == trace_id
    exporter.clear()
    await ask(client, alice)
    assert len({s.context.trace_id for s in exporter.get_finished_spans()}) == 1


async def test_a_callers_trace_is_continued(
    client: httpx.AsyncClient, alice: Account, sales: str, exporter: InMemorySpanExporter
) -> None:
    """A request carrying `traceparent` joins the caller's trace: the request span is the
    caller's span's child, the question's spans are in that trace, and the response says so."""
    caller_trace, caller_span = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
    exporter.clear()
    response = await client.post(
        "/api/v1/query/autorag",
        json={"namespace": "sales", "query": "Who paid the most?"},
        headers={**alice.headers, "traceparent": f"00-{caller_trace}-{caller_span}-01"},
    )
    assert response.status_code == 200
    spans = list(exporter.get_finished_spans())
    check_question_trace(spans, lambda s: s.name, attributes, lambda s: s.context.trace_id)
    [server] = [s for s in spans if s.name == "POST /api/v1/query/autorag"]
    assert server.parent is not None and server.parent.is_remote
    assert (f"{server.parent.trace_id:032x}", f"{server.parent.span_id:016x}") == (caller_trace, caller_span)
    assert response.headers["traceparent"].split("-")[1:3] == [caller_trace, f"{server.context.span_id:016x}"]


@pytest.mark.parametrize("ratio", [0.0])
async def test_a_dropped_question_exports_nothing(
    client: httpx.AsyncClient, alice: Account, sales: str, exporter: InMemorySpanExporter
) -> None:
    """A question the sampler drops exports no span (not its request's, nor its run's, nodes',
    model calls' or query's as traces of their own); its response, its record and its log
    lines name one unsampled trace. A caller's sampled trace is still followed whole."""
    exporter.clear()
    question = {"namespace": "sales", "query": "Who paid the most?"}
    response = await client.post("/api/v1/query/autorag", json=question, headers=alice.headers)
    assert response.status_code == 200
    _version, trace_id, _span, flags = response.headers["traceparent"].split("-")
    assert not int(flags, 16) & 1
    record = (await client.get(f"/api/v1/runs/{response.headers['datawell-run-id']}", headers=alice.headers)).json()
    assert record["traceId"] == trace_id
    assert exporter.get_finished_spans() == ()
    caller = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
    followed = await client.post(
        "/api/v1/query/autorag", json=question, headers={**alice.headers, "traceparent": caller}
    )
    assert followed.status_code == 200
    check_question_trace(
        list(exporter.get_finished_spans()), lambda s: s.name, attributes, lambda s: s.context.trace_id
    )


async def test_traces_are_off_by_default(settings: Settings) -> None:
    app = create_app(settings, Overrides(models=FixedChatModels(None), embedder=HashingEmbedder()))  # type: ignore[arg-type]
    async with served(app) as running:
        transport = httpx.ASGITransport(app=running.asgi)
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as http:
            response = await http.get("/health")
    assert response.status_code == 200 and "traceparent" not in response.headers


async def test_the_response_names_its_trace_with_metrics_off(settings: Settings) -> None:
    exporter = InMemorySpanExporter()
    quiet = settings.model_copy(update={"metrics": "off"})
    overrides = Overrides(models=FixedChatModels(None), embedder=HashingEmbedder())  # type: ignore[arg-type]
    app = create_app(quiet, overrides, spans=SimpleSpanProcessor(exporter))
    async with served(app) as running:
        transport = httpx.ASGITransport(app=running.asgi)
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as http:
            response = await http.get("/health")
            assert (await http.get("/metrics")).status_code == 404
    [server] = [s for s in exporter.get_finished_spans() if s.name == "GET /health"]
    assert response.headers["traceparent"].split("-")[1] == f"{server.context.trace_id:032x}"


class Receiver(BaseHTTPRequestHandler):
    received: ClassVar[list[tuple[str, bytes]]] = []

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["content-length"]))
        Receiver.received.append((self.path, body))
        self.send_response(200)
        self.send_header("content-type", "application/x-protobuf")
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def receiver() -> Iterator[list[tuple[str, bytes]]]:
    server = HTTPServer(("127.0.0.1", RECEIVER_PORT), Receiver)
    Receiver.received = []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield Receiver.received
    finally:
        server.shutdown()
        server.server_close()


async def test_the_same_spans_arrive_over_otlp_http(
    tmp_path: Path,
    settings: Settings,
    chat_models: FixedChatModels,
    receiver: list[tuple[str, bytes]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:

    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", f"http://127.0.0.1:{RECEIVER_PORT}")
    monkeypatch.setenv("OTEL_SERVICE_NAME", "datawell-test")
    configured = Settings(**settings.model_dump(exclude={"otel_exporter_otlp_endpoint", "otel_service_name"}))
    assert configured.otel_exporter_otlp_endpoint == f"http://127.0.0.1:{RECEIVER_PORT}"
    app = create_app(configured, Overrides(models=chat_models, embedder=HashingEmbedder()))
    async with served(app) as running:
        alice = await make_account(running.services, "alice")
        await load_sales(running)
        transport = httpx.ASGITransport(app=running.asgi)
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as http:
            await ask(http, alice)
    # The lifespan's end flushed the batch.
    assert receiver and {path for path, _ in receiver} == {"/v1/traces"}
    spans = []
    for _, body in receiver:
        request = ExportTraceServiceRequest.FromString(body)
        for resource in request.resource_spans:
            service = {a.key: a.value.string_value for a in resource.resource.attributes}["service.name"]
            assert service == "datawell-test"
            for scoped in resource.scope_spans:
                spans.extend(scoped.spans)

    def attrs(span: Any) -> dict[str, Any]:
        found = {}
        for a in span.attributes:
            value = a.value
            found[a.key] = value.int_value if value.HasField("int_value") else value.string_value
        return found

    question = [s for s in spans if s.name != "GET /health"]
    check_question_trace(question, lambda s: s.name, attrs, lambda s: s.trace_id)


async def load_sales(running: Running) -> None:
    from datawell.storage import access
    from datawell.storage.users import find_user
    from tests.observability.conftest import FIELDS, TYPES
    from tests.tools.conftest import load

    async with running.services.db.session() as session:
        owner = await find_user(session, "alice")
        assert owner is not None
        namespace = await access.ensure_namespace(session, owner, "sales")
    await load(running.services, namespace, owner, "orders", FIELDS, TYPES, ORDERS)


async def test_an_ingestions_model_calls_are_traced_and_counted(
    client: httpx.AsyncClient, services: Any, alice: Account, chat_model: Any, exporter: InMemorySpanExporter
) -> None:
    """The column mapping's model call is a span under the attempt's stage, with its tokens,
    and counts in the model-call metrics, as a question's calls do."""
    await create_dataset(client, alice)
    chat_model.script[:] = [ColumnMapping(fields=[FieldSource(field="order_id", column="ref")])]
    exporter.clear()
    ingestion_id = await upload(services, "alice", "odd.csv", b"ref,who\n7,Ada\n")
    calls_before = await model_calls(client)
    assert await drain(services) == [ingestion_id]
    spans = list(exporter.get_finished_spans())
    [chat] = [s for s in spans if s.name.startswith("chat ")]
    by_id = {s.context.span_id: s for s in spans}
    assert chat.parent is not None and by_id[chat.parent.span_id].name.startswith("ingestion stage: ")
    assert attributes(chat)["gen_ai.usage.input_tokens"] > 0
    assert attributes(chat)["gen_ai.usage.output_tokens"] > 0
    assert await model_calls(client) == calls_before + 1


async def model_calls(client: httpx.AsyncClient) -> float:
    """Model calls as /metrics shows them, over every stage, model and outcome."""
    return sum(v for (name, _labels), v in (await scrape(client)).items() if name == "datawell_model_calls_total")


async def test_each_rule_that_changed_a_query_is_an_event_on_its_nodes_span(
    client: httpx.AsyncClient, alice: Account, sales: str, exporter: InMemorySpanExporter, chat_model: ScriptedChatModel
) -> None:
    """Issue 47: one span event per applied rewrite rule, on the node it ran in."""
    chat_model.script[:] = [PlanOutput(query=f"{QUERY} LIMIT 10"), ANSWER]
    exporter.clear()
    response = await client.post(
        "/api/v1/query/autorag",
        json={"namespace": "sales", "query": "List what each customer paid"},
        headers=alice.headers,
    )
    assert response.status_code == 200
    spans = list(exporter.get_finished_spans())
    events = [
        (s.name, e.name, dict(e.attributes or {})) for s in spans for e in s.events if e.name.startswith("rewrite")
    ]
    assert events == [
        (
            "node check",
            "rewrite drop_unasked_limit",
            {
                "datawell.rewrite.rule": "drop_unasked_limit",
                "datawell.rewrite.before": f"{QUERY} LIMIT 10",
                "datawell.rewrite.after": QUERY,
                "datawell.rewrite.reason": "dropped LIMIT 10: the question asks for every row",
            },
        )
    ]


async def test_the_run_span_says_where_the_scheduler_put_it(
    client: httpx.AsyncClient, services: Services, alice: Account, sales: str, exporter: InMemorySpanExporter
) -> None:
    """With the embedded model's cost model (issue 52), a namespace's second question goes to
    the slot that holds its prompt prefix; its run's span and /metrics say where and why, and
    the cached tokens of its model calls tell the scheduler the prefix's length."""
    rates = Rates(prefill=50.0, decode={1: 12.0, 2: 15.0}, prefix_tokens=1000)
    book = SlotBook(2, rates)
    listener = metrics.QueueMetrics("test-trace")
    services.scheduler = ModelScheduler(Limits(slots=2, queue=4, per_caller=2), listener=listener, book=book)
    exporter.clear()
    await ask(client, alice)
    await ask(client, alice)
    runs = [attributes(s) for s in exporter.get_finished_spans() if s.name == "run assistant"]
    said = [(r["datawell.scheduler.slot"], r["datawell.scheduler.prefix"]) for r in runs]
    assert said == [(0, "miss"), (0, "hit")]
    assert runs[1]["datawell.scheduler.reason"] == "slot 0 holds the prefix"
    assert not runs[1]["datawell.scheduler.waited_for_prefix"]
    [run] = [s for s in exporter.get_finished_spans() if s.name == "run assistant"][1:]
    assert [e.name for e in run.events] == ["scheduled"]
    scraped = await scrape(client)
    hit = ("datawell_model_slot_runs_total", frozenset({"model": "test-trace", "slot": "0", "prefix": "hit"}.items()))
    assert scraped[hit] == 1
    [prefix_tokens] = book.prefix_tokens.values()
    assert prefix_tokens > 0
