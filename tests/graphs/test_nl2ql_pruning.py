"""Schema pruning in the nl2ql graph: a large namespace shows the query writer the tables
its question needs, and a query naming something unknown widens to the whole catalog."""

from __future__ import annotations

import dataclasses

from datawell.graphs.nl2ql.graph import build_graph
from datawell.graphs.nl2ql.state import QueryContext, QueryDraft
from datawell.llm.embeddings import HashingEmbedder
from datawell.llm.scripted import ScriptedChatModel
from datawell.runs import query_deps
from datawell.services import Services
from datawell.tools.pruning import PruneLimits, SchemaPruner
from tests.graphs.conftest import Shop
from tests.graphs.fakes import FakeQueryTools

TOTAL = "SELECT SUM(amount) FROM orders"


async def test_an_unknown_column_widens_the_pruned_catalog_for_the_repair(
    services: Services, shop: Shop, tools: FakeQueryTools, chat_model: ScriptedChatModel
) -> None:
    # Limits so small that the two-table shop is pruned to the one table the question names.
    pruner = SchemaPruner(HashingEmbedder(), PruneLimits(max_tables=1, max_columns=100, keep=1))
    deps = query_deps(services)
    deps = dataclasses.replace(deps, view=dataclasses.replace(deps.view, pruner=pruner))
    chat_model.script += [
        QueryDraft(reasoning="orders has the customer", query="SELECT customer_name FROM orders"),
        QueryDraft(reasoning="sum the amounts", query=TOTAL),
    ]
    tools.rows[TOTAL] = [{"total": 420.0}]

    out = await build_graph(deps).ainvoke(
        {"question": "What is the total amount of all orders?"},
        context=QueryContext(caller=shop.caller, namespace=shop.namespace),
    )

    first, second = chat_model.prompts()
    assert "table orders" in first and "table customers" not in first
    assert "orders.customer_id = customers.id" not in first  # a join needs both ends shown
    assert "table orders" in second and "table customers" in second
    assert "orders.customer_id = customers.id" in second
    assert (out["query"], out["rows"], out["pruned"]) == (TOTAL, [{"total": 420.0}], False)


async def test_a_small_namespace_is_shown_whole(
    services: Services, shop: Shop, tools: FakeQueryTools, chat_model: ScriptedChatModel
) -> None:
    chat_model.script.append(QueryDraft(reasoning="", query=TOTAL))
    tools.rows[TOTAL] = [{"total": 420.0}]

    out = await build_graph(query_deps(services)).ainvoke(
        {"question": "What is the total amount of all orders?"},
        context=QueryContext(caller=shop.caller, namespace=shop.namespace),
    )

    assert "table customers" in chat_model.prompts()[0] and out["pruned"] is False
