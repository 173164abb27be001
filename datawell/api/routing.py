"""Declared operations: each endpoint states its method, path, body, query, response and
errors once; the same declaration validates requests, serialises responses and feeds the
OpenAPI document, so the two cannot drift apart."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from pydantic import BaseModel, TypeAdapter, ValidationError
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from datawell.api.errors import validation_error
from datawell.errors import InvalidInput, SubError, UnsupportedMediaType
from datawell.storage.tables import User
from datawell.storage.tokens import TokenAuthority

Endpoint = Callable[..., Awaitable[Any]]
M = TypeVar("M", bound=BaseModel)


@dataclass(frozen=True)
class Operation:
    method: str
    path: str
    endpoint: Endpoint
    summary: str
    tag: str
    status: int = 200
    body: type[BaseModel] | None = None
    query: type[BaseModel] | None = None
    response: Any = None  # a pydantic model or type; None means no body
    errors: tuple[int, ...] = ()
    public: bool = False
    description: str = ""
    streams: dict[str, str] = field(default_factory=dict)  # extra media types -> description
    headers: tuple[tuple[str, str], ...] = ()  # documented request headers (name, description)
    # Also served, undocumented, at the path with a trailing slash, for clients that add one
    # to a URL they were given (A2A, MCP): Starlette would answer them 307, which they do not follow.
    slash: bool = False


async def current_user(request: Request) -> User:
    """The caller named by the bearer token (401 without a valid one)."""
    authority: TokenAuthority = request.state.services.tokens
    user = await authority.authenticate(request.headers.get("authorization"))
    request.scope["user"] = user
    return user


class Router:
    """Collects a resource module's operations."""

    def __init__(self, tag: str) -> None:
        self.tag = tag
        self.operations: list[Operation] = []

    def operation(self, method: str, path: str, *, summary: str, **options: Any) -> Callable[[Endpoint], Endpoint]:
        def register(endpoint: Endpoint) -> Endpoint:
            errors = tuple(options.pop("errors", ()))
            if not options.get("public"):
                errors = tuple(sorted({401, *errors}))
            self.operations.append(
                Operation(
                    method,
                    path,
                    endpoint,
                    summary,
                    self.tag,
                    errors=errors,
                    description=(endpoint.__doc__ or "").strip(),
                    **options,
                )
            )
            return endpoint

        return register

    def routes(self, prefix: str) -> list[Route]:
        routes = []
        for op in self.operations:
            handler = _handler(op)
            routes.append(Route(prefix + op.path, handler, methods=[op.method]))
            if op.slash:
                routes.append(Route(prefix + op.path + "/", handler, methods=[op.method], include_in_schema=False))
        return routes


def _handler(op: Operation) -> Callable[[Request], Awaitable[Response]]:
    response_adapter = TypeAdapter(op.response) if op.response is not None else None

    async def handle(request: Request) -> Response:
        kwargs: dict[str, Any] = {}
        if not op.public:
            kwargs["user"] = await current_user(request)
        if op.query is not None:
            kwargs["query"] = parse_query(request, op.query)
        if op.body is not None:
            kwargs["body"] = await parse_body(request, op.body)
        result = await op.endpoint(request, **kwargs)
        if isinstance(result, Response):
            return result
        if response_adapter is None:
            return Response(status_code=op.status)
        return JSONResponse(response_adapter.dump_python(result, mode="json", by_alias=True), status_code=op.status)

    return handle


async def parse_body(request: Request, model: type[M]) -> M:
    media_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if media_type != "application/json":
        raise UnsupportedMediaType(f"send the body as application/json (got {media_type or 'no content type'})")
    raw = await request.body()
    try:
        data = json.loads(raw or b"null")
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InvalidInput("the body is not valid JSON", sub_errors=[SubError("invalid_json", str(exc))]) from None
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise validation_error(exc) from None


def parse_query(request: Request, model: type[M]) -> M:
    try:
        return model.model_validate(dict(request.query_params))
    except ValidationError as exc:
        raise validation_error(exc, prefix="query") from None
