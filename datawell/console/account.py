"""Signing in and out, and the signed-in user's own tokens."""

from __future__ import annotations

from datetime import UTC, timedelta

import jwt
from starlette.requests import Request
from starlette.responses import Response

from datawell.console.pages import Failure, form, redirect, refused, render, signed_in
from datawell.console.session import (
    SESSION_DESCRIPTION,
    SESSION_TTL,
    Session,
    csrf_submitted,
    current_session,
    end_session,
    start_session,
)
from datawell.errors import DatawellError, InvalidInput, NotFound, SubError
from datawell.services import Services
from datawell.storage.tables import Token, utcnow
from datawell.storage.users import list_tokens, revoke_token

MAX_TOKEN_DAYS = 3650


def _next(value: str | None) -> str:
    """Only a path of this site: never an open redirect."""
    return value if value and value.startswith("/") and not value.startswith("//") else "/"


async def sign_in_page(request: Request) -> Response:
    session = await current_session(request)
    if session is not None:
        return redirect(_next(request.query_params.get("next")))
    return render(request, "signin.html", {"next": _next(request.query_params.get("next"))}, session=None)


async def sign_in(request: Request) -> Response:
    if not await csrf_submitted(request):
        return refused(request, None)
    values = await form(request)
    services: Services = request.state.services
    try:
        user = await services.tokens.authenticate(f"Bearer {values.get('token', '').strip()}")
        _, token = await services.tokens.issue(user.username, SESSION_TTL, SESSION_DESCRIPTION)
    except DatawellError as exc:
        context = {"failure": Failure(exc), "next": _next(values.get("next"))}
        return render(request, "signin.html", context, status=exc.mapping.http_status, session=None)
    response = redirect(_next(values.get("next")))
    start_session(request, response, token)
    return response


@signed_in
async def sign_out(request: Request, session: Session) -> Response:
    services: Services = request.state.services
    token_id = jwt.decode(session.token, options={"verify_signature": False})["jti"]
    async with services.db.session() as db:
        await revoke_token(db, token_id)
    response = redirect("/signin", "Signed out.")
    end_session(request, response)
    return response


def _state(token: Token) -> str:
    if token.revoked_at is not None:
        return "revoked"
    expires = token.expires_at if token.expires_at.tzinfo else token.expires_at.replace(tzinfo=UTC)
    return "expired" if expires <= utcnow() else "active"


async def _tokens_page(
    request: Request, session: Session, context: dict[str, object] | None = None, status: int = 200
) -> Response:
    async with request.state.services.db.session() as db:
        tokens = await list_tokens(db, session.user)
    listed = [{"id": t.id, "description": t.description, "created_at": t.created_at, "expires_at": t.expires_at,
               "state": _state(t)} for t in tokens]  # fmt: skip
    return render(request, "tokens.html", {"tokens": listed, **(context or {})}, status=status, session=session)


@signed_in
async def tokens(request: Request, session: Session) -> Response:
    return await _tokens_page(request, session)


@signed_in
async def issue_token(request: Request, session: Session) -> Response:
    values = await form(request)
    days = values.get("days", "")
    if not days.isdigit() or not 1 <= int(days) <= MAX_TOKEN_DAYS:
        problem = InvalidInput(
            "the token's validity is not a number of days",
            sub_errors=[SubError("invalid_days", f"days: give a whole number from 1 to {MAX_TOKEN_DAYS}")],
        )
        return await _tokens_page(request, session, {"failure": Failure(problem)}, 422)
    description = values.get("description", "")[:200]
    token, encoded = await request.state.services.tokens.issue(
        session.user.username, timedelta(days=int(days)), description
    )
    return await _tokens_page(request, session, {"issued": {"id": token.id, "encoded": encoded}})


@signed_in
async def revoke(request: Request, session: Session) -> Response:
    token_id = request.path_params["tokenId"]
    async with request.state.services.db.session() as db:
        owned = {t.id for t in await list_tokens(db, session.user)}
        # Another user's token is reported exactly like a missing one.
        if token_id not in owned:
            raise NotFound(f"no token with id {token_id!r}")
        await revoke_token(db, token_id)
    return redirect("/tokens", f"Token {token_id} revoked.")
