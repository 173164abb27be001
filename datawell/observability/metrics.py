"""The Prometheus metrics (docs/operations.md lists them) and the functions that record them.

Every metric lives in `REGISTRY`, this process's own registry, which `GET /metrics` renders.
Callers record through the functions below, never through the metric objects, so a label's
values stay bounded (route templates, graph names, stage names, error codes) in one place.

The model scheduler reports its queue with `queue_changed(model, depth)` whenever a request
joins or leaves the queue, and `queue_waited(model, seconds)` when a request leaves it to run, and `slot_ran(...)` for the
slot it took and how its prompt prefix was found there."""

from __future__ import annotations

import threading
import time
from bisect import bisect_left
from collections.abc import Iterable

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client import metrics as client_metrics
from prometheus_client.exposition import CONTENT_TYPE_LATEST, generate_latest
from prometheus_client.metrics_core import CounterMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector
from prometheus_client.utils import floatToGoString

from datawell.slots import Placement

REGISTRY = CollectorRegistry(auto_describe=True)
CONTENT_TYPE = CONTENT_TYPE_LATEST

# Requests answer in milliseconds; runs and model calls take seconds to minutes.
FAST_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
SLOW_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 20.0, 30.0, 60.0, 120.0, 300.0)
UNMATCHED_ROUTE = "<unmatched>"


