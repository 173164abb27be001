"""Ask: a chat page per namespace. The question is posted as a form (CSRF-checked); the answer
is a fragment whose htmx SSE connection (`GET …/stream?ticket=…`) runs the assistant and
streams each event as HTML: the plan, every step's query and rows, the answer as it is
written.

An EventSource can only GET, so the POST hands out a ticket: a short-lived JWT, signed with
a key derived from the token key, naming the user, the namespace, the question, the
conversation and the model. The stream runs only for a valid ticket of the signed-in user,
so a cross-site page can neither start a run nor replay someone's question."""

from __future__ import annotations

import hashlib
import hmac
import time
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import quote

import jwt
from sse_starlette import EventSourceResponse, ServerSentEvent
from starlette.requests import Request
from starlette.responses import Response

from datawell.console.pages import Failure, form, render, signed_in, templates
from datawell.console.session import Session
from datawell.errors import DatawellError, InvalidInput, SubError
from datawell.graphs.events import (
    AnswerDelta,
    AnswerReady,
    GraphEvent,
    PlanReady,
    RunFailed,
    RunQueued,
    RunStarted,
    StepFinished,
)
from datawell.llm.models import StageChoices
from datawell.runs import AskRequest, Runs
from datawell.services import Services
from datawell.storage.access import NamespaceRef, Permission, authorize
from datawell.storage.tables import new_id

TICKET_SECONDS = 60
TICKET_AUDIENCE = "datawell-console-ask"
MAX_QUESTION = 4000


def _ticket_key(services: Services) -> bytes:
    return hmac.new(services.tokens.secret.encode(), b"datawell console ask tickets", hashlib.sha256).digest()


async def _namespace(request: Request, session: Session) -> NamespaceRef:
    async with request.state.services.db.session() as db:
        return await authorize(
            db, session.user, request.path_params["owner"], request.path_params["namespace"], Permission.READ
        )


@signed_in
async def ask_page(request: Request, session: Session) -> Response:
    namespace = await _namespace(request, session)
    context = {
        "namespace": namespace,
        "models": request.state.services.settings.console_models,
        "conversation_id": request.query_params.get("conversation", ""),
    }
    return render(request, "ask.html", context, session=session)


@signed_in
async def ask(request: Request, session: Session) -> Response:
    """The new turn: the question and an element that streams its answer. A refusal is a turn
    too (htmx swaps only successful answers in)."""
    try:
        context = await _new_turn(request, session)
    except DatawellError as exc:
        return render(request, "ask_failed.html", {"failure": Failure(exc)}, session=session)
    return render(request, "ask_turn.html", context, session=session)


async def _new_turn(request: Request, session: Session) -> dict[str, str]:
    services: Services = request.state.services
    namespace = await _namespace(request, session)
    values = await form(request)
    question = values.get("question", "").strip()
    model = values.get("model", "")
    problems = []
    if not question or len(question) > MAX_QUESTION:
        problems.append(SubError("invalid_question", f"question: write 1 to {MAX_QUESTION} characters"))
    if model and model not in services.settings.console_models:
        problems.append(SubError("unknown_model", f"model: {model!r} is not offered here"))
    if problems:
        raise InvalidInput("the question cannot be asked", sub_errors=problems)
    conversation = values.get("conversationId", "")
    claims = {
        "aud": TICKET_AUDIENCE,
        "exp": int(time.time()) + TICKET_SECONDS,
        "sub": session.user.id,
        "ns": namespace.id,
        "q": question,
        "c": conversation or None,
        "new": None if conversation else new_id(),
        "m": model or None,
    }
    ticket = jwt.encode(claims, _ticket_key(services), algorithm="HS256")
    base = f"/ask/{quote(namespace.owner, safe='')}/{quote(namespace.name, safe='')}"
    return {"turn": new_id()[:8], "question": question, "stream": f"{base}/stream?ticket={quote(ticket)}"}


@signed_in
async def stream(request: Request, session: Session) -> Response:
    services: Services = request.state.services
    namespace = await _namespace(request, session)
    try:
        claims = jwt.decode(
            request.query_params.get("ticket", ""),
            _ticket_key(services),
            algorithms=["HS256"],
            audience=TICKET_AUDIENCE,
        )
    except jwt.PyJWTError:
        claims = None
    if claims is None or claims["sub"] != session.user.id or claims["ns"] != namespace.id:
        events: AsyncIterator[ServerSentEvent] = _refusal("this question's link has expired: ask it again")
    else:
        request_ = AskRequest(
            user=session.user,
            namespace=namespace,
            question=claims["q"],
            choices=StageChoices.named(claims["m"]),
            conversation_id=claims["c"],
            new_conversation_id=claims["new"],
        )
        events = _rendered(request_, request.state.runs)
    return EventSourceResponse(events, ping=15)


async def _refusal(message: str) -> AsyncIterator[ServerSentEvent]:
    yield _event("failed", "failed", message=message)
    yield ServerSentEvent(data="end", event="end")


async def _rendered(ask_request: AskRequest, runs: Runs) -> AsyncIterator[ServerSentEvent]:
    try:
        run = await runs.start_assistant(ask_request)
    except DatawellError as exc:  # the checks before the run: access, the conversation
        yield _event("failed", "failed", message=exc.message)
    else:
        async for event in run.events():  # a failure during the run is its RunFailed event
            rendered = _render(event)
            if rendered is not None:
                yield rendered
        if run.run_id:  # recorded once the events end
            yield _event("run", "run_link", run_id=run.run_id)
    yield ServerSentEvent(data="end", event="end")


def _render(event: GraphEvent) -> ServerSentEvent | None:
    match event:
        case RunQueued():
            return _event("queued", "queued", position=event.position)
        case RunStarted():
            return _event("run-started", "conversation", conversation_id=event.conversation_id or "")
        case PlanReady():
            return _event("plan", "plan", text=event.text, steps=event.steps)
        case StepFinished():
            return _event("step", "step", step=event)
        case AnswerDelta():
            return ServerSentEvent(data=event.text.replace("&", "&amp;").replace("<", "&lt;"), event="answer-delta")
        case AnswerReady():
            return _event("answer", "answer", text=event.text)
        case RunFailed():
            return _event("failed", "failed", message=event.message)
    return None


def _event(name: str, macro: str, **values: Any) -> ServerSentEvent:
    module: Any = templates.env.get_template("ask_events.html").module
    return ServerSentEvent(data=str(getattr(module, macro)(**values)), event=name)
