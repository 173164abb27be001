"""Console sessions and CSRF protection.

Signing in exchanges a pasted bearer token for a session token of its own (a normal token,
described "console session", revoked at sign-out), kept in an HttpOnly, SameSite=Lax cookie
that is Secure over https. Every page checks it with the same `TokenAuthority` as the API, so
revoking or expiring the token ends the session. Over https both cookies are named with the
`__Host-` prefix, which the browser accepts only from a secure page of this very host, for
path `/` and no domain: a page on another host of the site cannot plant them.

CSRF: a form token bound to the session. Each form carries HMAC(key, session token) in a
hidden field (htmx and the upload script send it as the `X-CSRF-Token` header); before
sign-in, the sign-in form's token is HMAC(key, a random `datawell_csrf` cookie). SameSite is
no defence against a page on another port of the same host (it is the same site), and such a
page can set cookies here; what it cannot do is read the HttpOnly session cookie, so it can
mint a visitor's pair but never the token of someone's session (issue 26's attack, a test in
tests/console/test_browser.py). The visitor cookie is renewed at sign-in. Unsafe requests a
browser marks as coming from another origin (`Sec-Fetch-Site: same-site` or `cross-site`) are
refused whatever they carry: that also stops a planted visitor pair from signing a signed-out
victim in as the attacker (login CSRF).

`ConsoleCookies` also lets the browser call the REST API with the session: a request under
/api/v1 that has no Authorization header but a session cookie gets `Bearer <session token>`
added, for unsafe methods only with a valid `X-CSRF-Token`. Without one the API answers 401
as it would to any request without a token. It also puts the security headers of
`datawell.console.headers` on every response outside the API."""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
from http.cookies import SimpleCookie

from starlette.datastructures import Headers, MutableHeaders
from starlette.requests import Request, cookie_parser
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from datawell.console.headers import security_headers
from datawell.errors import DatawellError
from datawell.services import Services
from datawell.storage.tables import User

SESSION_COOKIE = "datawell_session"
CSRF_COOKIE = "datawell_csrf"
SECURE_PREFIX = "__Host-"
CSRF_FIELD = "csrf"
CSRF_HEADER = "x-csrf-token"
BINDING_SCOPE_KEY = "datawell.csrf_binding"
SESSION_TTL = timedelta(hours=12)
SESSION_DESCRIPTION = "console session"
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


@dataclass(frozen=True)
class Session:
    user: User
    token: str  # the session's bearer token


def cookie_name(name: str, *, secure: bool) -> str:
    return SECURE_PREFIX + name if secure else name


def _key(services: Services) -> bytes:
    # Derived from the token key, so every process sharing that key accepts the others' forms.
    return hmac.new(services.tokens.secret.encode(), b"datawell console csrf", hashlib.sha256).digest()


def csrf_binding(session: str | None, seed: str) -> str:
    """What a request's form token is bound to: its session when it has one, else the
    visitor cookie (the sign-in form). The prefixes keep the two kinds apart."""
    return f"session:{session}" if session else f"visitor:{seed}"


def csrf_token(services: Services, binding: str) -> str:
    return hmac.new(_key(services), binding.encode(), hashlib.sha256).hexdigest()


def csrf_valid(services: Services, binding: str, submitted: str | None) -> bool:
    return bool(submitted) and hmac.compare_digest(csrf_token(services, binding), str(submitted))


def request_csrf(request: Request) -> str:
    """The token this request's forms must carry."""
    return csrf_token(request.state.services, request.scope[BINDING_SCOPE_KEY])


def from_another_origin(headers: Mapping[str, str]) -> bool:
    """What the browser says of where an unsafe request comes from (Fetch Metadata): a page of
    another origin (`cross-site`, or `same-site`: another port or subdomain of this site). Sent
    by every current browser; a client that sends none still needs the CSRF token."""
    return headers.get("sec-fetch-site", "") in ("cross-site", "same-site")


async def csrf_submitted(request: Request) -> bool:
    if from_another_origin(request.headers):
        return False
    submitted = request.headers.get(CSRF_HEADER)
    if submitted is None and request.headers.get("content-type", "").startswith(
        ("application/x-www-form-urlencoded", "multipart/form-data")
    ):
        value = (await request.form()).get(CSRF_FIELD)
        submitted = value if isinstance(value, str) else None
    return csrf_valid(request.state.services, request.scope[BINDING_SCOPE_KEY], submitted)


def _secure(request: Request) -> bool:
    return request.url.scheme == "https"


async def current_session(request: Request) -> Session | None:
    token = request.cookies.get(cookie_name(SESSION_COOKIE, secure=_secure(request)))
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
    secure = _secure(request)
    max_age = int(SESSION_TTL.total_seconds())
    response.headers.append(
        "set-cookie", _cookie(cookie_name(SESSION_COOKIE, secure=secure), token, secure=secure, max_age=max_age)
    )
    seed = secrets.token_urlsafe(32)
    response.headers.append("set-cookie", _cookie(cookie_name(CSRF_COOKIE, secure=secure), seed, secure=secure))


def end_session(request: Request, response: Response) -> None:
    secure = _secure(request)
    response.headers.append(
        "set-cookie", _cookie(cookie_name(SESSION_COOKIE, secure=secure), "", secure=secure, max_age=0)
    )


class ConsoleCookies:
    """ASGI middleware: gives every console visitor a CSRF seed cookie, binds the request's
    form token (`BINDING_SCOPE_KEY`), turns a session cookie into a bearer token for the
    browser's own calls to the REST API, and adds the console's security headers."""

    def __init__(self, app: ASGIApp, api_prefix: str) -> None:
        self.app = app
        self.api_prefix = api_prefix

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        secure = scope.get("scheme") == "https"
        headers = dict(scope["headers"])
        cookies = cookie_parser(headers.get(b"cookie", b"").decode("latin-1"))
        seed = cookies.get(cookie_name(CSRF_COOKIE, secure=secure)) or ""
        session = cookies.get(cookie_name(SESSION_COOKIE, secure=secure))
        is_api = scope["path"].startswith(self.api_prefix + "/")
        fresh = not seed and not is_api
        if fresh:
            seed = secrets.token_urlsafe(32)
        binding = csrf_binding(session, seed)
        scope = {**scope, BINDING_SCOPE_KEY: binding}
        if is_api and session and b"authorization" not in headers and self._allowed(scope, headers, binding):
            scope["headers"] = [*scope["headers"], (b"authorization", f"Bearer {session}".encode())]
        if is_api:
            await self.app(scope, receive, send)
            return
        added = security_headers(scope)
        if fresh:
            added.append(("set-cookie", _cookie(cookie_name(CSRF_COOKIE, secure=secure), seed, secure=secure)))

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                response_headers = MutableHeaders(scope=message)
                for name, value in added:
                    if name == "set-cookie" or name not in response_headers:
                        response_headers.append(name, value)
            await send(message)

        await self.app(scope, receive, send_with_headers)

    @staticmethod
    def _allowed(scope: Scope, headers: dict[bytes, bytes], binding: str) -> bool:
        if scope["method"] in SAFE_METHODS:
            return True
        services: Services | None = scope.get("state", {}).get("services")
        if services is None or from_another_origin(Headers(scope=scope)):
            return False
        submitted = headers.get(CSRF_HEADER.encode(), b"").decode("latin-1")
        return csrf_valid(services, binding, submitted)