class RequestSeries(Collector):
    """`datawell_http_requests` (by route template, method and status) and
    `datawell_http_request_duration_seconds` (by route template and method, `FAST_BUCKETS`):
    the series a `Counter` and a `Histogram` of those names and labels would expose, sample
    for sample (`_created` too, unless prometheus-client's created series are disabled), kept
    in plain lists under one lock. Every HTTP request records here: the client's `labels()`,
    `inc()` and `observe()` cost three locks, a label lookup and their checks each time,
    about 2 µs a request (issue 30, docs/decisions.md)."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.lock = threading.Lock()
        # (route, method, status) -> [count, created]
        self.counts: dict[tuple[str, str, int], list[float]] = {}
        # (route, method) -> [created, sum, one count per bucket (not cumulative), +Inf's last]
        self.timings: dict[tuple[str, str], list[float]] = {}
        self.bounds = [*FAST_BUCKETS, float("inf")]
        registry.register(self)

    def record(self, route: str, method: str, status: int, seconds: float) -> None:
        with self.lock:
            count = self.counts.get((route, method, status))
            if count is None:
                count = self.counts[route, method, status] = [0.0, time.time()]
            count[0] += 1
            timing = self.timings.get((route, method))
            if timing is None:
                timing = self.timings[route, method] = [time.time(), 0.0, *(0.0 for _ in self.bounds)]
            timing[1] += seconds
            timing[2 + bisect_left(self.bounds, seconds)] += 1  # the first bound >= seconds

    def families(self) -> tuple[CounterMetricFamily, HistogramMetricFamily]:
        return (
            CounterMetricFamily(
                "datawell_http_requests",
                "HTTP requests answered, by route template, method and status.",
                labels=["route", "method", "status"],
            ),
            HistogramMetricFamily(
                "datawell_http_request_duration_seconds",
                "Time to answer an HTTP request (to the end of its body), by route template and method.",
                labels=["route", "method"],
            ),
        )

    def describe(self) -> Iterable[Metric]:
        return self.families()

    def collect(self) -> Iterable[Metric]:
        created = client_metrics._use_created  # PROMETHEUS_DISABLE_CREATED_SERIES, as the client's own
        with self.lock:
            counts = [(key, count, since) for key, (count, since) in self.counts.items()]
            timings = [(key, list(value)) for key, value in self.timings.items()]
        requests, seconds = self.families()
        for (route, method, status), count, since in counts:
            requests.add_metric([route, method, str(status)], count, created=since if created else None)
        for (route, method), (since, total, *buckets) in timings:
            cumulative, running = [], 0.0
            for bound, found in zip(self.bounds, buckets, strict=True):
                running += found
                cumulative.append((floatToGoString(bound), running))
            seconds.add_metric([route, method], cumulative, total)
            if created:
                seconds.add_sample(seconds.name + "_created", {"route": route, "method": method}, since)
        return requests, seconds


request_series = RequestSeries(REGISTRY)

runs = Counter(
    "datawell_runs",
    "Graph runs that ended, by graph and outcome (ok or an error code).",
    ["graph", "outcome"],
    registry=REGISTRY,
)
run_seconds = Histogram(
    "datawell_run_duration_seconds",
    "Time of a graph run, by graph.",
    ["graph"],
    buckets=SLOW_BUCKETS,
    registry=REGISTRY,
)
model_calls = Counter(
    "datawell_model_calls",
    "Model calls, by stage, model and outcome (ok or error).",
    ["stage", "model", "outcome"],
    registry=REGISTRY,
)
model_tokens = Counter(
    "datawell_model_tokens",
    "Model tokens by stage, model and kind: prompt (all input tokens), cached (input tokens the "
    "provider took from its prompt cache, part of prompt) and output.",
    ["stage", "model", "kind"],
    registry=REGISTRY,
)
model_seconds = Histogram(
    "datawell_model_call_duration_seconds",
    "Time of a model call, by stage and model.",
    ["stage", "model"],
    buckets=SLOW_BUCKETS,
    registry=REGISTRY,
)
queue_depth = Gauge(
    "datawell_model_queue_depth", "Model requests waiting for their turn, by model.", ["model"], registry=REGISTRY
)
queue_wait_seconds = Histogram(
    "datawell_model_queue_wait_seconds",
    "Time a model request waited for its turn, by model.",
    ["model"],
    buckets=SLOW_BUCKETS,
    registry=REGISTRY,
)
slot_runs = Counter(
    "datawell_model_slot_runs",
    "Runs given a model slot, by model, slot and how their prompt prefix was found: hit (the slot held "
    "it), restored (the model's prompt cache held it), miss (read again) or none (no prefix).",
    ["model", "slot", "prefix"],
    registry=REGISTRY,
)
prefix_waits = Counter(
    "datawell_model_prefix_waits",
    "Runs that waited for the slot holding their prompt prefix rather than read it again on a free one.",
    ["model"],
    registry=REGISTRY,
)
ingestions = Counter(
    "datawell_ingestions",
    "Ingestion attempts that ended, by status: succeeded, failed or stopped (cancelled, taken over or shut down).",
    ["status"],
    registry=REGISTRY,
)
ingested_rows = Counter("datawell_ingested_rows", "Rows written by ingestions.", registry=REGISTRY)
ingested_bytes = Counter("datawell_ingested_bytes", "Bytes of files read by ingestions.", registry=REGISTRY)
ingestion_rows_per_second = Histogram(
    "datawell_ingestion_rows_per_second",
    "Rows per second of each finished ingestion.",
    buckets=(10, 100, 1_000, 5_000, 10_000, 50_000, 100_000, 500_000, 1_000_000),
    registry=REGISTRY,
)
ingestion_bytes_per_second = Histogram(
    "datawell_ingestion_bytes_per_second",
    "Bytes per second of each finished ingestion.",
    buckets=(1e3, 1e4, 1e5, 1e6, 1e7, 5e7, 1e8, 5e8),
    registry=REGISTRY,
)
queries = Counter(
    "datawell_queries",
    "Query-language executions, by outcome: ok, or the error code of a refusal or failure.",
    ["outcome"],
    registry=REGISTRY,
)
query_seconds = Histogram(
    "datawell_query_duration_seconds", "Time to check and run a query.", buckets=FAST_BUCKETS, registry=REGISTRY
)


def render() -> bytes:
    """Every metric in the Prometheus text format."""
    return generate_latest(REGISTRY)


def http_request(route: str, method: str, status: int, seconds: float) -> None:
    request_series.record(route, method, status, seconds)


def run_ended(graph: str, outcome: str, seconds: float) -> None:
    runs.labels(graph, outcome).inc()
    run_seconds.labels(graph).observe(seconds)


def model_called(
    stage: str, model: str, ok: bool, seconds: float, prompt_tokens: int, cached_tokens: int, output_tokens: int
) -> None:
    model_calls.labels(stage, model, "ok" if ok else "error").inc()
    model_seconds.labels(stage, model).observe(seconds)
    model_tokens.labels(stage, model, "prompt").inc(prompt_tokens)
    model_tokens.labels(stage, model, "cached").inc(cached_tokens)
    model_tokens.labels(stage, model, "output").inc(output_tokens)


def queue_changed(model: str, depth: int) -> None:
    """The model scheduler: `depth` requests for `model` are waiting now."""
    queue_depth.labels(model).set(depth)


def queue_waited(model: str, seconds: float) -> None:
    """The model scheduler: a request for `model` waited `seconds` before it ran."""
    queue_wait_seconds.labels(model).observe(seconds)


def slot_ran(model: str, slot: int, prefix: str, waited_for_prefix: bool) -> None:
    """The model scheduler: a run of `model` took `slot`, its prompt prefix found as `prefix`
    (`slots.DECISIONS`), after waiting for that slot if `waited_for_prefix`."""
    slot_runs.labels(model, str(slot), prefix).inc()
    if waited_for_prefix:
        prefix_waits.labels(model).inc()


class QueueMetrics:
    """The model scheduler's queue (`scheduler.QueueListener`) as the queue series of `model`."""

    def __init__(self, model: str) -> None:
        self.model = model

    def waiting(self, count: int) -> None:
        queue_changed(self.model, count)

    def waited(self, seconds: float) -> None:
        queue_waited(self.model, seconds)

    def placed(self, placement: Placement) -> None:
        slot_ran(self.model, placement.slot, placement.decision, placement.waited_for_prefix)


def ingestion_ended(status: str, rows: int, size: int, seconds: float) -> None:
    ingestions.labels(status).inc()
    ingested_rows.inc(rows)
    ingested_bytes.inc(size)
    if seconds > 0 and status == "succeeded":
        ingestion_rows_per_second.observe(rows / seconds)
        ingestion_bytes_per_second.observe(size / seconds)


def query_ran(outcome: str, seconds: float) -> None:
    queries.labels(outcome).inc()
    query_seconds.observe(seconds)
