"""Question answering over REST: `POST /query/autorag` runs the assistant graph and renders its
events either as one JSON body or, with `Accept: text/event-stream`, as Server-Sent Events.

This module only renders: the assistant run (`datawell.runs.Runs.start_assistant`) decides the
plan, the queries and the answer."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import aclosing
from typing import Any

from pydantic import Field
from sse_starlette import EventSourceResponse, ServerSentEvent
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from datawell.api.errors import error_body
from datawell.api.routing import Context, Router, named_user
from datawell.api.schemas import ApiModel
from datawell.client.models import AutoRagAnswer as AutoRagResponse
from datawell.client.models import AutoRagStep, QueryChange
from datawell.graphs.assistant.state import CallerContext
from datawell.graphs.events import (
    AnswerDelta,
    AnswerReady,
    GraphEvent,
    PlanReady,
    RunFailed,
    RunFinished,
    RunQueued,
    RunStarted,
    StepFinished,
)
from datawell.llm.models import StageChoices
from datawell.runs import AskRequest, Run, Runs
from datawell.storage.access import namespace_named
from datawell.storage.tables import User
from datawell.storage.users import SELF

router = Router("query")

EVENT_STREAM = "text/event-stream"
SSE_EVENTS = """Server-Sent Events, one JSON object in each `data:` line, in this order:
`queued` `{position}` (only while the run waits for the model, before anything else: its place, 1 = next; again each time it changes),
`run-started` `{conversationId}` (first once the run has a slot; keep the id to continue the conversation),
`plan` `{text, steps}` (the step instructions),
per step `step` `{index, instruction, query, reasoning, data, error, modelQuery, changes}` (`data` = the result rows; `error` is set when the step's query failed; `modelQuery` is the query as written and `changes` each rewrite rule of the service that changed it, `{rule, before, after, reason}`),
`answer-delta` `{text}` (pieces of the answer, sent once the service checked its numbers against the rows: never text the check has not passed; they add up to the answer),
`answer` `{text}` (the whole answer),
`run-finished` `{conversationId}`.
A run that fails after it started ends with `error` (an ErrorResponse) instead of `run-finished`.
Errors found before the run starts (401, 403, 404, 422; 502 when a stage has no usable model; 503 with `Retry-After` when the model's queue is full) are plain ErrorResponses, not streams.
Closing the connection cancels the run."""


class StageModel(ApiModel):
    model: str | None = Field(None, description="Model name, e.g. `gpt-4o-mini` or `openai/gpt-4o-mini`")
    provider: str | None = Field(None, description="Provider, e.g. `openai`")


class StageModels(ApiModel):
    """Per-stage overrides; each wins over `model`/`provider` for its stage."""

    plan: StageModel | None = None
    query: StageModel | None = None
    answer: StageModel | None = None


class AutoRagRequest(ApiModel):
    username: str | None = Field(
        None, description="Owner username of the namespace; `self` or none: the caller", min_length=1
    )
    namespace: str = Field(min_length=1, description="Namespace to answer from")
    query: str = Field(min_length=1, description="The question")
    helper_prompt: str | None = Field(None, description="Extra instructions appended to the assistant's own")
    model: str | None = Field(None, description="Model override for every stage")
    provider: str | None = Field(None, description="Provider override for every stage")
    models: StageModels | None = None
    conversation_id: str | None = Field(
        None, description="Existing conversation to continue; omit to start one (its id comes back)"
    )
    web_search: bool | None = Field(None, description="`false` disables web search for this request")
    caller_context: CallerContext | None = Field(
        None, description="Caller-asserted background for this turn only; never widens data access"
    )

    def choices(self) -> StageChoices:
        per_stage = {
            stage: (choice.model, choice.provider)
            for stage in StageModels.model_fields
            if self.models is not None and (choice := getattr(self.models, stage)) is not None
        }
        return StageChoices.named(self.model, self.provider, per_stage)


@router.post(
    "/query/autorag",
    AutoRagResponse,
    body=AutoRagRequest,
    errors=(403, 404, 502, 503),
    streams={EVENT_STREAM: SSE_EVENTS},
    headers=(("Accept", f"`application/json` (default) or `{EVENT_STREAM}` for a stream of run events"),),
)
async def autorag(request: Request, ctx: Context, user: User, body: AutoRagRequest) -> Response:
    """Answer a question from the data the caller can read

    Plans the steps to answer the question, runs a query per step, and answers from the rows.
    Returns `{response, steps, conversationId}`, or a stream of run events with `Accept: text/event-stream`."""
    runs = ctx.runs
    # Checks that fail raise here, before anything streams: the client gets an ErrorResponse.
    run = await runs.start_assistant(await assistant_request(runs, user, body))
    # Where the run's record will be (GET /api/v1/runs/{id}), before its first event.
    headers = {RUN_HEADER: run.run_id} if run.run_id else None
    if wants_stream(request):
        return EventSourceResponse(sse_events(run), ping=15, headers=headers)
    response = await json_answer(run)
    response.headers.update(headers or {})
    return response


RUN_HEADER = "Datawell-Run-Id"


async def assistant_request(runs: Runs, user: User, body: AutoRagRequest) -> AskRequest:
    """The assistant run an AutoRAG body asks for (this route's and the DataLinks SDK's
    `/query/ask`), in the namespace it names (404 when there is none)."""
    async with runs.services.db.session() as session:
        namespace = await namespace_named(session, named_user(body.username or SELF, user), body.namespace)
    return AskRequest(
        user=user,
        namespace=namespace,
        question=body.query,
        choices=body.choices(),
        conversation_id=body.conversation_id,
        helper_prompt=body.helper_prompt,
        web_search=body.web_search,
        caller_context=body.caller_context,
    )


def wants_stream(request: Request) -> bool:
    """True when the Accept header asks for an event stream (and does not refuse it with q=0)."""
    for item in request.headers.get("accept", "").split(","):
        media_type, *params = (part.strip() for part in item.split(";"))
        if media_type.lower() == EVENT_STREAM:
            return not any(p.replace(" ", "") in ("q=0", "q=0.0", "q=0.00", "q=0.000") for p in params)
    return False


async def json_answer(run: Run) -> Response:
    """The whole run as one body; a failed run answers like the error it failed on."""
    result = await run.result()
    if result.failure is not None:
        raise result.failure.error
    steps = [
        AutoRagStep(
            instruction=step.instruction,
            query=step.query,
            reasoning=step.reasoning,
            data=step.rows,
            model_query=step.model_query,
            changes=[QueryChange(**change) for change in step.changes],
        )
        for step in result.steps
    ]
    answer = result.answer.text if result.answer is not None else ""
    body = AutoRagResponse(response=answer, steps=steps, conversation_id=run.conversation_id or "")
    return JSONResponse(body.model_dump(mode="json", by_alias=True))


async def sse_events(run: Run) -> AsyncIterator[ServerSentEvent]:
    """The run's events as SSE. sse-starlette closes this generator however the response ends
    (finished, or the client went away), and closing it stops the run."""
    async with aclosing(run.events()) as events:
        async for event in events:
            rendered = render(event, run.conversation_id or "")
            if rendered is not None:
                yield rendered


def render(event: GraphEvent, conversation_id: str) -> ServerSentEvent | None:
    """The SSE event for one graph event; None for events REST does not show (StepStarted)."""
    match event:
        case RunQueued():
            return _sse("queued", {"position": event.position})
        case RunStarted():
            return _sse("run-started", {"conversationId": event.conversation_id})
        case PlanReady():
            return _sse("plan", {"text": event.text, "steps": event.steps})
        case StepFinished():
            step = {
                "index": event.index,
                "instruction": event.instruction,
                "query": event.query,
                "reasoning": event.reasoning,
                "data": event.rows,
                "error": event.error,
                "modelQuery": event.model_query,  # issue 47, beside SPEC's fields
                "changes": event.changes,
            }
            return _sse("step", step)
        case AnswerDelta():
            return _sse("answer-delta", {"text": event.text})
        case AnswerReady():
            return _sse("answer", {"text": event.text})
        case RunFinished():
            return _sse("run-finished", {"conversationId": conversation_id})
        case RunFailed():
            return _sse("error", error_body(event.error))
    return None


def _sse(name: str, data: dict[str, Any]) -> ServerSentEvent:
    return ServerSentEvent(data=json.dumps(data, ensure_ascii=False, default=str, separators=(",", ":")), event=name)
