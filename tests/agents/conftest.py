from __future__ import annotations

import pytest

from tests.agents.a2a_client import Agent, discover
from tests.conftest import Account
from tests.fake_runs import FakeRuns

ORDERS = {"dataDescription": "Web shop orders", "schemaDefinition": {"customer": "Customer", "total": "EUR"}}
A2A = {"A2A-Version": "1.0"}


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> FakeRuns:
    return FakeRuns().install(monkeypatch)


@pytest.fixture
async def sales(client, alice: Account) -> str:
    """alice's namespace `sales` with one dataset."""
    response = await client.post("/api/v1/ingest/new/sales/orders", json=ORDERS, headers=alice.headers)
    assert response.status_code == 201
    return "sales"


@pytest.fixture
async def agents(client) -> dict[str, Agent]:
    return await discover(client)
