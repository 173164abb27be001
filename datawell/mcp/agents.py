"""The agent tools: `ask_nl2ql` (question → query → rows) and `ask_assistant` (plan → a query
per step → answer). They start the same runs as A2A and REST (`datawell.runs`: every check
happens at the start, and raises), and turn the run's events into MCP progress notifications
and one result."""

from __future__ import annotations

from contextlib import aclosing

from mcp_types import CallToolResult
from pydantic import Field

from datawell.errors import InternalError
from datawell.graphs import events
from datawell.llm.models import StageChoices
from datawell.mcp.calls import Call, ModelArguments, ToolSpec, readable_namespace
from datawell.mcp.datasets import QueryOutput
from datawell.mcp.results import WireModel, failure_result, tool_result
from datawell.runs import AskRequest


class AskArguments(ModelArguments):
    question: str = Field(min_length=1, description="The question, in plain language")


class AssistantArguments(AskArguments):
    conversation_id: str | None = Field(
        None, description="Continue this conversation (from an earlier answer's `conversationId`)"
    )


class RuleChange(WireModel):
    """A rewrite rule of the service that changed the query (docs/query-rewrites.md)."""

    rule: str = Field(description="The rule's name")
    before: str = Field(description="The query before the rule")
    after: str = Field(description="The query after the rule")
    reason: str = Field(description="Why, in words")


class AskedOutput(QueryOutput):
    model_query: str = Field("", description="The query as written, before the service's rewrite rules")
    changes: list[RuleChange] = Field(default_factory=list, description="Each rule that changed it, in order")


class StepResult(WireModel, events.StepOutcome):
    """A step of the assistant's answer, as the graph's event says it (without its reasoning)."""


class AssistantOutput(WireModel):
    conversation_id: str = Field(description="Send it back as `conversationId` to ask a follow-up")
    plan: list[str]
    steps: list[StepResult]
    answer: str


async def ask_request(call: Call, arguments: AskArguments, conversation_id: str | None = None) -> AskRequest:
    return AskRequest(
        user=call.user,
        namespace=await readable_namespace(call, arguments.namespace),
        question=arguments.question,
        choices=StageChoices.named(arguments.model or None, arguments.provider or None),
        conversation_id=conversation_id,
    )


async def ask_nl2ql(call: Call, arguments: AskArguments) -> CallToolResult:
    run = await call.runs.start_nl2ql(await ask_request(call, arguments))
    written = events.QueryGenerated(query="")
    async with aclosing(run.events()) as stream:
        async for event in stream:
            match event:
                case events.RunQueued():
                    await call.progress(0, 2, queued_text(event))
                case events.QueryGenerated():
                    written = event
                    await call.progress(1, 2, f"query: {event.query}")
                case events.RowsReady():
                    await call.progress(2, 2, f"{len(event.rows)} rows")
                    output = AskedOutput(
                        query=event.query,
                        rows=event.rows,
                        truncated=event.truncated,
                        model_query=written.model_query,
                        changes=[RuleChange(**change) for change in written.changes],
                    )
                    return tool_result(output)
                case events.RunFailed():
                    return failure_result(event.error)
    return failure_result(InternalError("the run ended without rows"))


async def ask_assistant(call: Call, arguments: AssistantArguments) -> CallToolResult:
    run = await call.runs.start_assistant(await ask_request(call, arguments, arguments.conversation_id))
    conversation_id = run.conversation_id or ""
    plan: list[str] = []
    steps: list[StepResult] = []
    async with aclosing(run.events()) as stream:
        async for event in stream:
            # Progress counts the plan, each step and the answer (a started step counts half, as
            # progress must grow with every notification); the total is known once planned.
            total = float(len(plan) + 2) if plan else None
            match event:
                case events.RunQueued():
                    await call.progress(0, None, queued_text(event))
                case events.RunStarted():
                    await call.progress(0, None, "planning")
                case events.PlanReady():
                    plan = event.steps
                    await call.progress(1, len(plan) + 2, f"plan: {len(plan)} step(s)")
                case events.StepStarted():
                    await call.progress(event.index + 0.5, total, f"step {event.index}: {event.instruction}")
                case events.StepFinished():
                    steps.append(StepResult.model_validate(event, from_attributes=True))
                    await call.progress(event.index + 1, total, f"step {event.index}: {len(event.rows)} rows")
                case events.AnswerReady():
                    await call.progress(len(plan) + 2, len(plan) + 2, "answered")
                    output = AssistantOutput(conversation_id=conversation_id, plan=plan, steps=steps, answer=event.text)
                    return tool_result(output, lead=event.text)
                case events.RunFailed():
                    return failure_result(event.error)
    return failure_result(InternalError("the run ended without an answer"))


def queued_text(event: events.RunQueued) -> str:
    return f"waiting for the model: number {event.position} in the queue"


TOOLS = (
    ToolSpec(
        name="ask_nl2ql",
        title="Question to query",
        description=(
            "Turns a plain-language question into a read-only query over the namespace's datasets, runs it, "
            "and returns the query and its rows."
        ),
        arguments=AskArguments,
        output=AskedOutput,
        handler=ask_nl2ql,
        idempotent=False,
    ),
    ToolSpec(
        name="ask_assistant",
        title="Answer from data",
        description=(
            "Answers a question from the namespace's datasets: plans steps, runs a query per step, and answers "
            "from the rows. Reports progress as it plans and runs steps. Pass the returned `conversationId` to "
            "ask a follow-up in the same conversation."
        ),
        arguments=AssistantArguments,
        output=AssistantOutput,
        handler=ask_assistant,
        idempotent=False,
    ),
)
