"""A pytest plugin for running the A2A TCK (a2aproject/a2a-tck) against Datawell; see
docs/a2a.md. The TCK has no option for credentials, and Datawell needs two things every call
carries: a bearer token (`A2A_TCK_TOKEN`) and the namespace to ask about
(`A2A_TCK_NAMESPACE`, put in `params.message.metadata.namespace` where a message lacks one).
Load it with `-p tests.agents.tck_plugin`. Never part of the product."""

from __future__ import annotations

import json
import os
from typing import Any

import httpx

TOKEN = os.environ.get("A2A_TCK_TOKEN", "")
NAMESPACE = os.environ.get("A2A_TCK_NAMESPACE", "")
_send = httpx.Client.send


def _with_namespace(body: bytes) -> bytes:
    try:
        payload = json.loads(body)
    except ValueError:
        return body
    params = payload.get("params") if isinstance(payload, dict) else None
    message = params.get("message") if isinstance(params, dict) else None
    if not isinstance(message, dict) or "namespace" in (message.get("metadata") or {}):
        return body
    message["metadata"] = {**(message.get("metadata") or {}), "namespace": NAMESPACE}
    return json.dumps(payload).encode()


def send(self: httpx.Client, request: httpx.Request, **kwargs: Any) -> httpx.Response:
    if TOKEN and "authorization" not in request.headers:
        request.headers["Authorization"] = f"Bearer {TOKEN}"
    if NAMESPACE and request.method == "POST":
        body = _with_namespace(request.read())
        headers = [(k, v) for k, v in request.headers.multi_items() if k.lower() != "content-length"]
        request = httpx.Request(request.method, request.url, headers=headers, content=body)
    return _send(self, request, **kwargs)


httpx.Client.send = send  # type: ignore[method-assign]
