"""A limit on request bodies, before any route reads one: a 200 MB JSON body once took the
service to 8.6 GB. Bodies past `max_bytes` get a 422 ErrorResponse naming the limit; the one
route that takes large bodies (the local object store's part uploads) streams its own and
checks their size against the part's announced size."""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from datawell.api.errors import error_response
from datawell.errors import InvalidInput, SubError


class BodyLimit:
    def __init__(self, app: ASGIApp, *, max_bytes: int, streamed: tuple[str, ...]) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.streamed = streamed  # paths whose routes stream their bodies

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] in self.streamed:
            await self.app(scope, receive, send)
            return
        declared = dict(scope["headers"]).get(b"content-length", b"")
        if declared.isdigit() and int(declared) > self.max_bytes:
            await self._refuse(scope, receive, send)
            return
        chunks: list[bytes] = []
        size = 0
        more = True
        while more:  # read it all here, up to the limit, and hand it on whole
            message = await receive()
            if message["type"] != "http.request":
                await self.app(scope, _replay([], message, receive), send)
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_bytes:
                await self._refuse(scope, receive, send)
                return
            chunks.append(chunk)
            more = message.get("more_body", False)
        await self.app(scope, _replay(chunks, None, receive), send)

    async def _refuse(self, scope: Scope, receive: Receive, send: Send) -> None:
        text = f"the request body is larger than the limit of {self.max_bytes:,} bytes (setting max_request_bytes)"
        error = InvalidInput(text, sub_errors=[SubError("body_too_large", text)])
        await error_response(error, headers={"Connection": "close"})(scope, receive, send)


def _replay(chunks: list[bytes], last: Message | None, receive: Receive) -> Receive:
    pending: list[Message] = [{"type": "http.request", "body": b"".join(chunks), "more_body": False}]
    if last is not None:
        pending = [last]

    async def replay() -> Message:
        return pending.pop(0) if pending else await receive()

    return replay
