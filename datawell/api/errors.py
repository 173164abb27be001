"""Every error a client sees is an ErrorResponse; this is the one mapping from exceptions."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from datawell.api.schemas import ErrorResponse, SubErrorBody
from datawell.errors import DatawellError, InvalidInput, SubError

log = logging.getLogger(__name__)

HTTP_ERROR_CODES = {
    400: "BAD_REQUEST",
    401: "UNAUTHORIZED",
    403: "FORBIDDEN",
    404: "NOT_FOUND",
    405: "METHOD_NOT_ALLOWED",
    409: "CONFLICT",
    415: "UNSUPPORTED_MEDIA_TYPE",
    422: "VALIDATION_ERROR",
}


def error_response(
    status: int,
    code: str,
    message: str,
    detail: str = "",
    sub_errors: list[SubError] | None = None,
    headers: Mapping[str, str] | None = None,
) -> JSONResponse:
    body = ErrorResponse(
        error_code=code,
        message=message,
        error_message=detail,
        sub_errors=[SubErrorBody(code=s.code, message=s.message) for s in sub_errors or []],
    )
    return JSONResponse(body.model_dump(), status_code=status, headers=headers)


def error_body(exc: DatawellError) -> dict[str, Any]:
    """The ErrorResponse of an error, as JSON data (also the SSE `error` event's data)."""
    return ErrorResponse(
        error_code=exc.error_code,
        message=exc.message,
        error_message=exc.detail,
        sub_errors=[SubErrorBody(code=s.code, message=s.message) for s in exc.sub_errors],
    ).model_dump()


def validation_error(error: ValidationError, prefix: str = "") -> InvalidInput:
    """One sub_error per bad field, named by its path on the wire."""
    subs = []
    for item in error.errors(include_url=False):
        path = ".".join(str(p) for p in (prefix, *item["loc"]) if p != "")
        subs.append(SubError(code=item["type"], message=f"{path or 'body'}: {item['msg']}"))
    return InvalidInput("the request is invalid", sub_errors=subs)


async def handle_datawell_error(_request: Request, exc: Exception) -> Response:
    assert isinstance(exc, DatawellError)
    headers = {"WWW-Authenticate": "Bearer"} if exc.status_code == 401 else None
    return error_response(exc.status_code, exc.error_code, exc.message, exc.detail, exc.sub_errors, headers)


async def handle_http_exception(_request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    code = HTTP_ERROR_CODES.get(exc.status_code, "HTTP_ERROR")
    message = {404: "no such route", 405: "method not allowed on this route"}.get(exc.status_code, str(exc.detail))
    return error_response(exc.status_code, code, message, headers=exc.headers)


async def handle_unexpected(_request: Request, exc: Exception) -> Response:
    log.exception("unhandled error", exc_info=exc)
    return error_response(500, "INTERNAL_ERROR", "the service failed to handle this request; it has been logged")


EXCEPTION_HANDLERS = {
    DatawellError: handle_datawell_error,
    HTTPException: handle_http_exception,
    Exception: handle_unexpected,
}
