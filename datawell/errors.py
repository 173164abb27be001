"""The one exception tree, and `ERRORS`, the one table that says how each error reaches a
client. Every surface renders an error from its row and nothing else translates errors:

- REST: an ErrorResponse (`datawell.api.errors`) with the row's HTTP status and `code`; the
  SSE `error` event of a failed run carries the same ErrorResponse.
- A2A: a request error is a JSON-RPC error with the row's `json_rpc` code and
  `data.errorCode` = `code` (`datawell.agents.requests.a2a_error`); a failed run ends its
  task FAILED with a message whose `metadata.errorCode` is `code`.
- MCP: a tool that fails, before or during its run, returns a tool error (`isError`) whose
  text is `code: message` and whose `_meta` is `{errorCode, subErrors}`, with no structured
  content (`datawell.mcp.results`), so the calling model can read it; a failed resource read is
  a JSON-RPC error with the row's `json_rpc` code and `data.errorCode` = `code`; an error of the
  transport is an ErrorResponse and a JSON-RPC error in one body (`datawell.api.mcp`).

Anything else raised is unexpected: it is logged and shown as `UNEXPECTED` (no internals)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

INVALID_PARAMS = -32602  # JSON-RPC: the request cannot be served as sent
INTERNAL = -32603  # JSON-RPC: the service failed


@dataclass(frozen=True)
class SubError:
    code: str
    message: str


class ErrorMapping(NamedTuple):
    http_status: int
    code: str  # ErrorResponse.error_code, SSE error events, A2A errorCode
    json_rpc: int


class DatawellError(Exception):
    def __init__(self, message: str, *, detail: str = "", sub_errors: list[SubError] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.detail = detail
        self.sub_errors = sub_errors or []

    @property
    def mapping(self) -> ErrorMapping:
        return mapping_of(self)

    @property
    def error_code(self) -> str:
        return self.mapping.code


class Unauthorized(DatawellError):
    pass


class Forbidden(DatawellError):
    pass


class NotFound(DatawellError):
    pass


class MethodNotAllowed(DatawellError):
    """The route exists, the method does not (Starlette's 405, as an ErrorResponse)."""


class Conflict(DatawellError):
    pass


class UnsupportedMediaType(DatawellError):
    pass


class InvalidInput(DatawellError):
    """Bad input; `sub_errors` names each bad field."""


class QueryError(InvalidInput):
    """A generated or submitted query was refused by the checker or failed to run."""


class QueryLimitExceeded(QueryError):
    """A query past a size limit (length, CTEs, SELECTs, JOINs, nesting), refused before it is
    parsed (`tools/checker/bounds.py`); the sub-error names the limit and its setting."""


class QueryRefused(DatawellError):
    """The model found that the namespace's datasets cannot answer the question."""


class IngestionFailed(DatawellError):
    """An uploaded file cannot be ingested; the message says what to fix, with the line or row."""


class ModelError(DatawellError):
    """The language model failed or returned something unusable."""


class WebSearchError(DatawellError):
    """The configured web-search provider failed or answered something unusable."""


class Busy(DatawellError):
    """Every model slot is taken and the queue in front of them is full; retry after
    `retry_after_seconds` (REST: the `Retry-After` header; A2A and MCP: `retryAfterSeconds`)."""

    def __init__(self, message: str, *, retry_after_seconds: int) -> None:
        super().__init__(message)
        self.retry_after_seconds = retry_after_seconds


class InternalError(DatawellError):
    """Something unexpected failed; the cause is logged (and kept as `__cause__`), never shown."""


ERRORS: dict[type[DatawellError], ErrorMapping] = {
    DatawellError: ErrorMapping(500, "INTERNAL_ERROR", INTERNAL),
    InternalError: ErrorMapping(500, "INTERNAL_ERROR", INTERNAL),
    Unauthorized: ErrorMapping(401, "UNAUTHORIZED", INVALID_PARAMS),
    Forbidden: ErrorMapping(403, "FORBIDDEN", INVALID_PARAMS),
    NotFound: ErrorMapping(404, "NOT_FOUND", INVALID_PARAMS),
    MethodNotAllowed: ErrorMapping(405, "METHOD_NOT_ALLOWED", INVALID_PARAMS),
    Conflict: ErrorMapping(409, "CONFLICT", INVALID_PARAMS),
    UnsupportedMediaType: ErrorMapping(415, "UNSUPPORTED_MEDIA_TYPE", INVALID_PARAMS),
    InvalidInput: ErrorMapping(422, "VALIDATION_ERROR", INVALID_PARAMS),
    QueryError: ErrorMapping(422, "QUERY_ERROR", INVALID_PARAMS),
    QueryRefused: ErrorMapping(422, "QUERY_REFUSED", INVALID_PARAMS),
    QueryLimitExceeded: ErrorMapping(422, "QUERY_REFUSED", INVALID_PARAMS),
    IngestionFailed: ErrorMapping(422, "INGESTION_FAILED", INVALID_PARAMS),
    ModelError: ErrorMapping(502, "MODEL_ERROR", INTERNAL),
    WebSearchError: ErrorMapping(502, "WEB_SEARCH_ERROR", INTERNAL),
    Busy: ErrorMapping(503, "BUSY", INTERNAL),
}
UNEXPECTED = ERRORS[InternalError]


def mapping_of(exc: BaseException) -> ErrorMapping:
    """The row of the nearest class of `exc` in `ERRORS`; `UNEXPECTED` for anything else."""
    for cls in type(exc).__mro__:
        if cls in ERRORS:
            return ERRORS[cls]  # type: ignore[index]
    return UNEXPECTED
