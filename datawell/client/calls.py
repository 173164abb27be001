"""What an operation builds and how it is sent: the `Call` (method, path, body, the model its
answer is read into), the `operation` descriptor, the paths, bodies and connection options the
sync `Client` and the `AsyncClient` share, and the `ApiError` of an answer that is not 2xx."""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Concatenate, Generic, ParamSpec, Protocol, TypeVar, overload
from urllib.parse import quote

import httpx
from pydantic import TypeAdapter
from pydantic.alias_generators import to_camel

from datawell.client.errors import ApiError
from datawell.client.models import DatasetCoordinate, StageModel

T = TypeVar("T")
P = ParamSpec("P")
API = "/api/v1"
IDEMPOTENT = frozenset({"GET", "PUT", "DELETE"})
# A keep-alive connection the server closed just as a request went out fails like this; a
# request that may be repeated is sent again, on a new connection.
DROPPED = (httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError)
RESENDS = 2


@dataclass(frozen=True)
class Call(Generic[T]):
    """One HTTP request and how to read its answer. `path` is below the server's root; an
    absolute URL (a presigned part URL) is sent as is, without the bearer token."""

    method: str
    path: str
    result: TypeAdapter[T] | None
    json: Any = None
    params: dict[str, Any] = field(default_factory=dict)
    headers: dict[str, str] = field(default_factory=dict)
    content: bytes | None = None
    long_running: bool = False  # a model answers: no read timeout

    def request(self, http: httpx.Client | httpx.AsyncClient) -> httpx.Request:
        request = http.build_request(
            self.method,
            self.path,
            json=self.json,
            params=self.params or None,
            headers=self.headers,
            content=self.content,
        )
        if "://" in self.path:
            request.headers.pop("Authorization", None)
        if self.long_running:
            request.extensions["timeout"] = httpx.Timeout(http.timeout.connect, read=None).as_dict()
        return request

    def may_resend(self, error: httpx.TransportError, sent: int) -> bool:
        return self.method in IDEMPOTENT and isinstance(error, DROPPED) and sent <= RESENDS

    def read(self, response: httpx.Response) -> T:
        if response.is_error:
            raise error_of(response)
        if self.result is None:
            return None  # type: ignore[return-value]  # Call[None]: the operation answers no body
        return self.result.validate_json(response.content)


def error_of(response: httpx.Response) -> ApiError:
    try:
        body: Any = response.json()
    except ValueError:
        body = response.text
    return ApiError.of(response.status_code, body)


def returns(model: Any) -> TypeAdapter[Any]:
    return TypeAdapter(model)


def segment(value: str) -> str:
    return quote(value, safe="")


def dataset_path(prefix: str, owner: str, namespace: str, dataset: str) -> str:
    return f"{API}{prefix}/{segment(owner)}/{segment(namespace)}/{segment(dataset)}"


def examples_path(owner: str, namespace: str) -> str:
    return f"{API}/examples/{segment(owner)}/{segment(namespace)}"


def without_none(**values: Any) -> dict[str, Any]:
    return {k: v for k, v in values.items() if v is not None}


class AsyncSender(Protocol):
    """The `AsyncClient` as an operation sees it: used with `async with`, its calls awaited."""

    async def send(self, call: Call[Any]) -> Any: ...
    async def __aenter__(self) -> Any: ...


class Sender(Protocol):
    """The blocking `Client` as an operation sees it: used with `with`."""

    def send(self, call: Call[Any]) -> Any: ...
    def __enter__(self) -> Any: ...


class operation(Generic[P, T]):
    def __init__(self, build: Callable[Concatenate[Any, P], Call[T]]) -> None:
        self.build = build
        self.__doc__ = build.__doc__

    @overload
    def __get__(self, client: AsyncSender, owner: Any) -> Callable[P, Awaitable[T]]: ...

    @overload
    def __get__(self, client: Sender, owner: Any) -> Callable[P, T]: ...

    def __get__(self, client: Any, owner: Any) -> Any:
        @functools.wraps(self.build)
        def send(*args: Any, **kwargs: Any) -> Any:
            return client.send(self.build(client, *args, **kwargs))

        return send


def build_spec_body(sources: list[DatasetCoordinate], destination: DatasetCoordinate, payload: str) -> dict[str, Any]:
    return {
        "sources": [s.model_dump(by_alias=True) for s in sources],
        "destination": destination.model_dump(by_alias=True),
        "code": {"payload": payload},
    }


def autorag_body(namespace: str, query: str, **options: Any) -> dict[str, Any]:
    """The AutoRAG request; `models` may map stages to StageModel or plain dicts."""
    body: dict[str, Any] = {"namespace": namespace, "query": query}
    for name, value in options.items():
        if value is None:
            continue
        if name == "models":
            value = {
                stage: choice.model_dump(exclude_none=True) if isinstance(choice, StageModel) else choice
                for stage, choice in value.items()
            }
        body[to_camel(name)] = value
    return body


EXPORT_FORMATS = ("jsonl", "csv", "parquet")


def rows_params(columns: list[str] | None, filter: str | None) -> dict[str, Any]:
    return without_none(columns=",".join(columns) if columns is not None else None, filter=filter)


def export_call(
    owner: str, namespace: str, dataset: str, format: str, columns: list[str] | None, filter: str | None
) -> tuple[str, dict[str, Any]]:
    """The path and query of a whole-file export."""
    if format not in EXPORT_FORMATS:
        raise ValueError(f"format must be one of {', '.join(EXPORT_FORMATS)}")
    return dataset_path("/data", owner, namespace, dataset) + "/rows", rows_params(columns, filter) | {"format": format}


def connection_options(server: str, token: str | None, timeout: float) -> dict[str, Any]:
    """httpx options shared by both clients. `server` is the service's root address; a
    trailing `/api/v1` is accepted too."""
    root = server.rstrip("/").removesuffix(API)
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return {"base_url": root, "headers": headers, "timeout": httpx.Timeout(timeout, connect=10.0)}
