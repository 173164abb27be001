"""An MCP client (the official `mcp` SDK's) talking streamable HTTP to the app in process, and
a shop for it to read: alice's `sales` with `orders` (rows with embeddings) and `customers`,
one active link between them, and bob's `crm`."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from datawell.ontology.links import MatchType, NewLink, save_links
from datawell.services import Services
from datawell.storage import access
from datawell.storage.datasets import find_dataset
from datawell.storage.links import ACTIVE
from datawell.storage.users import find_user
from tests.conftest import Account, Running
from tests.tools.conftest import ORDERS, load

MCP_PATH = "/api/v1/mcp"
TOOL_NAMES = {"list_datasets", "describe_dataset", "run_query", "semantic_search", "list_links", "ask_nl2ql",
              "ask_assistant"}  # fmt: skip
ORDER_FIELDS = {"order_id": "order number", "customer": "who ordered", "total": "amount in EUR", "paid": "paid yet?",
                "note": "what was ordered", "placed": "when"}  # fmt: skip
ORDER_TYPES = {"order_id": "integer", "customer": "text", "total": "real", "paid": "boolean", "note": "text",
               "placed": "timestamp"}  # fmt: skip

Connect = Callable[..., AbstractAsyncContextManager[Client]]


def connector(base_url: str, transport: httpx2.AsyncBaseTransport | None = None) -> Connect:
    @asynccontextmanager
    async def connect(account: Account | None, mode: str = "legacy") -> AsyncIterator[Client]:
        headers = account.headers if account else {}
        async with httpx2.AsyncClient(transport=transport, headers=headers, timeout=30) as http:
            transport_streams = streamable_http_client(base_url + MCP_PATH, http_client=http)
            async with Client(transport_streams, mode=mode) as client:
                yield client

    return connect


@pytest.fixture
def connect(service: Running) -> Connect:
    return connector("http://testserver", httpx2.ASGITransport(app=service.asgi))


@pytest.fixture
async def shop(services: Services, alice: Account, bob: Account) -> str:
    async with services.db.session() as session:
        owner = await find_user(session, "alice")
        other = await find_user(session, "bob")
        assert owner and other
        sales = await access.ensure_namespace(session, owner, "sales")
        crm = await access.ensure_namespace(session, other, "crm")
    await load(services, sales, owner, "orders", ORDER_FIELDS, ORDER_TYPES, ORDERS, embed="note")
    await load(services, sales, owner, "customers", {"name": "customer name"}, {"name": "text"},
               [{"name": "Ada"}, {"name": "Bob"}])  # fmt: skip
    await load(services, crm, other, "leads", {"name": "lead name"}, {"name": "text"}, [{"name": "Eve"}])
    async with services.db.session() as session:
        orders = await find_dataset(session, sales, "orders")
        customers = await find_dataset(session, sales, "customers")
        assert orders and customers
        link = NewLink("sales/orders.customer", "sales/customers.name", orders.record.id, customers.record.id,
                       MatchType.EXACT, hits=2, score=1.0, reason="same customer names")  # fmt: skip
        await save_links(session, sales.id, [link], status=ACTIVE, curated_by=None, model="m")
    return "sales"
