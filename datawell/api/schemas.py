"""Shapes shared by several resources."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field
from pydantic.alias_generators import to_camel


class ApiModel(BaseModel):
    """Wire models: camelCase on the wire, snake_case in Python."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")


class SubErrorBody(BaseModel):
    code: str
    message: str


class ErrorResponse(BaseModel):
    error_code: str = Field(examples=["UNAUTHORIZED"])
    message: str
    error_message: str = ""
    sub_errors: list[SubErrorBody] = Field(default_factory=list)


def _whole(value: Any) -> Any:
    """JSON Schema counts 3.0 as an integer; bodies are validated strictly (no `true` for a
    number), so a whole float is taken as the integer it is."""
    return int(value) if isinstance(value, float) and value.is_integer() else value


WholeNumber = Annotated[int, BeforeValidator(_whole)]
