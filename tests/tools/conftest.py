"""Fixtures for the query tools: two users, each with a namespace and a published dataset."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pytest

from datawell.services import Services
from datawell.storage import access
from datawell.storage.access import NamespaceRef
from datawell.storage.datasets import create_dataset
from datawell.storage.tables import User
from datawell.storage.users import create_user
from datawell.storage.vectors import ROWS, Point
from datawell.tools.ql import QueryTools

ORDERS = [
    {"order_id": 1, "customer": "Ada", "total": 12.5, "paid": True, "note": "red apple pie with cream", "placed": datetime(2024, 1, 5, 10, tzinfo=UTC)},
    {"order_id": 2, "customer": "Bob", "total": 99.0, "paid": False, "note": "blue running shoes", "placed": datetime(2024, 2, 9, 11, tzinfo=UTC)},
    {"order_id": 3, "customer": "Cy", "total": 7.25, "paid": True, "note": "apple juice and apple pie", "placed": datetime(2024, 2, 20, 12, tzinfo=UTC)},
    {"order_id": 4, "customer": "Ada", "total": 30.0, "paid": True, "note": "garden hose", "placed": datetime(2024, 3, 1, 9, tzinfo=UTC)},
    {"order_id": 5, "customer": "Dee", "total": 3.0, "paid": False, "note": "one green apple", "placed": datetime(2024, 3, 2, 8, tzinfo=UTC)},
]  # fmt: skip


@dataclass
class World:
    query: QueryTools
    alice: User
    bob: User
    sales: NamespaceRef  # alice's
    crm: NamespaceRef  # bob's


async def load(services: Services, namespace: NamespaceRef, creator: User, name: str, schema: dict[str, str],
               types: dict[str, str], rows: list[dict[str, Any]], embed: str | None = None) -> None:  # fmt: skip
    """A published dataset, and its rows' vectors when `embed` names the text field."""
    async with services.db.session() as session:
        dataset = (await create_dataset(session, namespace, name, f"{name} of the shop", schema, creator)).record
        dataset.field_types = types
    ingestion = str(uuid.uuid4())
    await services.rows.stage(dataset, ingestion)
    await services.rows.write(dataset, ingestion, rows)
    staged = await services.rows.staged_ids(dataset, ingestion)
    if embed:
        vectors = await services.embedder.embed([row[embed] for _, row in staged])
        points = [Point(row_id, vector, {}) for (row_id, _), vector in zip(staged, vectors, strict=True)]
        await services.vectors.upsert(ROWS, dataset.id, points)
    await services.rows.publish(dataset, ingestion, source="upload.csv")


@pytest.fixture
async def world(services: Services) -> World:
    async with services.db.session() as session:
        alice = await create_user(session, "alice")
        bob = await create_user(session, "bob")
        sales = await access.ensure_namespace(session, alice, "sales")
        crm = await access.ensure_namespace(session, bob, "crm")
    await load(
        services, sales, alice, "orders",
        {"order_id": "order number", "customer": "who ordered", "total": "amount in EUR", "paid": "paid yet?",
         "note": "what was ordered", "placed": "when"},
        {"order_id": "integer", "customer": "text", "total": "real", "paid": "boolean", "note": "text", "placed": "timestamp"},
        ORDERS, embed="note",
    )  # fmt: skip
    await load(
        services, crm, bob, "customers", {"name": "customer name", "city": "where they live"},
        {"name": "text", "city": "text"},
        [{"name": "Ada", "city": "Paris"}, {"name": "Bob", "city": "Oslo"}, {"name": "Cy", "city": "Lima"}],
    )  # fmt: skip
    return World(services.query_tools, alice, bob, sales, crm)
