from __future__ import annotations

import httpx
import pytest

from datawell.errors import WebSearchError
from datawell.tools.web import HttpWebSearch, WebResult


def searx(handler: httpx.MockTransport) -> HttpWebSearch:
    return HttpWebSearch("http://search.test/search", transport=handler)


async def test_results_are_read_from_the_searxng_json_api() -> None:
    seen: list[httpx.URL] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request.url)
        results = [{"title": f"t{i}", "url": f"https://e.org/{i}", "content": f"c{i}"} for i in range(4)]
        return httpx.Response(200, json={"query": "x", "results": results})

    found = await searx(httpx.MockTransport(answer)).search("oslo rain", limit=2)

    assert found == [
        WebResult(title="t0", url="https://e.org/0", snippet="c0"),
        WebResult(title="t1", url="https://e.org/1", snippet="c1"),
    ]
    assert seen[0].params["q"] == "oslo rain" and seen[0].params["format"] == "json"


@pytest.mark.parametrize(
    ("response", "message"),
    [
        (httpx.Response(503, text="busy"), "web search failed: Server error '503 Service Unavailable'"),
        (httpx.Response(200, text="<html>not json</html>"), "web search answered something that is not a result list"),
        (httpx.Response(200, json={"results": [{"title": "no url"}]}), "not a result list"),
    ],
)
async def test_provider_failures_are_web_search_errors(response: httpx.Response, message: str) -> None:
    with pytest.raises(WebSearchError) as caught:
        await searx(httpx.MockTransport(lambda _request: response)).search("x", limit=5)
    assert caught.value.message.startswith(message) or message in caught.value.message
    assert caught.value.mapping.http_status == 502


async def test_an_unreachable_provider_is_a_web_search_error() -> None:
    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("connection refused", request=request)

    with pytest.raises(WebSearchError, match="web search failed: connection refused"):
        await searx(httpx.MockTransport(refuse)).search("x", limit=5)
