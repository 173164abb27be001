"""A keep-alive connection the server dropped (a busy server's keep-alive timeout) does not
fail a request that may be sent again; one that may not is not repeated."""

from __future__ import annotations

import httpx
import pytest

from datawell.client import Client

HEALTH = {"status": "ok", "version": "0", "database": "sqlite"}


def flaky(drops: int) -> tuple[httpx.MockTransport, list[str]]:
    seen: list[str] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request.method)
        if len(seen) <= drops:
            raise httpx.ReadError("[Errno 104] Connection reset by peer", request=request)
        return httpx.Response(200, json=HEALTH)

    return httpx.MockTransport(answer), seen


def test_an_idempotent_request_is_sent_again_on_a_dropped_connection() -> None:
    transport, seen = flaky(drops=2)
    with Client("http://server", transport=transport) as client:
        assert client.health().status == "ok"
    assert seen == ["GET", "GET", "GET"]


def test_a_post_is_not_repeated_and_a_dead_connection_gives_up() -> None:
    transport, seen = flaky(drops=1)
    with Client("http://server", "t", transport=transport) as client, pytest.raises(httpx.ReadError):
        client.retry("1")
    assert seen == ["POST"]
    transport, seen = flaky(drops=10)
    with Client("http://server", transport=transport) as client, pytest.raises(httpx.ReadError):
        client.health()
    assert len(seen) == 3
