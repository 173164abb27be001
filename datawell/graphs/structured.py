"""One structured-output call: the parsed pydantic answer (or None when the reply did not
fit the schema), the raw reply and the tokens it spent."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Generic, Literal, TypeVar, cast

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage
from pydantic import BaseModel, ConfigDict, Field, create_model

from datawell.graphs import tokens

T = TypeVar("T", bound=BaseModel)


@dataclass(frozen=True)
class Structured(Generic[T]):
    parsed: T | None
    problem: str  # why the reply did not parse; empty when it did
    tokens: int


# At most this many names in a reply's `columns` (a model that never stops listing is cut off).
MAX_NAMED_COLUMNS = 12


async def ask_structured(
    model: BaseChatModel, schema: type[T], messages: list[BaseMessage], columns: Sequence[str] = (), grammar: str = ""
) -> Structured[T]:
    """Ask for an answer in `schema`. With `columns`, the reply first names the columns it
    will use, each one of `columns` (see `naming_columns`); the names are then dropped.
    With `grammar` (GBNF of the whole reply, `tools/grammar.py`), a model that decodes under a
    grammar (the embedded one) is held to it instead of the schema; any other is not sent it."""
    asked = naming_columns(schema, tuple(columns)) if columns else schema
    held = {"grammar": grammar} if grammar and getattr(model, "takes_grammar", False) else {}
    reply = cast(dict[str, Any], await model.with_structured_output(asked, include_raw=True, **held).ainvoke(messages))
    parsed = reply.get("parsed")
    if isinstance(parsed, asked) and asked is not schema:
        parsed = schema.model_validate(parsed.model_dump(exclude={"columns"}))
    problem = "" if isinstance(parsed, schema) else str(reply.get("parsing_error") or "no structured answer")
    return Structured(
        parsed=parsed if isinstance(parsed, schema) else None,
        problem=problem,
        tokens=tokens.used(messages, reply.get("raw")),
    )


@lru_cache(maxsize=64)
def naming_columns(schema: type[BaseModel], columns: tuple[str, ...]) -> type[BaseModel]:
    """`schema` with a first field `columns`: the `table.column` names the answer will use,
    each one of `columns`. A model with constrained output (the embedded one turns the JSON
    schema into a grammar) cannot write a name outside the catalog there, and writes its
    query after naming them, so the query tends to take each column from its own table."""
    names = Literal[columns]  # type: ignore[valid-type]
    fields: dict[str, Any] = {
        "columns": (
            list[names],
            Field(default_factory=list, max_length=MAX_NAMED_COLUMNS, description="table.column names the query uses"),
        )
    }
    fields |= {name: (field.annotation, field) for name, field in schema.model_fields.items()}
    # Required in the schema (so a grammar makes the model write it first) but not when
    # parsing: a reply without it still parses, the names only guide the model.
    config = ConfigDict(json_schema_extra=lambda sent: sent.update(required=["columns", *sent.get("required", [])]))
    return cast(type[BaseModel], create_model(schema.__name__, __doc__=schema.__doc__, __config__=config, **fields))
