"""Question answering over REST: `POST /query/autorag` runs the assistant graph and renders its
events either as one JSON body or, with `Accept: text/event-stream`, as Server-Sent Events.

This module only renders: the graph run (`datawell.graphs.runs.run_assistant`) decides the
plan, the queries and the answer."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import aclosing
from typing import Any, cast

from pydantic import Field
from sse_starlette import EventSourceResponse, ServerSentEvent
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.types import Receive, Scope, Send

from datawell.api.errors import error_response
from datawell.api.routing import Router
from datawell.api.schemas import ApiModel, ErrorResponse
from datawell.errors import DatawellError
from datawell.graphs import runs
from datawell.graphs.events import (
    AnswerDelta,
    AnswerReady,
    GraphEvent,
    PlanReady,
    RunFailed,
    RunFinished,
    RunStarted,
    StepFinished,
)
from datawell.graphs.runs import AskRequest, CallerContext
from datawell.llm.models import ModelChoice, StageChoices
from datawell.storage.access import Permission, authorize
from datawell.storage.tables import User

log = logging.getLogger(__name__)
router = Router("query")

EVENT_STREAM = "text/event-stream"
SSE_EVENTS = """Server-Sent Events, one JSON object in each `data:` line, in this order:
`run-started` `{conversationId}` (always first; keep the id to continue the conversation),
`plan` `{text, steps}` (the step instructions),
per step `step` `{index, instruction, query, reasoning, data, error}` (`data` = the result rows; `error` is set when the step's query failed),
`answer-delta` `{text}` (answer tokens, when the model streams),
`answer` `{text}` (the whole answer),
`run-finished` `{conversationId}`.
A run that fails after it started ends with `error` (an ErrorResponse) instead of `run-finished`.
Errors found before the run starts (401, 403, 404, 422) are plain ErrorResponses, not streams.
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
        None, description="Owner username of the namespace; defaults to the caller", min_length=1
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
            stage: ModelChoice(choice.model, choice.provider)
            for stage in StageModels.model_fields
            if self.models is not None and (choice := getattr(self.models, stage)) is not None
        }
        return StageChoices(default=ModelChoice(self.model, self.provider), per_stage=per_stage)


class AutoRagStep(ApiModel):
    instruction: str
    query: str
    reasoning: str
    data: list[dict[str, Any]] = Field(description="The step's result rows")


class AutoRagResponse(ApiModel):
    response: str = Field(description="The answer")
    steps: list[AutoRagStep]
    conversation_id: str


@router.operation(
    "POST",
    "/query/autorag",
    summary="Answer a question from the data the caller can read",
    body=AutoRagRequest,
    response=AutoRagResponse,
    errors=(403, 404, 415, 422, 502),
    streams={EVENT_STREAM: SSE_EVENTS},
    headers=(("Accept", f"`application/json` (default) or `{EVENT_STREAM}` for a stream of run events"),),
)
async def autorag(request: Request, user: User, body: AutoRagRequest) -> Response:
    """Plans the steps to answer the question, runs a query per step, and answers from the rows.
    Returns `{response, steps, conversationId}`, or a stream of run events with `Accept: text/event-stream`."""
    ask = await ask_request(request, user, body)
    events = RunInTask(runs.run_assistant(request.state.services, ask))
    # Pull the first event now: a run raises NotFound/Forbidden before it starts, and the
    # client must get that as an ErrorResponse, not as a 200 stream.
    try:
        first = await anext(events)
    except BaseException:
        await events.aclose()
        raise
    if wants_stream(request):
        return RunStream(first, events)
    return await json_answer(first, events)


async def ask_request(request: Request, user: User, body: AutoRagRequest) -> AskRequest:
    async with request.state.services.db.session() as session:
        namespace = await authorize(session, user, body.username or user.username, body.namespace, Permission.READ)
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


