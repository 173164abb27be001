"""Declared operations: each endpoint states its method, path, body, query, response and
errors once; the same declaration validates requests, serialises responses and feeds the
OpenAPI document, so the two cannot drift apart.

A route also declares what its path names: `params`, a path model, and `resolve`, a
`Resolver` that turns the path into the dataset or namespace the handler may touch, checked
for the permission it needs (404 when it does not exist, 403 without access). Handlers get
what they declared as keyword arguments and never read `request.path_params` or
`request.state` (docs/architecture.md, "Adding a route").

A declaration is as short as Starlette's or FastAPI's: `@router.get(path, Response, ...)`; the
summary is the handler docstring's first line, and the errors its inputs can answer (401, 415
and 422 for a body, 422 for a query or an id in the path, the resolver's 403 and 404) are
added to those it lists, which are only the ones its own logic answers (409, 502, ...)."""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from pydantic import AfterValidator, BaseModel, ConfigDict, TypeAdapter, ValidationError
from pydantic.alias_generators import to_camel
from pydantic_core import PydanticCustomError
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from datawell.agents.server import AgentServer
from datawell.api.inputs import parse_body, parse_query, refuse_nul
from datawell.errors import InvalidInput, SubError
from datawell.mcp.server import McpServer
from datawell.runs import Runs
from datawell.services import Services
from datawell.storage.access import NamespaceRef, Permission, authorize
from datawell.storage.datasets import DatasetRef, get_dataset
from datawell.storage.tables import User
from datawell.storage.users import SELF

Endpoint = Callable[..., Awaitable[Any]]
M = TypeVar("M", bound=BaseModel)
P = TypeVar("P", bound="PathModel")
T = TypeVar("T")
N = TypeVar("N", bound="NamespaceNamed")


@dataclass(frozen=True)
class Context:
    """Everything a handler reaches besides its request, set up once by the lifespan
    (`datawell.app`): the services, the graph runs, the A2A agents, the MCP server and the
    OpenAPI document. The one way to them."""

    services: Services
    runs: Runs
    agents: AgentServer
    mcp: McpServer
    openapi: dict[str, Any]

    @classmethod
    def of(cls, request: Request) -> Context:
        context: Context = request.state.context
        return context


class PathModel(BaseModel):
    """The parameters of a path, camelCase in the path and snake_case in Python."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, frozen=True)


class IdInPath(AfterValidator):
    """The validator `uuid_in_path` puts on a path parameter; a path model with one answers 422."""


def uuid_in_path(what: str) -> AfterValidator:
    """Validates a path parameter holding an id as a canonical UUID (422 `invalid <what> id`
    otherwise): `ingestion_id: Annotated[str, uuid_in_path("ingestion")]`."""

    def canonical(raw: str) -> str:
        try:
            return str(uuid.UUID(raw))
        except ValueError:
            raise PydanticCustomError("uuid_parsing", "{raw} is not a UUID", {"raw": repr(raw), "what": what}) from None

    return IdInPath(canonical)


def path_errors(model: type[PathModel]) -> set[int]:
    """What parsing the path can answer: 422 when it holds an id."""
    validated = any(isinstance(m, IdInPath) for f in model.model_fields.values() for m in f.metadata)
    return {422} if validated else set()


class NamespaceNamed(PathModel):
    """A path naming a namespace by its name alone: one of the caller's."""

    namespace: str

    def owner_for(self, user: User) -> str:
        return user.username


class NamespacePath(NamespaceNamed):
    """A path naming a namespace as `{username}/{namespace}` (the username owns it)."""

    username: str

    def owner_for(self, user: User) -> str:
        return self.username


class DatasetPath(NamespacePath):
    dataset_name: str


@dataclass(frozen=True)
class Resolver(Generic[P, T]):
    """Turns a route's path into what its handler works on, checked for the caller: the
    handler receives it as the keyword `name`. `errors`: what it answers when it cannot (404,
    403), documented on every route that declares it."""

    name: str
    path: type[P]
    resolve: Callable[[Context, User, P], Awaitable[T]]
    errors: tuple[int, ...]


def namespace_for(wanted: Permission, path: type[N]) -> Resolver[N, NamespaceRef]:
    """The namespace the path names: 404 if it does not exist, 403 without `wanted` (never
    for a path naming one of the caller's own namespaces)."""

    async def resolve(ctx: Context, user: User, named: N) -> NamespaceRef:
        async with ctx.services.db.read() as session:
            return await authorize(session, user, named.owner_for(user), named.namespace, wanted)

    own = path.owner_for is NamespaceNamed.owner_for
    return Resolver("namespace", path, resolve, (404,) if own else (403, 404))


