"""`python -m tests.fake_openai PORT [--delay SECONDS]`: an OpenAI-compatible chat endpoint on loopback that
answers every request without a model, for running a real `datawell serve` end to end (the
A2A TCK run in docs/a2a.md). Point litellm at it with `OPENAI_API_BASE=http://127.0.0.1:PORT/v1`
and a model such as `openai/fake`.

A forced tool call or a JSON-schema response gets arguments made from the schema: `query`
fields get `SELECT 1 AS one` (a query every namespace can run), list fields one item, other
text fields a short placeholder. Anything else gets a fixed sentence. `--delay` makes every
answer take that long, like a slow model (to check `bench/load.py`). Never part of the product."""

from __future__ import annotations

import argparse
import asyncio
import json
import time
import uuid
from collections.abc import AsyncIterator
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

ANSWER = "This is a canned answer from the fake model."
QUERY = "SELECT 1 AS one"


def example(schema: dict[str, Any], defs: dict[str, Any], name: str = "") -> Any:
    """A value that fits `schema`, for the field `name`."""
    if "$ref" in schema:
        return example(defs[schema["$ref"].rsplit("/", 1)[-1]], defs, name)
    if "enum" in schema:
        return schema["enum"][0]
    for key in ("anyOf", "oneOf"):
        if key in schema:
            options = [s for s in schema[key] if s.get("type") != "null"]
            return example(options[0], defs, name) if options else None
    kind = schema.get("type")
    if kind == "object":
        properties = schema.get("properties", {})
        return {field: example(sub, defs, field) for field, sub in properties.items()}
    if kind == "array":
        return [example(schema.get("items", {}), defs, name)]
    if kind == "integer":
        return 1
    if kind == "number":
        return 1.0
    if kind == "boolean":
        return False
    if name == "query":
        return QUERY
    if name in ("refusal", "error"):
        return ""
    return f"fake {name or 'text'}"


def reply(body: dict[str, Any]) -> dict[str, Any]:
    """The assistant message for a chat request."""
    tools = body.get("tools") or []
    if tools:
        function = tools[0]["function"]
        parameters = function.get("parameters", {})
        arguments = example(parameters, parameters.get("$defs", {}))
        call = {"id": f"call_{uuid.uuid4().hex[:8]}", "type": "function",
                "function": {"name": function["name"], "arguments": json.dumps(arguments)}}  # fmt: skip
        return {"role": "assistant", "content": None, "tool_calls": [call]}
    response_format = body.get("response_format") or {}
    if response_format.get("type") == "json_schema":
        schema = response_format["json_schema"]["schema"]
        return {"role": "assistant", "content": json.dumps(example(schema, schema.get("$defs", {})))}
    return {"role": "assistant", "content": ANSWER}


DELAY_SECONDS = 0.0


async def completions(request: Request) -> Response:
    body = await request.json()
    await asyncio.sleep(DELAY_SECONDS)
    message = reply(body)
    base = {"id": f"chatcmpl-{uuid.uuid4().hex[:8]}", "created": int(time.time()), "model": body.get("model", "fake")}
    usage = {"prompt_tokens": 10, "completion_tokens": 10, "total_tokens": 20}
    finish = "tool_calls" if message.get("tool_calls") else "stop"
    if not body.get("stream"):
        choice = {"index": 0, "message": message, "finish_reason": finish}
        return JSONResponse({**base, "object": "chat.completion", "choices": [choice], "usage": usage})

    async def chunks() -> AsyncIterator[str]:
        delta = dict(message)
        if delta.get("tool_calls"):
            delta["tool_calls"] = [{**call, "index": 0} for call in delta["tool_calls"]]
        first = {"index": 0, "delta": delta, "finish_reason": None}
        last = {"index": 0, "delta": {}, "finish_reason": finish}
        for choice in (first, last):
            yield f"data: {json.dumps({**base, 'object': 'chat.completion.chunk', 'choices': [choice]})}\n\n"
        yield "data: [DONE]\n\n"

    return StreamingResponse(chunks(), media_type="text/event-stream")


app = Starlette(routes=[Route("/v1/chat/completions", completions, methods=["POST"])])

if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("port", type=int)
    parser.add_argument("--delay", type=float, default=0.0, help="seconds every answer takes")
    options = parser.parse_args()
    DELAY_SECONDS = options.delay
    uvicorn.run(app, host="127.0.0.1", port=options.port, log_level="warning")
