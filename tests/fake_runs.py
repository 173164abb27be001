"""Stand-ins for `datawell.graphs.runs.run_assistant` / `run_nl2ql` that yield the event
sequences the CONTRACT in `datawell/graphs/runs.py` promises, so the REST and A2A surfaces are
tested on their own. They keep conversations like the real runner: owned by the user who
started them, NotFound for anyone else."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import pytest

from datawell.errors import ModelError, NotFound
from datawell.graphs import runs
from datawell.graphs.events import (
    AnswerDelta,
    AnswerReady,
    GraphEvent,
    PlanReady,
    QueryGenerated,
    RowsReady,
    RunFailed,
    RunFinished,
    RunStarted,
    StepFinished,
    StepStarted,
)
from datawell.graphs.runs import AskRequest
from datawell.services import Services

PLAN = ["Count the orders per customer", "Find the customer with the most orders"]
QUERIES = [
    "SELECT customer, COUNT(*) AS orders FROM orders GROUP BY customer",
    "SELECT customer FROM orders GROUP BY customer ORDER BY COUNT(*) DESC LIMIT 1",
]
STEP_ROWS = [
    [
        {"customer": "alice", "orders": 2, "__metadata": {"score": 0.91, "dataset": "alice/sales/orders"}},
        {"customer": "carol", "orders": 1, "__metadata": {"score": 0.42, "dataset": "alice/sales/orders"}},
    ],
    [{"customer": "alice", "__metadata": {"score": 0.91, "dataset": "alice/sales/orders"}}],
]
ANSWER = "Alice placed the most orders (2)."
NL2QL_QUERY = "SELECT customer, total FROM orders WHERE total > 100"
NL2QL_ROWS = [{"customer": "alice", "total": 120, "__metadata": {"score": 0.8, "dataset": "alice/sales/orders"}}]


@dataclass
class FakeRuns:
    requests: list[AskRequest] = field(default_factory=list)
    conversations: dict[str, tuple[str, list[str]]] = field(default_factory=dict)  # id -> (owner, questions)
    fail: str | None = None  # "event": RunFailed after the plan; "raise": an exception mid-run
    hold: asyncio.Event | None = None  # when set, the assistant waits here after the plan
    closed: asyncio.Event = field(default_factory=asyncio.Event)  # set when a run's generator is closed early

    def install(self, monkeypatch: pytest.MonkeyPatch) -> FakeRuns:
        monkeypatch.setattr(runs, "run_assistant", self.run_assistant)
        monkeypatch.setattr(runs, "run_nl2ql", self.run_nl2ql)
        return self

    async def run_assistant(self, services: Services, request: AskRequest) -> AsyncIterator[GraphEvent]:
        self.requests.append(request)
        if request.conversation_id is not None:
            known = self.conversations.get(request.conversation_id)
            if known is None or known[0] != request.user.username:
                raise NotFound(f"conversation {request.conversation_id} does not exist")
            conversation_id = request.conversation_id
        else:
            conversation_id = request.new_conversation_id or str(uuid.uuid4())
            self.conversations[conversation_id] = (request.user.username, [])
        earlier = list(self.conversations[conversation_id][1])
        self.conversations[conversation_id][1].append(request.question)
        finished = False
        try:
            yield RunStarted(conversation_id=conversation_id)
            yield PlanReady(text="Two steps: count, then rank.", steps=PLAN)
            if self.hold is not None:
                await self.hold.wait()
            if self.fail == "event":
                yield RunFailed(error_code="MODEL_ERROR", message="the plan model returned nothing usable")
                finished = True
                return
            for index, (instruction, query, rows) in enumerate(zip(PLAN, QUERIES, STEP_ROWS, strict=True), 1):
                yield StepStarted(index=index, instruction=instruction)
                yield StepFinished(
                    index=index, instruction=instruction, query=query, reasoning=f"reasoning {index}", rows=rows
                )
            if self.fail == "raise":
                raise ModelError("the answer model timed out")
            answer = ANSWER + (f" (after: {earlier[-1]})" if earlier else "")
            for token in answer.split(" "):
                yield AnswerDelta(text=token + " ")
            yield AnswerReady(text=answer)
            yield RunFinished()
            finished = True
        finally:
            if not finished:
                self.closed.set()

    async def run_nl2ql(self, services: Services, request: AskRequest) -> AsyncIterator[GraphEvent]:
        self.requests.append(request)
        yield QueryGenerated(query=NL2QL_QUERY, reasoning="totals over 100")
        if self.fail == "event":
            yield RunFailed(error_code="QUERY_ERROR", message="no column named 'totl'")
            return
        if self.fail == "raise":
            raise RuntimeError("connection reset by the row store")
        yield RowsReady(query=NL2QL_QUERY, rows=NL2QL_ROWS)
