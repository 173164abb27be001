"""The one exception the client raises for an error answer: the service's ErrorResponse."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel


class SubError(BaseModel):
    code: str
    message: str


class ApiError(Exception):
    """An ErrorResponse: `status` is the HTTP status, `error_code` the machine-readable code
    (UNAUTHORIZED, FORBIDDEN, NOT_FOUND, CONFLICT, VALIDATION_ERROR, …), `sub_errors` one
    item per bad field or part."""

    def __init__(
        self,
        status: int,
        error_code: str,
        message: str,
        error_message: str = "",
        sub_errors: list[SubError] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.error_code = error_code
        self.message = message
        self.error_message = error_message
        self.sub_errors = sub_errors or []

    @classmethod
    def of(cls, status: int, body: Any) -> ApiError:
        """From an ErrorResponse body, or from whatever a proxy answered instead."""
        if isinstance(body, dict) and isinstance(body.get("error_code"), str):
            return cls(
                status,
                body["error_code"],
                str(body.get("message", "")),
                str(body.get("error_message") or ""),
                [SubError.model_validate(s) for s in body.get("sub_errors") or []],
            )
        return cls(status, f"HTTP_{status}", f"the server answered {status} without an ErrorResponse: {body!r:.200}")

    def __str__(self) -> str:
        details = "".join(f"\n  {s.message}" for s in self.sub_errors)
        return f"{self.message}{details}"
