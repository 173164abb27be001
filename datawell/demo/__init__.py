"""A small bundled demo: a web shop's customers and orders, loaded through the real
ingestion path (object store → queued attempt → worker), then asked about."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from datawell.ingest.worker import Worker
from datawell.services import Services
from datawell.storage import ingestions
from datawell.storage.access import NamespaceRef, ensure_namespace
from datawell.storage.datasets import create_dataset, find_dataset
from datawell.storage.tables import User
from datawell.storage.users import create_user, find_user

FOLDER = Path(__file__).parent
NAMESPACE = "shop"


@dataclass(frozen=True)
class DemoDataset:
    name: str
    description: str
    schema: dict[str, str]


DATASETS = (
    DemoDataset(
        "customers",
        "Customers of a small online shop for computer accessories.",
        {
            "customer_id": "Customer identifier such as C001",
            "name": "Full name of the customer",
            "country": "Country the customer lives in",
            "signup_date": "Date the customer signed up",
        },
    ),
    DemoDataset(
        "orders",
        "Orders placed in the shop; each order is one product line.",
        {
            "order_id": "Order number",
            "customer_id": "Customer who placed the order (see customers.customer_id)",
            "product": "Product name",
            "quantity": "Number of units ordered",
            "unit_price": "Price of one unit in EUR",
            "order_date": "Date the order was placed",
        },
    ),
)


async def load(services: Services, username: str) -> tuple[User, NamespaceRef, list[str]]:
    """Create the user and the demo datasets where missing and ingest their files; returns
    the user, the namespace and one status line per dataset."""
    async with services.db.session() as session:
        user = await find_user(session, username) or await create_user(session, username)
        namespace = await ensure_namespace(session, user, NAMESPACE)
    report = []
    for item in DATASETS:
        async with services.db.session() as session:
            existing = await find_dataset(session, namespace, item.name)
            if existing is not None:
                report.append(f"{namespace}/{item.name}: already loaded")
                continue
            dataset = await create_dataset(session, namespace, item.name, item.description, item.schema, user)
            key = f"demo/{item.name}.csv"
            data = (FOLDER / f"{item.name}.csv").read_bytes()
            await services.objects.put(key, data)
            await ingestions.enqueue(session, dataset.record, key, f"{item.name}.csv", len(data), user)
        report.append(f"{namespace}/{item.name}: queued")
    worker = Worker(services, name="demo")
    while await worker.run_once() is not None:
        pass
    return user, namespace, report