def dataset_for(wanted: Permission) -> Resolver[DatasetPath, DatasetRef]:
    """The dataset `{username}/{namespace}/{datasetName}` (the username owns the namespace):
    404 if either does not exist, 403 without `wanted` on the namespace."""

    async def resolve(ctx: Context, user: User, path: DatasetPath) -> DatasetRef:
        async with ctx.services.db.read() as session:
            namespace = await authorize(session, user, path.owner_for(user), path.namespace, wanted)
            return await get_dataset(session, namespace, path.dataset_name)

    return Resolver("dataset", DatasetPath, resolve, (403, 404))


READABLE_NAMESPACE = namespace_for(Permission.READ, NamespacePath)
WRITABLE_NAMESPACE = namespace_for(Permission.WRITE, NamespacePath)
READABLE_DATASET = dataset_for(Permission.READ)
WRITABLE_DATASET = dataset_for(Permission.WRITE)


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
    # Extra media types -> a description, or the schema itself (of each event, for SSE).
    streams: dict[str, str | dict[str, Any]] = field(default_factory=dict)
    headers: tuple[tuple[str, str], ...] = ()  # documented request headers (name, description)
    header_schemas: dict[str, dict[str, Any]] = field(default_factory=dict)  # their schemas, when not any string
    # Also served, undocumented, at the path with a trailing slash, for clients that add one
    # to a URL they were given (A2A, MCP): Starlette would answer them 307, which they do not follow.
    slash: bool = False
    also: tuple[int, ...] = ()  # other success statuses, with the same body (DataLinks SDK routes)
    params: type[PathModel] | None = None  # the handler gets it as `path`
    resolve: Resolver[Any, Any] | None = None  # the handler gets what it resolves as `resolve.name`
    # A body field a text/plain body fills, for clients that send one value as text (the
    # DataLinks SDK's renames); JSON bodies are taken as well.
    text_field: str | None = None
    # A JSON body the endpoint reads itself (routing does not parse it), as the document
    # describes it (MCP's JSON-RPC messages).
    body_schema: dict[str, Any] | None = None
    # Other success statuses answered without a body: (status, description).
    bodiless: tuple[tuple[int, str], ...] = ()


async def current_user(request: Request, ctx: Context) -> User:
    """The caller named by the bearer token (401 without a valid one). A path's username
    `self` is the caller's, for every route at once (the DataLinks SDK names the caller so),
    before the path is parsed and resolved."""
    user = await ctx.services.tokens.authenticate(request.headers.get("authorization"))
    request.scope["user"] = user
    params = request.scope.get("path_params", {})
    for name in PATH_USERNAMES:
        if name in params:
            params[name] = named_user(params[name], user)
    return user


PATH_USERNAMES = ("username", "user", "owner")  # path parameters that name a user


def named_user(username: str, caller: User) -> str:
    """`username` as given, or the caller's own when it is `self`: the one rule for paths and
    bodies alike."""
    return caller.username if username == SELF else username


class Router:
    """Collects a resource module's operations."""

    def __init__(self, tag: str) -> None:
        self.tag = tag
        self.operations: list[Operation] = []

    def operation(
        self, method: str, path: str, *, summary: str | None = None, **options: Any
    ) -> Callable[[Endpoint], Endpoint]:
        """Registers the endpoint. Without `summary`, the docstring's first line is the summary
        and the rest its description; `errors` lists what the handler itself answers, the rest
        is added from what the route takes (`implied_errors`)."""

        def register(endpoint: Endpoint) -> Endpoint:
            params, resolve = options.get("params"), options.get("resolve")
            # The path is parsed once, with `params` when both are declared; the resolver reads its part.
            assert params is None or resolve is None or issubclass(params, resolve.path), endpoint
            errors = {*options.pop("errors", ()), *implied_errors(**options)}
            doc = (endpoint.__doc__ or "").strip()
            if summary is None:
                first, _, rest = doc.partition("\n")
                if not first:
                    raise ValueError(f"{endpoint.__name__}: give a summary, or a docstring whose first line is one")
                named, description = first.strip(), rest.strip()
            else:
                named, description = summary, doc
            self.operations.append(
                Operation(
                    method,
                    path,
                    endpoint,
                    named,
                    self.tag,
                    errors=tuple(sorted(errors)),
                    description=description,
                    **options,
                )
            )
            return endpoint

        return register

    def get(self, path: str, response: Any = None, **options: Any) -> Callable[[Endpoint], Endpoint]:
        return self.operation("GET", path, response=response, **options)

    def post(self, path: str, response: Any = None, **options: Any) -> Callable[[Endpoint], Endpoint]:
        return self.operation("POST", path, response=response, **options)

    def put(self, path: str, response: Any = None, **options: Any) -> Callable[[Endpoint], Endpoint]:
        return self.operation("PUT", path, response=response, **options)

    def patch(self, path: str, response: Any = None, **options: Any) -> Callable[[Endpoint], Endpoint]:
        return self.operation("PATCH", path, response=response, **options)

    def delete(self, path: str, response: Any = None, **options: Any) -> Callable[[Endpoint], Endpoint]:
        return self.operation("DELETE", path, response=response, **options)

    def routes(self, prefix: str) -> list[Route]:
        return routes(self.operations, prefix)


