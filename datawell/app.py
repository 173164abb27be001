"""The composition root: builds the services from settings and the Starlette app around them."""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.routing import BaseRoute

from datawell.agents import routes as a2a_routes
from datawell.agents.server import AgentServer
from datawell.api import autorag, build_specs, datasets, ingestions, mcp, ontology, system, uploads
from datawell.api.auth import signing_secret, token_authority
from datawell.api.errors import EXCEPTION_HANDLERS
from datawell.api.openapi import build_openapi
from datawell.api.routing import Router
from datawell.config import Settings
from datawell.console import ConsoleCookies
from datawell.console import routes as console_routes
from datawell.graphs.memory import ConversationMemory
from datawell.ingest.worker import running_worker
from datawell.llm.embeddings import Embedder, HashingEmbedder, MiniLMEmbedder
from datawell.llm.models import ChatModels
from datawell.mcp.server import McpServer
from datawell.prompts import PromptLibrary
from datawell.runs import Runs
from datawell.services import Services
from datawell.storage.db import Database
from datawell.storage.moves import move_row_tables
from datawell.storage.objects import LocalObjectStore, ObjectStore, S3ObjectStore
from datawell.storage.rows import RowStore
from datawell.storage.vectors import VectorStore
from datawell.tools.ql import QueryTools

API_PREFIX = "/api/v1"
API_ROUTERS: list[Router] = [
    datasets.router,
    build_specs.router,
    uploads.router,
    ingestions.router,
    autorag.router,
    a2a_routes.router,
    mcp.router,
    ontology.router,
]


@dataclass(frozen=True)
class Overrides:
    """Replacements for services that tests and eval runs swap in (scripted models, a hashing
    embedder, prompts from another folder, canned graph runs)."""

    models: ChatModels | None = None
    embedder: Embedder | None = None
    prompts: PromptLibrary | None = None
    query_tools: QueryTools | None = None
    runs: Callable[[Services], Runs] | None = None


def part_signing_key(secret: str) -> bytes:
    """The key of the local store's part URLs, derived from the token key so that every
    process sharing that key also accepts the others' URLs, while a part signature can never
    serve as a token signature (or the reverse)."""
    return hmac.new(secret.encode(), b"datawell upload part urls", hashlib.sha256).digest()


def build_object_store(settings: Settings, secret: str) -> ObjectStore:
    if settings.object_store == "s3":
        return S3ObjectStore.connect(
            settings.s3_bucket, endpoint_url=settings.s3_endpoint_url, region=settings.s3_region
        )
    return LocalObjectStore(
        settings.data_dir / "objects",
        signing_key=part_signing_key(secret),
        part_url_base=API_PREFIX + uploads.PART_PATH,  # made absolute per request by prepare
    )


def default_embedder(settings: Settings) -> Embedder:
    return MiniLMEmbedder() if settings.embeddings_enabled else HashingEmbedder()


def default_models(settings: Settings) -> ChatModels:
    from datawell.llm.litellm_models import LiteLLMChatModels

    return LiteLLMChatModels(settings)


async def build_services(settings: Settings, overrides: Overrides | None = None) -> Services:
    overrides = overrides or Overrides()
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    db = Database(settings.resolved_database_url)
    await db.migrate()
    secret = signing_secret(settings)
    tokens = token_authority(db, settings)
    embedder = overrides.embedder or default_embedder(settings)
    await move_row_tables(settings.resolved_database_url, settings.resolved_rows_database_url)
    rows = RowStore(settings.resolved_rows_database_url)
    vectors = VectorStore(embedder.dimension, url=settings.qdrant_url, path=settings.data_dir / "qdrant")
    query_tools = overrides.query_tools
    if query_tools is None:
        query_tools = QueryTools(
            db,
            rows,
            vectors,
            embedder,
            row_cap=settings.query_row_cap,
            time_limit_seconds=settings.query_time_limit_seconds,
            max_row_bytes=settings.query_max_row_bytes,
            max_result_bytes=settings.query_max_result_bytes,
            work_mem_mb=settings.query_work_mem_mb,
        )
        await query_tools.start()
    return Services(
        settings=settings,
        db=db,
        tokens=tokens,
        rows=rows,
        vectors=vectors,
        embedder=embedder,
        models=overrides.models or default_models(settings),
        prompts=overrides.prompts or PromptLibrary(),
        objects=build_object_store(settings, secret),
        query_tools=query_tools,
        memory=ConversationMemory(settings.resolved_database_url, settings.data_dir),
    )


def create_app(settings: Settings | None = None, overrides: Overrides | None = None) -> Starlette:
    settings = settings or Settings()
    agents = AgentServer()
    mcp_server = McpServer()

    @asynccontextmanager
    async def lifespan(_app: Starlette) -> AsyncIterator[dict[str, Services | Runs]]:
        services = await build_services(settings, overrides)
        runs = (overrides.runs if overrides is not None and overrides.runs else Runs)(services)
        try:
            async with AsyncExitStack() as stack:
                await stack.enter_async_context(mcp_server.running())
                if settings.run_worker_in_process:
                    await stack.enter_async_context(running_worker(services))
                yield {"services": services, "runs": runs}
        finally:
            await agents.aclose()
            await services.close()

    routes: list[BaseRoute] = []
    for router in API_ROUTERS:
        routes.extend(router.routes(API_PREFIX))
    routes.extend(system.router.routes(""))
    routes.extend(console_routes())
    app = Starlette(
        routes=routes,
        lifespan=lifespan,
        exception_handlers=EXCEPTION_HANDLERS,  # type: ignore[arg-type]
        middleware=[Middleware(ConsoleCookies, api_prefix=API_PREFIX)],
    )
    mounted = [(API_PREFIX, r.operations) for r in API_ROUTERS] + [("", system.router.operations)]
    app.state.agents = agents
    app.state.mcp = mcp_server
    app.state.openapi = build_openapi(mounted, settings.auth_url)
    return app
