"""The MCP server: tools and resources over streamable HTTP, built on the official `mcp` SDK's
low-level `Server` (the high-level `MCPServer` registers resources once for everyone, while
Datawell's resources are the datasets each caller may read).

- Stateless HTTP: every request stands alone (no `Mcp-Session-Id`, nothing kept in process
  memory), so any API process can serve any request. Both protocol eras the SDK speaks work:
  the initialize handshake (2024-11-05 … 2025-11-25) and the per-request 2026-07-28 one.
- The route in front (`datawell.api.mcp`) authenticates the bearer token exactly as REST does
  and puts the Datawell user in the ASGI scope; handlers read it, and the services, from the
  HTTP request the SDK hands them.
- Progress notifications travel on the request's own SSE response stream."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel.server import Server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.shared.exceptions import MCPError
from mcp_types import (
    INVALID_PARAMS,
    CallToolRequestParams,
    CallToolResult,
    ListResourcesResult,
    ListResourceTemplatesResult,
    ListToolsResult,
    PaginatedRequestParams,
    ReadResourceRequestParams,
    ReadResourceResult,
    Resource,
    ResourceTemplate,
    TextResourceContents,
)
from starlette.requests import Request
from starlette.types import Receive, Scope, Send

from datawell import __version__
from datawell.errors import NotFound
from datawell.mcp import agents, datasets
from datawell.mcp.calls import Call, ToolSpec
from datawell.mcp.datasets import SCHEME, description, readable_datasets, schema_uri
from datawell.mcp.results import failure_result, protocol_error
from datawell.runs import Runs
from datawell.services import Services
from datawell.storage.access import Permission, authorize
from datawell.storage.datasets import get_dataset
from datawell.storage.tables import User

INSTRUCTIONS = (
    "Datawell holds datasets in namespaces. Every tool names its namespace: `name` for one of yours, "
    "`owner/name` for one shared with you. Start with list_datasets, then describe_dataset; ask_assistant "
    "answers questions end to end, run_query runs SQL you write."
)
SCHEMA_TEMPLATE = f"{SCHEME}://{{owner}}/{{namespace}}/{{dataset}}/schema"
JSON = "application/json"

Context = ServerRequestContext[dict[str, Any], Request]


def caller(ctx: Context) -> tuple[Services, User]:
    request = ctx.request
    assert request is not None, "the MCP server is served over HTTP only"
    return request.state.services, request.scope["user"]


def runs_of(ctx: Context) -> Runs:
    assert ctx.request is not None
    runs: Runs = ctx.request.state.runs
    return runs


class McpServer:
    def __init__(self) -> None:
        self.tools: dict[str, ToolSpec] = {t.name: t for t in (*datasets.TOOLS, *agents.TOOLS)}
        self.server: Server[dict[str, Any]] = Server(
            "datawell",
            version=__version__,
            title="Datawell",
            instructions=INSTRUCTIONS,
            on_list_tools=self.list_tools,
            on_call_tool=self.call_tool,
            on_list_resources=self.list_resources,
            on_list_resource_templates=self.list_resource_templates,
            on_read_resource=self.read_resource,
        )
        self.sessions = StreamableHTTPSessionManager(self.server, stateless=True)

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """Runs the SDK's request task group for the app's lifetime. It runs in a task of its
        own: its task group must close in the task that opened it, and an app's lifespan may
        start and end in different tasks (test fixtures do)."""
        started, stop = asyncio.Event(), asyncio.Event()

        async def serve() -> None:
            try:
                async with self.sessions.run():
                    started.set()
                    await stop.wait()
            finally:
                started.set()

        task = asyncio.create_task(serve())
        await started.wait()
        if task.done():
            task.result()
        try:
            yield
        finally:
            stop.set()
            await task

    async def handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.sessions.handle_request(scope, receive, send)

    async def list_tools(self, _ctx: Context, _params: PaginatedRequestParams | None) -> ListToolsResult:
        return ListToolsResult(tools=[tool.listing() for tool in self.tools.values()])

    async def call_tool(self, ctx: Context, params: CallToolRequestParams) -> CallToolResult:
        tool = self.tools.get(params.name)
        if tool is None:
            raise MCPError(INVALID_PARAMS, f"no tool named {params.name!r}; tools/list lists them")
        services, user = caller(ctx)
        call = Call(services=services, runs=runs_of(ctx), user=user, progress=ctx.session.report_progress)
        try:
            return await tool.handler(call, tool.arguments.model_validate(params.arguments or {}))
        except Exception as exc:
            return failure_result(exc)

    async def list_resources(self, ctx: Context, _params: PaginatedRequestParams | None) -> ListResourcesResult:
        services, user = caller(ctx)
        return ListResourcesResult(
            resources=[
                Resource(
                    uri=schema_uri(d.namespace.owner, d.namespace.name, d.name),
                    name=f"{d.namespace}/{d.name}",
                    title=f"Schema of {d.namespace}/{d.name}",
                    description=d.record.description or None,
                    mime_type=JSON,
                )
                for d in await readable_datasets(services, user)
            ]
        )

    async def list_resource_templates(
        self, _ctx: Context, _params: PaginatedRequestParams | None
    ) -> ListResourceTemplatesResult:
        template = ResourceTemplate(
            uri_template=SCHEMA_TEMPLATE,
            name="dataset-schema",
            title="A dataset's schema",
            description="Fields, types, descriptions, sample values and row count of a dataset you can read",
            mime_type=JSON,
        )
        return ListResourceTemplatesResult(resource_templates=[template])

    async def read_resource(self, ctx: Context, params: ReadResourceRequestParams) -> ReadResourceResult:
        services, user = caller(ctx)
        uri = str(params.uri)
        try:
            owner, namespace_name, dataset_name = schema_coordinate(uri)
            async with services.db.session() as session:
                namespace = await authorize(session, user, owner, namespace_name, Permission.READ)
                dataset = await get_dataset(session, namespace, dataset_name)
            described = await description(services, dataset)
        except Exception as exc:
            raise protocol_error(exc) from None
        text = json.dumps(described.model_dump(mode="json", by_alias=True), ensure_ascii=False)
        return ReadResourceResult(contents=[TextResourceContents(uri=uri, text=text, mime_type=JSON)])


def schema_coordinate(uri: str) -> tuple[str, str, str]:
    prefix = f"{SCHEME}://"
    parts = uri.removeprefix(prefix).split("/") if uri.startswith(prefix) else []
    if len(parts) != 4 or parts[3] != "schema" or not all(parts):
        raise NotFound(f"no resource {uri!r}; resources/list lists them ({SCHEMA_TEMPLATE})")
    return parts[0], parts[1], parts[2]
