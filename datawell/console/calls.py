"""The REST API, called in process with the session's token.

Whatever the API offers (datasets, uploads, ingestion attempts, clearing, curation, links,
BuildSpecs) the console asks the API for, through the app's own routes: the same
validation, access rules and service code run, and a refusal comes back as the API's
ErrorResponse, which the page shows. Only what the API has no route for (the namespaces a
user can read, a page of rows, the user's own tokens, eval reports), the streamed ask run and
the row files (streamed, which the in-process transport would buffer) are read from the layers
below directly."""

from __future__ import annotations

from typing import Any

import httpx
from starlette.requests import Request
from starlette.types import Receive, Scope, Send

API_PREFIX = "/api/v1"


class ApiError(Exception):
    """An ErrorResponse from the API."""

    def __init__(self, status: int, body: dict[str, Any]) -> None:
        self.status = status
        self.error_code = str(body.get("errorCode") or body.get("error_code") or "ERROR")
        self.message = str(body.get("message") or "the request failed")
        self.problems = [str(s.get("message", "")) for s in body.get("subErrors") or body.get("sub_errors") or []]
        super().__init__(self.message)


class Api:
    def __init__(self, request: Request, token: str) -> None:
        app = request.app
        state = dict(request.scope.get("state", {}))

        async def with_state(scope: Scope, receive: Receive, send: Send) -> None:
            scope["state"] = dict(state)
            await app(scope, receive, send)

        self._transport = httpx.ASGITransport(app=with_state)
        self._headers = {"Authorization": f"Bearer {token}"}

    async def call(
        self,
        method: str,
        path: str,
        *,
        json: Any = None,
        params: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
    ) -> Any:
        async with httpx.AsyncClient(transport=self._transport, base_url="http://console.internal") as client:
            response = await client.request(
                method, API_PREFIX + path, json=json, params=params, headers={**self._headers, **(headers or {})}
            )
        if response.status_code >= 400:
            try:
                body = response.json()
            except ValueError:
                body = {"message": response.text}
            raise ApiError(response.status_code, body if isinstance(body, dict) else {})
        return response.json() if response.content else None

    async def get(self, path: str, **params: Any) -> Any:
        return await self.call("GET", path, params={k: v for k, v in params.items() if v is not None})

    async def post(self, path: str, body: Any = None) -> Any:
        return await self.call("POST", path, json=body if body is not None else {})

    async def put(self, path: str, body: Any, **params: Any) -> Any:
        return await self.call("PUT", path, json=body, params={k: v for k, v in params.items() if v is not None})

    async def delete(self, path: str) -> Any:
        return await self.call("DELETE", path)
