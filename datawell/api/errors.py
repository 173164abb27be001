"""Every error a client sees is an ErrorResponse, rendered from the row of `datawell.errors.ERRORS`
of the exception; Starlette's own errors (no route, wrong method) become the Datawell errors they are."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from datawell.api.schemas import ErrorResponse, SubErrorBody
from datawell.errors import Busy, DatawellError, InvalidInput, MethodNotAllowed, NotFound, SubError, Unauthorized

log = logging.getLogger(__name__)

UNEXPECTED_MESSAGE = "the service failed to handle this request; it has been logged"


def error_body(exc: DatawellError) -> dict[str, Any]:
    """The ErrorResponse of an error, as JSON data (also the SSE `error` event's data)."""
    return ErrorResponse(
        error_code=exc.error_code,
        message=exc.message,
        error_message=exc.detail,
        sub_errors=[SubErrorBody(code=s.code, message=s.message) for s in exc.sub_errors],
    ).model_dump()


def error_response(exc: DatawellError, headers: Mapping[str, str] | None = None) -> JSONResponse:
    if isinstance(exc, Unauthorized):
        headers = {**(headers or {}), "WWW-Authenticate": "Bearer"}
    if isinstance(exc, Busy):
        headers = {**(headers or {}), "Retry-After": str(exc.retry_after_seconds)}
    return JSONResponse(error_body(exc), status_code=exc.mapping.http_status, headers=headers)


def validation_error(error: ValidationError, prefix: str = "") -> InvalidInput:
    """One sub_error per bad field, named by its path on the wire."""
    subs = []
    for item in error.errors(include_url=False):
        path = ".".join(str(p) for p in (prefix, *item["loc"]) if p != "")
        subs.append(SubError(code=item["type"], message=f"{path or 'body'}: {item['msg']}"))
    return InvalidInput("the request is invalid", sub_errors=subs)


async def handle_datawell_error(_request: Request, exc: Exception) -> Response:
    assert isinstance(exc, DatawellError)
    return error_response(exc)


async def handle_http_exception(_request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    # Routing raises only these two; the 405 keeps its Allow header.
    error = {404: NotFound("no such route"), 405: MethodNotAllowed("method not allowed on this route")}.get(
        exc.status_code
    )
    if error is None:  # no Datawell error says what this is: keep Starlette's status
        body = ErrorResponse(error_code="HTTP_ERROR", message=str(exc.detail))
        return JSONResponse(body.model_dump(), status_code=exc.status_code, headers=exc.headers)
    return error_response(error, headers=exc.headers)


async def handle_unexpected(_request: Request, exc: Exception) -> Response:
    log.exception("unhandled error", exc_info=exc)
    return error_response(DatawellError(UNEXPECTED_MESSAGE))


EXCEPTION_HANDLERS = {
    DatawellError: handle_datawell_error,
    HTTPException: handle_http_exception,
    Exception: handle_unexpected,
}
