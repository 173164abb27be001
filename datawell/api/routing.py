"""Declared operations: each endpoint states its method, path, body, query, response and
errors once; the same declaration validates requests, serialises responses and feeds the
OpenAPI document, so the two cannot drift apart."""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable
from contextlib import suppress
from dataclasses import dataclass, field
from typing import Any, TypeVar

from pydantic import BaseModel, TypeAdapter, ValidationError
from pydantic_core import from_json
from starlette.requests import Request
from starlette.responses import Response
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
        """One route per path, whatever its methods, so a 405 lists all of them in `Allow`;
        operations marked `slash` are served with a trailing slash too."""
        by_path: dict[str, dict[str, Callable[[Request], Awaitable[Response]]]] = {}
        slashed: set[str] = set()
        for op in self.operations:
            by_path.setdefault(op.path, {})[op.method] = _handler(op)
            if op.slash:
                slashed.add(op.path)
        routes = []
        for path, handlers in by_path.items():
            endpoint = _dispatch(handlers)
            routes.append(Route(prefix + path, endpoint, methods=list(handlers)))
            if path in slashed:
                routes.append(Route(prefix + path + "/", endpoint, methods=list(handlers), include_in_schema=False))
        return routes


def _dispatch(
    handlers: dict[str, Callable[[Request], Awaitable[Response]]],
) -> Callable[[Request], Awaitable[Response]]:
    if len(handlers) == 1:
        return next(iter(handlers.values()))

    async def dispatch(request: Request) -> Response:
        # HEAD is served by GET, as Starlette does for a route with GET.
        return await handlers["GET" if request.method == "HEAD" else request.method](request)

    return dispatch


def _handler(op: Operation) -> Callable[[Request], Awaitable[Response]]:
    response_adapter = TypeAdapter(op.response) if op.response is not None else None

    async def handle(request: Request) -> Response:
        kwargs: dict[str, Any] = {}
        refuse_nul(request.path_params, "path")
        refuse_nul(request.query_params, "query")
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
        # Serialised by pydantic in one pass, as JSONResponse would write it (compact, UTF-8).
        body = response_adapter.dump_json(result, by_alias=True)
        return Response(body, status_code=op.status, media_type="application/json")

    return handle


async def parse_body(request: Request, model: type[M]) -> M:
    """The body validated strictly as JSON (`true` is no integer, `"3"` no number) by
    pydantic's parser, whose nesting limit turns a body nested thousands deep into a 422."""
    media_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if media_type != "application/json":
        raise UnsupportedMediaType(f"send the body as application/json (got {media_type or 'no content type'})")
    raw = await request.body()
    if b"\\u0000" in raw:  # only the JSON escape can put a NUL in a string
        with suppress(ValueError):  # not JSON: the validation below says so
            refuse_nul({"body": from_json(raw)}, "")
    try:
        return model.model_validate_json(raw or b"null", strict=True)
    except ValidationError as exc:
        invalid = [e["msg"] for e in exc.errors(include_url=False) if e["type"] == "json_invalid"]
        if invalid:
            raise InvalidInput(
                "the body is not valid JSON", sub_errors=[SubError("invalid_json", invalid[0])]
            ) from None
        raise validation_error(exc) from None


def refuse_nul(values: Any, path: str) -> None:
    """422 naming the first field with a NUL character: PostgreSQL stores none, in text or JSON."""
    stack: list[tuple[str, Any]] = [(path, values)]
    while stack:
        where, value = stack.pop()
        if isinstance(value, str):
            if "\x00" in value:
                text = f"{where}: NUL characters (\\u0000) are not allowed"
                raise InvalidInput("the request is invalid", sub_errors=[SubError("nul_character", text)])
        elif isinstance(value, dict) or hasattr(value, "items"):
            stack.extend((f"{where}.{k}" if where else str(k), v) for k, v in value.items())
            stack.extend((f"{where} key", k) for k in value)
        elif isinstance(value, list):
            stack.extend((f"{where}.{i}", v) for i, v in enumerate(value))


def parse_query(request: Request, model: type[M]) -> M:
    try:
        return model.model_validate_strings(dict(request.query_params))
    except ValidationError as exc:
        raise validation_error(exc, prefix="query") from None


def path_uuid(request: Request, name: str, what: str) -> str:
    """The path parameter `name` as a canonical UUID; 422 naming it when it is none."""
    raw = request.path_params[name]
    try:
        return str(uuid.UUID(raw))
    except ValueError:
        raise InvalidInput(
            f"invalid {what} id", sub_errors=[SubError("uuid_parsing", f"{name}: {raw!r} is not a UUID")]
        ) from None
