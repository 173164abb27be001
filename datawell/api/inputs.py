"""Reading a request's body and query strictly, for the routes (`api/routing.py`): JSON by
pydantic's strict parser, no field a model does not declare, no NUL character, no query
parameter given twice; every refusal a 422 (415 for a body that is not JSON) naming the field."""

from __future__ import annotations

from contextlib import suppress
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError
from pydantic_core import from_json
from starlette.requests import Request

from datawell.api.errors import validation_error
from datawell.client.models import Model as WireModel
from datawell.errors import InvalidInput, SubError, UnsupportedMediaType

M = TypeVar("M", bound=BaseModel)


async def parse_body(request: Request, model: type[M], *, text_field: str | None = None) -> M:
    """The body validated strictly as JSON (`true` is no integer, `"3"` no number) by
    pydantic's parser, whose nesting limit turns a body nested thousands deep into a 422;
    with `text_field`, a text/plain body is that field's value. A body model that forbids
    unknown fields forbids them in the wire models it nests too (`forbid_undeclared`)."""
    media_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if text_field is not None and media_type == "text/plain":
        try:
            text = (await request.body()).decode()
        except UnicodeDecodeError:
            raise InvalidInput("the body is not UTF-8 text") from None
        try:
            return forbid_undeclared(model.model_validate({text_field: text.strip()}))
        except ValidationError as exc:
            raise validation_error(exc) from None
    if media_type != "application/json":
        raise UnsupportedMediaType(f"send the body as application/json (got {media_type or 'no content type'})")
    raw = await request.body()
    refuse_nul_in_json(raw, "body")
    try:
        return forbid_undeclared(model.model_validate_json(raw or b"null", strict=True))
    except ValidationError as exc:
        invalid = [e["msg"] for e in exc.errors(include_url=False) if e["type"] == "json_invalid"]
        if invalid:
            raise InvalidInput(
                "the body is not valid JSON", sub_errors=[SubError("invalid_json", invalid[0])]
            ) from None
        raise validation_error(exc) from None


def forbid_undeclared(body: M) -> M:
    """422 naming a field that a wire model nested in a forbidding body kept: the client's
    models (`datawell.client.models`) keep unknown fields (`extra="allow"`), and a request
    takes none (docs/decisions.md, "One source for wire models"). A server model that allows
    them on purpose (the DataLinks SDK's `InferStep`) keeps them."""
    if body.model_config.get("extra") != "forbid":
        return body
    stack: list[tuple[str, Any]] = [("", body)]
    while stack:
        path, value = stack.pop()
        if isinstance(value, list) and value and isinstance(value[0], BaseModel):
            stack.extend((f"{path}.{index}", item) for index, item in enumerate(value))
        elif isinstance(value, BaseModel):
            if isinstance(value, WireModel) and value.model_extra:
                text = f"{path}.{next(iter(value.model_extra))}".lstrip(".") + ": Extra inputs are not permitted"
                raise InvalidInput("the request is invalid", sub_errors=[SubError("extra_forbidden", text)])
            for name, declared in type(value).model_fields.items():
                stack.append((f"{path}.{declared.alias or name}", getattr(value, name)))
    return body


def refuse_nul_in_json(raw: bytes, path: str = "") -> None:
    """`refuse_nul` for a JSON body as it arrived (REST, MCP and A2A alike). Only the JSON
    escape can put a NUL in a string, so most bodies are never parsed here; one that is not
    JSON is left to its own parser to refuse."""
    if b"\\u0000" not in raw:
        return
    with suppress(ValueError):
        refuse_nul(from_json(raw), path)


def refuse_nul(values: Any, path: str) -> None:
    """422 naming the first field with a NUL character: PostgreSQL stores none, in text or JSON."""
    stack: list[tuple[str, Any]] = [(path, values)]
    while stack:
        where, value = stack.pop()
        if isinstance(value, str):
            if "\x00" in value:
                text = f"{where}: NUL characters (\\u0000) are not allowed"
                raise InvalidInput("the request is invalid", sub_errors=[SubError("nul_character", text)])
        elif isinstance(value, dict) or hasattr(value, "items"):
            stack.extend((f"{where}.{k}" if where else str(k), v) for k, v in value.items())
            stack.extend((f"{where} key", k) for k in value)
        elif isinstance(value, list):
            stack.extend((f"{where}.{i}", v) for i, v in enumerate(value))


def parse_query(request: Request, model: type[M]) -> M:
    """The query as `model`; every parameter is one value, so one given twice is refused
    rather than read as its last value."""
    names = [name for name, _ in request.query_params.multi_items()]
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise InvalidInput(
            "a query parameter is given more than once",
            sub_errors=[
                SubError("repeated", f"query.{name}: given {names.count(name)} times; give it once")
                for name in repeated
            ],
        )
    try:
        return model.model_validate_strings(dict(request.query_params))
    except ValidationError as exc:
        raise validation_error(exc, prefix="query") from None
