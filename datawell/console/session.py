"""Console sessions and CSRF protection.

Signing in exchanges a pasted bearer token for a session token of its own (a normal token,
described "console session", revoked at sign-out), kept in an HttpOnly, SameSite=Lax cookie
that is Secure over https. Every page checks it with the same `TokenAuthority` as the API, so
revoking or expiring the token ends the session.

CSRF: signed double submit. Every visitor gets a random `datawell_csrf` cookie; each form
carries HMAC(key, cookie) in a hidden field (htmx and the upload script send it as the
`X-CSRF-Token` header). Another site can neither read the cookie nor compute the HMAC, and
SameSite=Lax keeps the session cookie off its cross-site POSTs anyway. The cookie is renewed
at sign-in, so a token planted before sign-in is worthless afterwards.

`ConsoleCookies` also lets the browser call the REST API with the session: a request under
/api/v1 that has no Authorization header but a session cookie gets `Bearer <session token>`
added, for unsafe methods only with a valid `X-CSRF-Token`. Without one the API answers 401
as it would to any request without a token."""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass
from datetime import timedelta
from http.cookies import SimpleCookie

from starlette.datastructures import MutableHeaders
from starlette.requests import Request, cookie_parser
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from datawell.errors import DatawellError
from datawell.services import Services
from datawell.storage.tables import User

SESSION_COOKIE = "datawell_session"
CSRF_COOKIE = "datawell_csrf"
CSRF_FIELD = "csrf"
CSRF_HEADER = "x-csrf-token"
SEED_SCOPE_KEY = "datawell.csrf_seed"
SESSION_TTL = timedelta(hours=12)
SESSION_DESCRIPTION = "console session"
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


@dataclass(frozen=True)
class Session:
    user: User
    token: str  # the session's bearer token


def _key(services: Services) -> bytes:
    # Derived from the token key, so every process sharing that key accepts the others' forms.
    return hmac.new(services.tokens.secret.encode(), b"datawell console csrf", hashlib.sha256).digest()


def csrf_token(services: Services, seed: str) -> str:
    return hmac.new(_key(services), seed.encode(), hashlib.sha256).hexdigest()


def csrf_valid(services: Services, seed: str, submitted: str | None) -> bool:
    return bool(submitted) and hmac.compare_digest(csrf_token(services, seed), str(submitted))


def request_csrf(request: Request) -> str:
    """The token this request's forms must carry."""
    return csrf_token(request.state.services, request.scope[SEED_SCOPE_KEY])


async def csrf_submitted(request: Request) -> bool:
    submitted = request.headers.get(CSRF_HEADER)
    if submitted is None and request.headers.get("content-type", "").startswith(
        ("application/x-www-form-urlencoded", "multipart/form-data")
    ):
        value = (await request.form()).get(CSRF_FIELD)
        submitted = value if isinstance(value, str) else None
    return csrf_valid(request.state.services, request.scope[SEED_SCOPE_KEY], submitted)


async def current_session(request: Request) -> Session | None:
    token = request.cookies.get(SESSION_COOKIE)
    if not token:
        return None
    try:
        user = await request.state.services.tokens.authenticate(f"Bearer {token}")
    except DatawellError:
        return None
    return Session(user, token)


def _cookie(name: str, value: str, *, secure: bool, max_age: int | None = None) -> str:
    cookie: SimpleCookie = SimpleCookie()
    cookie[name] = value
    morsel = cookie[name]
    morsel["path"] = "/"
    morsel["httponly"] = True
    morsel["samesite"] = "Lax"
    if secure:
        morsel["secure"] = True
    if max_age is not None:
        morsel["max-age"] = max_age
    return morsel.OutputString()


def start_session(request: Request, response: Response, token: str) -> None:
    secure = request.url.scheme == "https"
    max_age = int(SESSION_TTL.total_seconds())
    response.headers.append("set-cookie", _cookie(SESSION_COOKIE, token, secure=secure, max_age=max_age))
    response.headers.append("set-cookie", _cookie(CSRF_COOKIE, secrets.token_urlsafe(32), secure=secure))


def end_session(request: Request, response: Response) -> None:
    response.headers.append("set-cookie", _cookie(SESSION_COOKIE, "", secure=request.url.scheme == "https", max_age=0))


class ConsoleCookies:
    """ASGI middleware: gives every console visitor a CSRF seed cookie, and turns a session
    cookie into a bearer token for the browser's own calls to the REST API."""

    def __init__(self, app: ASGIApp, api_prefix: str) -> None:
        self.app = app
        self.api_prefix = api_prefix

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope["headers"])
        cookies = cookie_parser(headers.get(b"cookie", b"").decode("latin-1"))
        seed = cookies.get(CSRF_COOKIE) or ""
        is_api = scope["path"].startswith(self.api_prefix + "/")
        fresh = not seed and not is_api
        if fresh:
            seed = secrets.token_urlsafe(32)
        scope = {**scope, SEED_SCOPE_KEY: seed}
        session = cookies.get(SESSION_COOKIE)
        if is_api and session and b"authorization" not in headers and self._allowed(scope, headers, seed):
            scope["headers"] = [*scope["headers"], (b"authorization", f"Bearer {session}".encode())]
        if not fresh:
            await self.app(scope, receive, send)
            return
        cookie = _cookie(CSRF_COOKIE, seed, secure=scope.get("scheme") == "https")

        async def send_with_cookie(message: Message) -> None:
            if message["type"] == "http.response.start":
                MutableHeaders(scope=message).append("set-cookie", cookie)
            await send(message)

        await self.app(scope, receive, send_with_cookie)

    @staticmethod
    def _allowed(scope: Scope, headers: dict[bytes, bytes], seed: str) -> bool:
        if scope["method"] in SAFE_METHODS:
            return True
        services: Services | None = scope.get("state", {}).get("services")
        submitted = headers.get(CSRF_HEADER.encode(), b"").decode("latin-1")
        return services is not None and bool(seed) and csrf_valid(services, seed, submitted)
