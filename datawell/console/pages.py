"""Rendering and the rules every console page follows: signed in (else to the sign-in page),
a CSRF token on every unsafe request (else a refusal page), and any refusal of the API or
the layers below shown as a message in the page with the status the API would answer."""

from __future__ import annotations

import functools
import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.templating import Jinja2Templates

from datawell.console.calls import Api, ApiError
from datawell.console.session import SAFE_METHODS, Session, csrf_submitted, current_session, request_csrf
from datawell.errors import DatawellError

templates = Jinja2Templates(directory=Path(__file__).parent / "templates")


def columns(rows: list[dict[str, Any]]) -> list[str]:
    """The fields of a result's rows in first-seen order, without the internal `__` ones."""
    return list(dict.fromkeys(key for row in rows for key in row if not key.startswith("__")))


def cell(value: Any) -> str:
    if value is None:
        return ""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)


templates.env.filters["columns"] = columns
templates.env.filters["cell"] = cell

Handler = Callable[[Request, Session], Awaitable[Response]]


class Failure:
    """A refusal as a page shows it: a message, the problems named one by one, a status."""

    def __init__(self, exc: ApiError | DatawellError) -> None:
        if isinstance(exc, ApiError):
            self.status, self.code, self.message, self.problems = exc.status, exc.error_code, exc.message, exc.problems
        else:
            self.status, self.code, self.message = exc.mapping.http_status, exc.error_code, exc.message
            self.problems = [s.message for s in exc.sub_errors]


def render(
    request: Request, name: str, context: dict[str, Any] | None = None, *, status: int = 200, session: Session | None
) -> Response:
    values = {
        "session": session,
        "csrf": request_csrf(request),
        "notice": request.query_params.get("notice", ""),
        **(context or {}),
    }
    return templates.TemplateResponse(request, name, values, status_code=status)


def redirect(url: str, notice: str = "") -> RedirectResponse:
    if notice:
        url += ("&" if "?" in url else "?") + urlencode({"notice": notice})
    return RedirectResponse(url, status_code=303)


def signed_in(handler: Handler) -> Callable[[Request], Awaitable[Response]]:
    @functools.wraps(handler)
    async def endpoint(request: Request) -> Response:
        session = await current_session(request)
        if session is None:
            target = "/signin?next=" + quote(request.url.path)
            if request.headers.get("hx-request"):
                return Response(status_code=204, headers={"HX-Redirect": target})
            return RedirectResponse(target, status_code=303)
        if request.method not in SAFE_METHODS and not await csrf_submitted(request):
            return refused(request, session)
        try:
            return await handler(request, session)
        except (ApiError, DatawellError) as exc:
            failure = Failure(exc)
            return render(request, "error.html", {"failure": failure}, status=failure.status, session=session)

    return endpoint


def refused(request: Request, session: Session | None) -> Response:
    return render(request, "refused.html", status=403, session=session)


def api(request: Request, session: Session) -> Api:
    return Api(request, session.token)


async def form(request: Request) -> dict[str, str]:
    return {key: value for key, value in (await request.form()).items() if isinstance(value, str)}
