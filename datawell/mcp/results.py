"""What a tool call answers: its output as text plus structured content, or a tool error.

Every failure a tool meets becomes a tool error here, and only here: a Datawell error keeps
its error code and message (FORBIDDEN for a namespace the caller may not read, QUERY_ERROR
for a query the checker refused, with its sub-errors), a run that failed keeps the code the
run reported, and anything unexpected is logged and answered with a message that holds no
internals. Tool errors are results with `isError`, not JSON-RPC errors, so the calling model
reads them and can correct itself (MCP: "Tools", error handling). Reading a resource has no
such channel: its failures are JSON-RPC errors (`protocol_error`), with the Datawell error
code in `data.errorCode`."""

from __future__ import annotations

import json
import logging
from typing import Any

from mcp.shared.exceptions import MCPError
from mcp_types import CallToolResult, TextContent
from pydantic import BaseModel, ConfigDict, ValidationError
from pydantic.alias_generators import to_camel

from datawell.errors import ERRORS, UNEXPECTED, Busy, DatawellError, InvalidInput, SubError

log = logging.getLogger(__name__)

INTERNAL_MESSAGE = "the tool failed unexpectedly; the service log has the details"


class WireModel(BaseModel):
    """Tool arguments and results: camelCase on the wire, as everywhere in Datawell's API."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")


def structured(output: WireModel) -> dict[str, Any]:
    return output.model_dump(mode="json", by_alias=True)


def tool_result(output: WireModel, *, lead: str | None = None) -> CallToolResult:
    """The output as structured content and, as MCP asks of structured results, as JSON text;
    `lead` is a plain-language text shown first (the assistant's answer)."""
    content = structured(output)
    blocks = [TextContent(text=json.dumps(content, ensure_ascii=False))]
    if lead is not None:
        blocks.insert(0, TextContent(text=lead))
    return CallToolResult(content=blocks, structured_content=content)


def error_result(code: str, message: str, sub_errors: list[SubError] | None = None, **extra: Any) -> CallToolResult:
    """A tool error: the code, the message and each sub-error in the text, which every client
    shows the model. No structured content: it would have to match the tool's `outputSchema`,
    and clients that check it (the TypeScript SDK does, errors included) would drop the whole
    result. The same facts, for programs, are in `_meta` (`errorCode`, `subErrors`, and
    `extra`: BUSY's `retryAfterSeconds`), as A2A carries them in a message's `metadata`."""
    subs = sub_errors or []
    text = "\n".join([f"{code}: {message}", *(f"- {s.message}" for s in subs)])
    return CallToolResult(
        content=[TextContent(text=text)],
        is_error=True,
        meta={"errorCode": code, "subErrors": [{"code": s.code, "message": s.message} for s in subs], **extra},
    )


def failure_result(exc: Exception) -> CallToolResult:
    """The one mapping from exceptions to tool errors, through `datawell.errors.ERRORS`."""
    if isinstance(exc, Busy):
        return error_result(exc.error_code, exc.message, retryAfterSeconds=exc.retry_after_seconds)
    if isinstance(exc, DatawellError):
        return error_result(exc.error_code, exc.message, exc.sub_errors)
    if isinstance(exc, ValidationError):
        subs = [
            SubError(e["type"], f"{'.'.join(str(p) for p in e['loc']) or 'arguments'}: {e['msg']}")
            for e in exc.errors(include_url=False)
        ]
        return error_result(ERRORS[InvalidInput].code, "the tool arguments are invalid", subs)
    log.exception("MCP tool failed", exc_info=exc)
    return error_result(UNEXPECTED.code, INTERNAL_MESSAGE)


def protocol_error(exc: Exception) -> MCPError:
    """A failed resource read: the JSON-RPC code of the error's row in `ERRORS`."""
    if isinstance(exc, DatawellError):
        return MCPError(exc.mapping.json_rpc, exc.message, data={"errorCode": exc.error_code})
    log.exception("MCP resource read failed", exc_info=exc)
    return MCPError(UNEXPECTED.json_rpc, INTERNAL_MESSAGE, data={"errorCode": UNEXPECTED.code})