class RunInTask:
    """Iterates a run inside one task of its own and hands its events over a queue.

    The request task reads the first event and the response task (sse-starlette's) reads
    the rest; a run that keeps a timeout or cancel scope open across its yields must not
    be resumed from two tasks, so it never is. `aclose` cancels the run."""

    def __init__(self, events: AsyncIterator[GraphEvent]) -> None:
        self._queue: asyncio.Queue[GraphEvent | Exception | None] = asyncio.Queue(maxsize=16)
        # The runners are async generators (see datawell.graphs.runs); closing one on
        # cancellation runs its cleanup now rather than at garbage collection.
        self._task = asyncio.create_task(self._pump(cast(AsyncGenerator[GraphEvent, None], events)))

    async def _pump(self, events: AsyncGenerator[GraphEvent, None]) -> None:
        async with aclosing(events):
            try:
                async for event in events:
                    await self._queue.put(event)
            except Exception as exc:
                await self._queue.put(exc)
            else:
                await self._queue.put(None)

    def __aiter__(self) -> RunInTask:
        return self

    async def __anext__(self) -> GraphEvent:
        item = await self._queue.get()
        if item is None:
            raise StopAsyncIteration
        if isinstance(item, Exception):
            raise item
        return item

    async def aclose(self) -> None:
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task


def wants_stream(request: Request) -> bool:
    """True when the Accept header asks for an event stream (and does not refuse it with q=0)."""
    for item in request.headers.get("accept", "").split(","):
        media_type, *params = (part.strip() for part in item.split(";"))
        if media_type.lower() == EVENT_STREAM:
            return not any(p.replace(" ", "") in ("q=0", "q=0.0", "q=0.00", "q=0.000") for p in params)
    return False


async def json_answer(first: GraphEvent, rest: RunInTask) -> Response:
    conversation_id = ""
    answer = ""
    steps: list[AutoRagStep] = []
    async with aclosing(rest):
        event: GraphEvent | None = first
        while event is not None:
            match event:
                case RunStarted():
                    conversation_id = event.conversation_id or ""
                case StepFinished():
                    steps.append(
                        AutoRagStep(
                            instruction=event.instruction, query=event.query, reasoning=event.reasoning, data=event.rows
                        )
                    )
                case AnswerReady():
                    answer = event.text
                case RunFailed():
                    return _failure(event)
            event = await anext(rest, None)
    body = AutoRagResponse(response=answer, steps=steps, conversation_id=conversation_id)
    return JSONResponse(body.model_dump(mode="json", by_alias=True))


class RunStream(EventSourceResponse):
    """The run's events as SSE. However the response ends (the run finished, the client went
    away and sse-starlette cancelled the stream, or it never started), the run is closed, which
    cancels the graph if it is still running."""

    def __init__(self, first: GraphEvent, run: RunInTask) -> None:
        super().__init__(sse_events(first, run), ping=15)
        self.run = run

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            await self.run.aclose()


async def sse_events(first: GraphEvent, rest: RunInTask) -> AsyncIterator[ServerSentEvent]:
    conversation_id = ""
    try:
        event: GraphEvent | None = first
        while event is not None:
            if isinstance(event, RunStarted):
                conversation_id = event.conversation_id or ""
            rendered = render(event, conversation_id)
            if rendered is not None:
                yield rendered
            if isinstance(event, RunFailed):
                return
            event = await anext(rest, None)
    except DatawellError as exc:
        yield _sse("error", _error_body(exc.error_code, exc.message, exc.detail))
    except Exception:
        log.exception("the assistant run failed")
        yield _sse("error", _error_body("INTERNAL_ERROR", "the run failed; it has been logged"))


def render(event: GraphEvent, conversation_id: str) -> ServerSentEvent | None:
    """The SSE event for one graph event; None for events REST does not show (StepStarted)."""
    match event:
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
            }
            return _sse("step", step)
        case AnswerDelta():
            return _sse("answer-delta", {"text": event.text})
        case AnswerReady():
            return _sse("answer", {"text": event.text})
        case RunFinished():
            return _sse("run-finished", {"conversationId": conversation_id})
        case RunFailed():
            return _sse("error", _error_body(event.error_code, event.message))
    return None


def _sse(name: str, data: dict[str, Any]) -> ServerSentEvent:
    return ServerSentEvent(data=_json(data), event=name)


def _json(data: dict[str, Any]) -> str:
    return json.dumps(data, ensure_ascii=False, default=str, separators=(",", ":"))


def _error_body(code: str, message: str, detail: str = "") -> dict[str, Any]:
    return ErrorResponse(error_code=code, message=message, error_message=detail).model_dump()


def _failure(event: RunFailed) -> Response:
    return error_response(_status_codes(DatawellError).get(event.error_code, 500), event.error_code, event.message)


def _status_codes(cls: type[DatawellError]) -> dict[str, int]:
    """error_code -> HTTP status over the exception tree, so a run failure answers like the raised error would."""
    found = {cls.error_code: cls.status_code}
    for sub in cls.__subclasses__():
        found.update(_status_codes(sub))
    return found
