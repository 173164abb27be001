"""`Runs` whose assistant and nl2ql runs yield the event sequences `datawell/runs.py` promises
instead of running the graphs, so the REST and A2A surfaces are tested on their own. Only the
events are canned: the checks before a run (access, conversation ownership) are the real ones.
The app gets it through `create_app(..., runs=FakeRuns().bind)`."""

from __future__ import annotations

import asyncio
import dataclasses
from dataclasses import dataclass, field

from datawell.errors import ModelError, QueryError
from datawell.graphs.events import (
    AnswerDelta,
    AnswerReady,
    PlanReady,
    QueryGenerated,
    RowsReady,
    RunFailed,
    RunFinished,
    RunStarted,
    StepFinished,
    StepStarted,
)
from datawell.runs import AskRequest, Events, Run, Runs
from datawell.services import Services
from datawell.storage.access import Caller

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
# issue 47: the first step's query as the model wrote it, and the rule that changed it
WRITTEN = f"{QUERIES[0]} LIMIT 10"
CHANGES = [
    {
        "rule": "drop_unasked_limit",
        "before": WRITTEN,
        "after": QUERIES[0],
        "reason": "dropped LIMIT 10: the question asks for every row",
    }
]
ANSWER = "Alice placed the most orders (2)."
NL2QL_QUERY = "SELECT customer, total FROM orders WHERE total > 100"
NL2QL_WRITTEN = f"{NL2QL_QUERY} LIMIT 10"
NL2QL_CHANGES = [{**CHANGES[0], "before": NL2QL_WRITTEN, "after": NL2QL_QUERY}]
NL2QL_ROWS = [{"customer": "alice", "total": 120, "__metadata": {"score": 0.8, "dataset": "alice/sales/orders"}}]


@dataclass
class FakeRuns:
    """What the canned runs do and saw; a test changes it between requests."""

    requests: list[AskRequest] = field(default_factory=list)  # runs that passed their checks
    # conversation id -> (who asked, the questions asked): what ran, not who may continue it
    conversations: dict[str, tuple[str, list[str]]] = field(default_factory=dict)
    fail: str | None = None  # "event": RunFailed after the plan; "raise": an exception mid-run
    hold: asyncio.Event | None = None  # when set, the assistant waits here after the plan
    closed: asyncio.Event = field(default_factory=asyncio.Event)  # set when a run's generator is closed early
    ignore_new_conversation_id: bool = False  # start new conversations under an id of the run's own

    def bind(self, services: Services) -> CannedRuns:
        """The runs the app uses (`Overrides.runs`)."""
        return CannedRuns(services, self)


class CannedRuns(Runs):
    def __init__(self, services: Services, script: FakeRuns) -> None:
        super().__init__(services)
        self.script = script

    async def start_nl2ql(self, request: AskRequest) -> Run:
        run = await super().start_nl2ql(request)
        self.script.requests.append(request)
        return run

    async def start_assistant(self, request: AskRequest) -> Run:
        if self.script.ignore_new_conversation_id:
            request = dataclasses.replace(request, new_conversation_id=None)
        run = await super().start_assistant(request)
        self.script.requests.append(request)
        return run

    async def assistant_events(self, request: AskRequest, caller: Caller, conversation_id: str) -> Events:
        script = self.script
        _, questions = script.conversations.setdefault(conversation_id, (request.user.username, []))
        earlier = list(questions)
        questions.append(request.question)
        finished = False
        try:
            yield RunStarted(conversation_id=conversation_id)
            yield PlanReady(text="Two steps: count, then rank.", steps=PLAN)
            if script.hold is not None:
                await script.hold.wait()
            if script.fail == "event":
                yield RunFailed(error=ModelError("the plan model returned nothing usable"))
                finished = True
                return
            for index, (instruction, query, rows) in enumerate(zip(PLAN, QUERIES, STEP_ROWS, strict=True), 1):
                yield StepStarted(index=index, instruction=instruction)
                yield StepFinished(
                    index=index,
                    instruction=instruction,
                    query=query,
                    reasoning=f"reasoning {index}",
                    rows=rows,
                    model_query=WRITTEN if index == 1 else query,
                    changes=CHANGES if index == 1 else [],
                )
            if script.fail == "raise":
                raise ModelError("the answer model timed out")
            answer = ANSWER + (f" (after: {earlier[-1]})" if earlier else "")
            for token in answer.split(" "):
                yield AnswerDelta(text=token + " ")
            yield AnswerReady(text=answer)
            yield RunFinished()
            finished = True
        finally:
            if not finished:
                script.closed.set()

    async def nl2ql_events(self, request: AskRequest, caller: Caller) -> Events:
        yield QueryGenerated(
            query=NL2QL_QUERY, reasoning="totals over 100", model_query=NL2QL_WRITTEN, changes=NL2QL_CHANGES
        )
        if self.script.fail == "event":
            yield RunFailed(error=QueryError("no column named 'totl'"))
            return
        if self.script.fail == "raise":
            raise RuntimeError("connection reset by the row store")
        yield RowsReady(query=NL2QL_QUERY, rows=NL2QL_ROWS)
