"""One structured-output call: the parsed pydantic answer (or None when the reply did not
fit the schema), the raw reply and the tokens it spent."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Generic, TypeVar, cast

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage
from pydantic import BaseModel

from datawell.graphs import tokens

T = TypeVar("T", bound=BaseModel)


@dataclass(frozen=True)
class Structured(Generic[T]):
    parsed: T | None
    problem: str  # why the reply did not parse; empty when it did
    tokens: int


async def ask_structured(model: BaseChatModel, schema: type[T], messages: list[BaseMessage]) -> Structured[T]:
    reply = cast(dict[str, Any], await model.with_structured_output(schema, include_raw=True).ainvoke(messages))
    parsed = reply.get("parsed")
    problem = "" if isinstance(parsed, schema) else str(reply.get("parsing_error") or "no structured answer")
    return Structured(
        parsed=parsed if isinstance(parsed, schema) else None,
        problem=problem,
        tokens=tokens.used(messages, reply.get("raw")),
    )
