"""The composition root: the Starlette app around the services (`datawell.services`) and the
graph runs (`datawell.runs`), with the API, the A2A agents, the MCP server, the console and the
in-process worker mounted."""

from __future__ import annotations

import asyncio
import gc
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager

from opentelemetry.sdk.trace import SpanProcessor
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.routing import BaseRoute

from datawell.agents.server import AgentServer
from datawell.api import (
    a2a,
    autorag,
    build_specs,
    datalinks,
    datasets,
    examples,
    ingestions,
    mcp,
    ontology,
    routing,
    rows,
    system,
    uploads,
)
from datawell.api import metrics as metrics_api
from datawell.api import runs as run_api
from datawell.api.bodies import BodyLimit
from datawell.api.datalinks.origin import SDK_CALLS, BareOrigin
from datawell.api.errors import EXCEPTION_HANDLERS
from datawell.api.openapi import build_openapi
from datawell.api.routing import Context, Router
from datawell.config import Settings
from datawell.console import ConsoleCookies
from datawell.console import routes as console_routes
from datawell.ingest.worker import running_worker
from datawell.llm.embeddings import MiniLMEmbedder, StaticMiniLMEmbedder
from datawell.llm.litellm_models import LiteLLMChatModels
from datawell.mcp.server import McpServer
from datawell.observability import tracing
from datawell.observability.http import RequestObserver
from datawell.runs import Runs
from datawell.services import API_PREFIX, PART_PATH, Overrides, Services, build_services

API_ROUTERS: list[Router] = [
    datasets.router,
    build_specs.router,
    uploads.router,
    ingestions.router,
    autorag.router,
    a2a.router,
    mcp.router,
    ontology.router,
    examples.router,
    rows.router,
    run_api.router,
    # After SPEC's routes: a SPEC path wins where the SDK's paths overlap it.
    datalinks.router,
]


def create_app(
    settings: Settings | None = None,
    overrides: Overrides | None = None,
    runs: Callable[[Services], Runs] = Runs,
    spans: SpanProcessor | None = None,
) -> Starlette:
    """`runs` starts the graph runs of every request; tests pass canned ones, and `spans` to
    see the traces whatever the `OTEL_*` settings say."""
    settings = settings or Settings()
    tracer_provider = tracing.configure(settings, spans)
    agents = AgentServer()
    mcp_server = McpServer()

    @asynccontextmanager
    async def lifespan(_app: Starlette) -> AsyncIterator[dict[str, Services | Runs | Context]]:
        services = await build_services(settings, overrides)
        started = runs(services)
        # The models load beside the API (which answers meanwhile); a question asked before
        # one is ready waits for the same load. The static embedder's first load distills it
        # (minutes, once per data folder).
        preloading = []
        if settings.embedded_model_preload and isinstance(services.models, LiteLLMChatModels):
            preloading.append(asyncio.create_task(services.models.preload()))
        if isinstance(services.embedder, StaticMiniLMEmbedder | MiniLMEmbedder):  # never on the first upload
            preloading.append(asyncio.create_task(services.embedder.preload()))
        try:
            async with AsyncExitStack() as stack:
                await stack.enter_async_context(mcp_server.running())
                if settings.run_worker_in_process:
                    await stack.enter_async_context(running_worker(services))
                # The API's handlers reach all of it through `context` (`api.routing.Context`);
                # the console, the MCP tools and the A2A executors read services and runs.
                context = Context(services, started, agents, mcp_server, openapi)
                # The ~700,000 objects of the imports and the start-up live as long as the
                # process: frozen, the collector's full passes skip them instead of walking them
                # for 0.3-1 s with the GIL held, which stalled every request, `/health`
                # included (docs/decisions.md, issues 30 and 51).
                gc.collect()
                gc.freeze()
                yield {"services": services, "runs": started, "context": context}
        finally:
            for load in preloading:
                await load  # a load in a thread cannot be stopped, only waited for
            await agents.aclose()
            await services.close()
            tracing.shutdown()

    traced = tracing.enabled(settings) or spans is not None
    routes: list[BaseRoute] = []
    # One route per path across the routers: the SDK's methods beside SPEC's on a shared path.
    routes.extend(routing.routes([op for router in API_ROUTERS for op in router.operations], API_PREFIX))
    at_root = [*system.router.routes(""), *metrics_api.routes(settings), *console_routes()]
    routes.extend(at_root)
    app = Starlette(
        routes=routes,
        lifespan=lifespan,
        exception_handlers=EXCEPTION_HANDLERS,  # type: ignore[arg-type]
        # BareOrigin first: an SDK call at the root is an API request to everything after it.
        # RequestObserver inside ConsoleCookies, which hands on a copy of the scope: it reads the
        # route the router leaves in the scope. Outside BodyLimit: its span covers the body's
        # read and a refusal is counted.
        middleware=[
            Middleware(BareOrigin, prefix=API_PREFIX, calls=SDK_CALLS, others=at_root),
            Middleware(ConsoleCookies, api_prefix=API_PREFIX),
            *(
                [
                    Middleware(
                        RequestObserver,
                        tracer=tracing.tracer(tracer_provider) if traced else None,
                        ratio=settings.otel_traces_sampler_arg,
                        counted=settings.metrics != "off",
                    )
                ]
                if settings.metrics != "off" or traced
                else []
            ),
            Middleware(BodyLimit, max_bytes=settings.max_request_bytes, streamed=(API_PREFIX + PART_PATH,)),
        ],
    )
    mounted = [(API_PREFIX, r.operations) for r in API_ROUTERS] + [("", system.router.operations)]
    openapi = build_openapi(mounted, settings.auth_url)
    app.state.openapi = openapi  # for tests and tools that read the document without serving
    return app
