"""Web search for the assistant: a provider interface and one HTTP implementation.

The HTTP provider speaks the JSON API of SearXNG (`GET <url>?q=...&format=json` answering
`{"results": [{"title", "url", "content"}, ...]}`), a self-hostable metasearch engine, so a
deployment can point `DATAWELL_WEB_SEARCH_URL` at its own instance. Off when no URL is set."""

from __future__ import annotations

from typing import Protocol

import httpx
from pydantic import BaseModel, ValidationError

from datawell.errors import WebSearchError


class WebResult(BaseModel):
    title: str
    url: str
    snippet: str = ""


class WebSearch(Protocol):
    async def search(self, query: str, limit: int) -> list[WebResult]: ...


class _SearxResult(BaseModel):
    title: str = ""
    url: str
    content: str = ""


class _SearxAnswer(BaseModel):
    results: list[_SearxResult]


class HttpWebSearch:
    def __init__(
        self, url: str, timeout_seconds: float = 10.0, transport: httpx.AsyncBaseTransport | None = None
    ) -> None:
        self.url = url
        self.timeout_seconds = timeout_seconds
        self.transport = transport

    async def search(self, query: str, limit: int) -> list[WebResult]:
        try:
            async with httpx.AsyncClient(timeout=self.timeout_seconds, transport=self.transport) as http:
                response = await http.get(self.url, params={"q": query, "format": "json"})
                response.raise_for_status()
                answer = _SearxAnswer.model_validate_json(response.content)
        except httpx.HTTPError as exc:
            raise WebSearchError(f"web search failed: {exc}") from exc
        except ValidationError as exc:
            raise WebSearchError("web search answered something that is not a result list") from exc
        return [WebResult(title=r.title, url=r.url, snippet=r.content) for r in answer.results[:limit]]
