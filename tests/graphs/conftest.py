from __future__ import annotations

import os

# Importing litellm must not reach for the network (NOTES-LLM.md): its cost map is bundled.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from collections.abc import AsyncIterator
from dataclasses import dataclass

import pytest

from datawell.config import Settings
from datawell.llm.embeddings import HashingEmbedder
from datawell.llm.models import FixedChatModels
from datawell.services import Overrides, Services, build_services
from datawell.storage.access import Caller, NamespaceRef, ensure_namespace
from datawell.storage.examples import add_example
from datawell.storage.tables import Dataset, Link, User
from datawell.storage.users import get_user
from tests.conftest import Account
from tests.graphs.fakes import FakeQueryTools, table

CUSTOMERS = {"id": "integer", "name": "text", "city": "text"}
ORDERS = {"id": "integer", "customer_id": "integer", "amount": "real", "ordered_at": "timestamp"}


@pytest.fixture
def tools() -> FakeQueryTools:
    return FakeQueryTools()


@pytest.fixture
async def services(settings: Settings, chat_models: FixedChatModels, tools: FakeQueryTools) -> AsyncIterator[Services]:
    """The services a graph runs over, with the scripted model and fake query tools; no app."""
    services = await build_services(settings, Overrides(models=chat_models, embedder=HashingEmbedder(), queries=tools))
    try:
        yield services
    finally:
        await services.close()


@dataclass
class Shop:
    """alice's namespace `shop` with `customers` and `orders`, joined by an active link."""

    user: User
    namespace: NamespaceRef

    @property
    def caller(self) -> Caller:
        """alice as a run hands her down: her access read once (she reads only her shop)."""
        return Caller(self.user.id, self.user.username, (self.namespace,))


async def verify(services: Services, shop: Shop, question: str, query: str) -> str:
    """Store a verified example in the shop, as alice; its id."""
    async with services.db.session() as session:
        return (await add_example(session, shop.namespace, shop.user, question, query)).id


async def user_named(services: Services, name: str) -> User:
    async with services.db.session() as session:
        return await get_user(session, name)


@pytest.fixture
async def shop(services: Services, alice: Account, tools: FakeQueryTools) -> Shop:
    user = await user_named(services, "alice")
    async with services.db.session() as session:
        namespace = await ensure_namespace(session, user, "shop")
        datasets = {}
        for name in ("customers", "orders"):
            dataset = Dataset(namespace_id=namespace.id, name=name, table_name=f"rows_{name}", created_by=user.id)
            session.add(dataset)
            datasets[name] = dataset
        await session.flush()
        session.add(
            Link(
                namespace_id=namespace.id,
                origin_dataset_id=datasets["orders"].id,
                destination_dataset_id=datasets["customers"].id,
                origin="shop/orders.customer_id",
                destination="shop/customers.id",
                hits=42,
                match_type="ExactMatch",
                status="Active",
            )
        )
        session.add(
            Link(
                namespace_id=namespace.id,
                origin_dataset_id=datasets["customers"].id,
                destination_dataset_id=datasets["orders"].id,
                origin="shop/customers.city",
                destination="shop/orders.amount",
                hits=1,
                match_type="FuzzyMatch",
                status="Suggested",
            )
        )
    # What the real tools read of those links (`QueryTools.links`): the active one only.
    tools.active_links[namespace.id] = [("shop/orders.customer_id", "shop/customers.id", "ExactMatch", 42)]
    tools.tables += [
        table(namespace, "customers", CUSTOMERS, "Customers of the shop"),
        table(namespace, "orders", ORDERS, "Orders placed by customers"),
    ]
    return Shop(user, namespace)
