"""The question path in one straight line: a one-query question reads the caller's access
once (when the run starts) and prepares its query once (the `check` node's prepared form
is what runs)."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator
from typing import Any

import pytest
from sqlalchemy import event

from datawell.graphs.events import QueryGenerated, RowsReady
from datawell.graphs.nl2ql.state import QueryDraft
from datawell.llm.scripted import ScriptedChatModel
from datawell.runs import AskRequest, Runs
from datawell.services import Services
from datawell.storage.access import NamespaceRef
from datawell.tools.checker import CompiledQuery
from datawell.tools.ql import QueryTools, Who
from datawell.tools.sandbox import Limits
from tests.tools.conftest import World

COUNT = "SELECT COUNT(*) AS n FROM orders"
ORDERS = {"owner": "alice", "namespace": "sales", "datasetName": "orders"}


class CountingQueryTools(QueryTools):
    """The real query tools, counting how often a query is prepared."""

    prepared: list[str]

    async def prepare(
        self, who: Who, namespace: NamespaceRef, query: str, *, row_cap: int | None = None
    ) -> CompiledQuery:
        self.prepared.append(query)
        return await super().prepare(who, namespace, query, row_cap=row_cap)


@pytest.fixture
async def counting(services: Services) -> AsyncIterator[CountingQueryTools]:
    real = services.query_tools
    tools = CountingQueryTools(
        real.db, real.rows, real.vectors, real.embedder, row_cap=real.row_cap, limits=Limits(seconds=5)
    )
    tools.prepared = []
    yield tools
    await tools.close()


async def test_a_one_query_question_checks_access_once_and_prepares_its_query_once(
    services: Services, world: World, counting: CountingQueryTools, chat_model: ScriptedChatModel
) -> None:
    chat_model.script += [QueryDraft(query=COUNT)]
    access_reads: list[str] = []

    def seen(_conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        if "grants" in statement:  # the access rule's one SQL (`storage.access`)
            access_reads.append(statement)

    engine = services.db.engine.sync_engine
    event.listen(engine, "before_cursor_execute", seen)
    try:
        runs = Runs(dataclasses.replace(services, queries=counting))
        run = await runs.start_nl2ql(AskRequest(world.alice, world.sales, "How many orders are there?"))
        events = [e async for e in run.events()]
    finally:
        event.remove(engine, "before_cursor_execute", seen)

    assert events == [
        QueryGenerated(query=COUNT, reasoning="written by the query model", attempts=1, model_query=COUNT),
        RowsReady(query=COUNT, rows=[{"n": 5, "__metadata": {"dataset": ORDERS}}]),
    ]
    assert len(access_reads) == 1
    assert counting.prepared == [COUNT]
