"""The one exception tree. `datawell.api.errors` maps it to ErrorResponse bodies and
`datawell.agents` maps it to JSON-RPC errors; nothing else translates errors."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SubError:
    code: str
    message: str


class DatawellError(Exception):
    status_code = 500
    error_code = "INTERNAL_ERROR"

    def __init__(self, message: str, *, detail: str = "", sub_errors: list[SubError] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.detail = detail
        self.sub_errors = sub_errors or []


class BadRequest(DatawellError):
    status_code = 400
    error_code = "BAD_REQUEST"


class Unauthorized(DatawellError):
    status_code = 401
    error_code = "UNAUTHORIZED"


class Forbidden(DatawellError):
    status_code = 403
    error_code = "FORBIDDEN"


class NotFound(DatawellError):
    status_code = 404
    error_code = "NOT_FOUND"


class MethodNotAllowed(DatawellError):
    status_code = 405
    error_code = "METHOD_NOT_ALLOWED"


class Conflict(DatawellError):
    status_code = 409
    error_code = "CONFLICT"


class UnsupportedMediaType(DatawellError):
    status_code = 415
    error_code = "UNSUPPORTED_MEDIA_TYPE"


class InvalidInput(DatawellError):
    """Bad input; `sub_errors` names each bad field."""

    status_code = 422
    error_code = "VALIDATION_ERROR"


class QueryError(InvalidInput):
    """A generated or submitted query was refused by the checker or failed to run."""

    error_code = "QUERY_ERROR"


class QueryRefused(DatawellError):
    """The model found that the namespace's datasets cannot answer the question."""

    status_code = 422
    error_code = "QUERY_REFUSED"


class InternalError(DatawellError):
    """Something unexpected failed; the cause is logged, never shown."""


class ModelError(DatawellError):
    """The language model failed or returned something unusable."""

    status_code = 502
    error_code = "MODEL_ERROR"


class BudgetExceeded(DatawellError):
    status_code = 422
    error_code = "BUDGET_EXCEEDED"


class WebSearchError(DatawellError):
    """The configured web-search provider failed or answered something unusable."""

    status_code = 502
    error_code = "WEB_SEARCH_ERROR"


class IngestionFailed(DatawellError):
    """An uploaded file cannot be ingested; the message says what to fix, with the line or row."""

    status_code = 422
    error_code = "INGESTION_FAILED"
