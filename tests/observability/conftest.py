"""A question the real assistant answers over real rows with a scripted model: alice's
`sales` with `orders`; the plan writes the query, the answer model answers from its rows."""

from __future__ import annotations

import httpx
import pytest

from datawell.graphs.assistant.state import PlanOutput
from datawell.llm.scripted import ScriptedChatModel
from datawell.services import Services
from datawell.storage import access
from datawell.storage.users import find_user
from tests.conftest import Account
from tests.tools.conftest import ORDERS, load

QUERY = "SELECT customer, total FROM orders WHERE paid ORDER BY total DESC"
ANSWER = "Ada paid the most: 30 EUR."
FIELDS = {"order_id": "order number", "customer": "who ordered", "total": "amount in EUR", "paid": "paid yet?",
          "note": "what was ordered", "placed": "when"}  # fmt: skip
TYPES = {"order_id": "integer", "customer": "text", "total": "real", "paid": "boolean", "note": "text",
         "placed": "timestamp"}  # fmt: skip


@pytest.fixture
def chat_model() -> ScriptedChatModel:
    return ScriptedChatModel([PlanOutput(query=QUERY), ANSWER] * 4)


@pytest.fixture
async def sales(services: Services, alice: Account) -> str:
    async with services.db.session() as session:
        owner = await find_user(session, "alice")
        assert owner is not None
        namespace = await access.ensure_namespace(session, owner, "sales")
    await load(services, namespace, owner, "orders", FIELDS, TYPES, ORDERS)
    return "sales"


async def ask(client: httpx.AsyncClient, account: Account, question: str = "Who paid the most?", **body: object) -> str:
    """Ask alice's sales; the run's id."""
    response = await client.post(
        "/api/v1/query/autorag",
        json={"username": "alice", "namespace": "sales", "query": question, **body},
        headers=account.headers,
    )
    assert response.status_code == 200, response.text
    assert response.json()["response"] == ANSWER
    return response.headers["datawell-run-id"]