def implied_errors(
    *,
    public: bool = False,
    body: type[BaseModel] | None = None,
    query: type[BaseModel] | None = None,
    params: type[PathModel] | None = None,
    resolve: Resolver[Any, Any] | None = None,
    **_: Any,
) -> set[int]:
    """The errors a route answers for what it takes, before its handler runs: 401 without a
    valid token, 415 and 422 for a body, 422 for a query or an id in the path, and what its
    resolver answers."""
    errors = set() if public else {401}
    if body is not None:
        errors |= {415, 422}
    if query is not None:
        errors.add(422)
    for model in (params, resolve.path if resolve is not None else None):
        if model is not None:
            errors |= path_errors(model)
    if resolve is not None:
        errors.update(resolve.errors)
    return errors


def routes(operations: Iterable[Operation], prefix: str) -> list[Route]:
    """One route per path, whatever its methods and whichever routers declared them, so a 405
    lists all of them in `Allow`; operations marked `slash` are served with a trailing slash too."""
    by_path: dict[str, dict[str, Callable[[Request], Awaitable[Response]]]] = {}
    slashed: set[str] = set()
    for op in operations:
        handlers = by_path.setdefault(op.path, {})
        if op.method in handlers:
            raise ValueError(f"{op.method} {op.path} is declared twice")
        handlers[op.method] = _handler(op)
        if op.slash:
            slashed.add(op.path)
    found = []
    for path, handlers in by_path.items():
        endpoint = _dispatch(handlers)
        found.append(Route(prefix + path, endpoint, methods=list(handlers)))
        if path in slashed:
            found.append(Route(prefix + path + "/", endpoint, methods=list(handlers), include_in_schema=False))
    return found


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

    path_model = op.params or (op.resolve.path if op.resolve is not None else None)

    async def handle(request: Request) -> Response:
        refuse_nul(request.path_params, "path")
        refuse_nul(request.query_params, "query")
        ctx = Context.of(request)
        kwargs: dict[str, Any] = {"ctx": ctx}
        if not op.public:
            kwargs["user"] = await current_user(request, ctx)
        if op.query is not None:
            kwargs["query"] = parse_query(request, op.query)
        if op.body is not None:
            kwargs["body"] = await parse_body(request, op.body, text_field=op.text_field)
        if path_model is not None:
            path = parse_path(request, path_model)
            if op.params is not None:
                kwargs["path"] = path
            if op.resolve is not None:
                kwargs[op.resolve.name] = await op.resolve.resolve(ctx, kwargs["user"], path)
        result = await op.endpoint(request, **kwargs)
        if isinstance(result, Response):
            return result
        if response_adapter is None:
            return Response(status_code=op.status)
        # Serialised by pydantic in one pass, as JSONResponse would write it (compact, UTF-8).
        body = response_adapter.dump_json(result, by_alias=True)
        return Response(body, status_code=op.status, media_type="application/json")

    return handle


def parse_path(request: Request, model: type[P]) -> P:
    try:
        return model.model_validate(request.path_params)
    except ValidationError as exc:
        error = exc.errors(include_url=False)[0]
        what = (error.get("ctx") or {}).get("what", "path")
        raise InvalidInput(
            f"invalid {what} id", sub_errors=[SubError(error["type"], f"{error['loc'][0]}: {error['msg']}")]
        ) from None
