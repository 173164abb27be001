"""OpenTelemetry traces, off unless the standard `OTEL_*` variables ask for them (read in
`datawell.config`): `OTEL_TRACES_EXPORTER=otlp` or `console`, or an
`OTEL_EXPORTER_OTLP_ENDPOINT` (OTLP over HTTP/protobuf). The spans and their attributes are
listed in docs/operations.md; model calls follow the GenAI semantic conventions.

Spans go to this module's provider (`provider`), never the global one, so two apps in one
process (the tests) each see their own; `tracer()` is a no-op tracer while traces are off."""

from __future__ import annotations

from collections.abc import Sequence
from contextvars import ContextVar
from typing import Any

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter, SpanExporter
from opentelemetry.sdk.trace.id_generator import RandomIdGenerator
from opentelemetry.sdk.trace.sampling import Decision, ParentBased, Sampler, SamplingResult, TraceIdRatioBased
from opentelemetry.trace import Link, NoOpTracerProvider, SpanKind, Tracer
from opentelemetry.trace.span import TraceState
from opentelemetry.util.types import Attributes

from datawell import __version__
from datawell.config import Settings

SCOPE = "datawell"
_provider: trace.TracerProvider = NoOpTracerProvider()

# GenAI semantic conventions (opentelemetry-semantic-conventions 0.66b1,
# opentelemetry.semconv._incubating.attributes.gen_ai_attributes): the names are spelt
# here so that an incubating module's move does not break the import.
GEN_AI_OPERATION_NAME = "gen_ai.operation.name"
GEN_AI_PROVIDER_NAME = "gen_ai.provider.name"
GEN_AI_REQUEST_MODEL = "gen_ai.request.model"
GEN_AI_USAGE_INPUT_TOKENS = "gen_ai.usage.input_tokens"
GEN_AI_USAGE_OUTPUT_TOKENS = "gen_ai.usage.output_tokens"
GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS = "gen_ai.usage.cache_read.input_tokens"
ERROR_TYPE = "error.type"


def enabled(settings: Settings) -> bool:
    if settings.otel_sdk_disabled:
        return False
    exporter = (settings.otel_traces_exporter or "").strip().lower()
    if exporter:
        return exporter != "none"
    return bool(settings.otel_exporter_otlp_endpoint or settings.otel_exporter_otlp_traces_endpoint)


def exporter_of(settings: Settings) -> SpanExporter:
    if (settings.otel_traces_exporter or "").strip().lower() == "console":
        return ConsoleSpanExporter()
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    endpoint = settings.otel_exporter_otlp_traces_endpoint
    if not endpoint:
        base = (settings.otel_exporter_otlp_endpoint or "http://localhost:4318").rstrip("/")
        endpoint = f"{base}/v1/traces"
    return OTLPSpanExporter(
        endpoint=endpoint,
        headers=pairs(settings.otel_exporter_otlp_headers),
        timeout=settings.otel_exporter_otlp_timeout_ms / 1000,
    )


def pairs(text: str) -> dict[str, str]:
    """`key=value,key=value` as the OTEL_* variables write headers and resource attributes."""
    found = {}
    for item in text.split(","):
        key, sep, value = item.partition("=")
        if sep and key.strip():
            found[key.strip()] = value.strip()
    return found


# The trace id `RequestObserver` drew for the root span it is starting (0: none).
DRAWN_TRACE_ID: ContextVar[int] = ContextVar("datawell_drawn_trace_id", default=0)
# The `traceparent` of the request being served when the sampler dropped it (b"": none):
# `RequestObserver` sets it for the request's time instead of making a span current. Its
# trace id is the request's (`dropped_ids`), given to the spans started beneath it, which
# `Dropped` never samples.
DROPPED: ContextVar[bytes] = ContextVar("datawell_dropped_request", default=b"")


def dropped_ids(traceparent: bytes) -> tuple[str, str]:
    """The trace and span ids, in hex, that a `DROPPED` `traceparent` names."""
    return traceparent[3:35].decode("ascii"), traceparent[36:52].decode("ascii")


class DrawnIds(RandomIdGenerator):
    """Random ids, except the trace id already drawn for the root span being started
    (`DRAWN_TRACE_ID`): `RequestObserver` draws a request's trace id to take the sampler's
    decision before any span exists (a dropped request then costs no SDK span), and the span
    it then asks for must carry that id, the one the decision was taken on. A span started
    beneath a dropped request (`DROPPED`) has no parent span but carries the request's trace
    id, so that the run record and the log lines name the trace the response names."""

    def generate_trace_id(self) -> int:
        drawn = DRAWN_TRACE_ID.get()
        if drawn:
            return drawn
        dropped = DROPPED.get()
        return int(dropped_ids(dropped)[0], 16) if dropped else super().generate_trace_id()


DROP = SamplingResult(Decision.DROP)


class Dropped(Sampler):
    """`root`'s decision on a new trace, except beneath a request the sampler dropped
    (`DROPPED`), where no span is ever sampled: the request's decision holds for everything it
    starts, as a non-sampled parent span's would under `ParentBased`."""

    def __init__(self, root: Sampler) -> None:
        self.root = root

    def should_sample(
        self,
        parent_context: Context | None,
        trace_id: int,
        name: str,
        kind: SpanKind | None = None,
        attributes: Attributes = None,
        links: Sequence[Link] | None = None,
        trace_state: TraceState | None = None,
    ) -> SamplingResult:
        if DROPPED.get():
            return DROP
        return self.root.should_sample(parent_context, trace_id, name, kind, attributes, links, trace_state)

    def get_description(self) -> str:
        return f"Dropped{{{self.root.get_description()}}}"


def new_provider(ratio: float, processor: SpanProcessor, resource: Resource | None = None) -> TracerProvider:
    """A provider sampling new traces at `ratio` by trace id and following a caller's
    decision (`OTEL_TRACES_SAMPLER=parentbased_traceidratio`), with `DrawnIds`; a new trace
    beneath a dropped request is dropped too (`Dropped`)."""
    sampler = ParentBased(Dropped(TraceIdRatioBased(ratio)))
    provider = TracerProvider(resource=resource or Resource.create(), sampler=sampler, id_generator=DrawnIds())
    provider.add_span_processor(processor)
    return provider


def configure(settings: Settings, processor: SpanProcessor | None = None) -> trace.TracerProvider:
    """Set this process's provider from the settings; `processor` (tests: an in-memory
    exporter's) turns traces on whatever the settings say."""
    global _provider
    if processor is None and not enabled(settings):
        _provider = NoOpTracerProvider()
        return _provider
    attributes: dict[str, Any] = {**pairs(settings.otel_resource_attributes)}
    attributes.update({"service.name": settings.otel_service_name, "service.version": __version__})
    _provider = new_provider(
        settings.otel_traces_sampler_arg,
        processor or BatchSpanProcessor(exporter_of(settings)),
        Resource.create(attributes),
    )
    return _provider


def provider() -> trace.TracerProvider:
    return _provider


def tracer(provider: trace.TracerProvider | None = None) -> Tracer:
    """The tracer of `provider` (an app's own), else of this module's provider."""
    return (provider or _provider).get_tracer(SCOPE, __version__)


def shutdown() -> None:
    """Send the spans still buffered (the service is stopping)."""
    if isinstance(_provider, TracerProvider):
        _provider.shutdown()
