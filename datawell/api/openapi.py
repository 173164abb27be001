"""The OpenAPI 3.1 document, generated from the declared operations and their models."""

from __future__ import annotations

import copy
import re
from collections import Counter
from typing import Any, Literal

from pydantic import BaseModel, TypeAdapter
from pydantic.json_schema import models_json_schema

from datawell import __version__
from datawell.api.routing import Operation
from datawell.api.schemas import ErrorResponse
from datawell.storage.users import NAME_PATTERN

UUID_SCHEMA = {"type": "string", "format": "uuid", "pattern": "^[0-9a-fA-F]{8}-?([0-9a-fA-F]{4}-?){3}[0-9a-fA-F]{12}$"}
NAME_SCHEMA = {"type": "string", "pattern": NAME_PATTERN.pattern}
# What the endpoints check of their path parameters (and answer 422 for otherwise).
PATH_SCHEMAS: dict[str, dict[str, Any]] = {
    "username": NAME_SCHEMA,
    "namespace": NAME_SCHEMA,
    "datasetName": NAME_SCHEMA,
    "ingestionId": UUID_SCHEMA,
    "buildSpecId": UUID_SCHEMA,
    "linkId": UUID_SCHEMA,
    "exampleId": UUID_SCHEMA,
    "runId": UUID_SCHEMA,
}
# The If-Match the BuildSpec update reads: `*` or a version, as an ETag or a bare number.
IF_MATCH_PATTERN = r'^\s*(\*|(W/)?"?[0-9]+"?)\s*$'
HEADER_SCHEMAS: dict[str, dict[str, Any]] = {"If-Match": {"type": "string", "pattern": IF_MATCH_PATTERN}}

REF = "#/components/schemas/{model}"
ERROR_TEXT = {
    401: "Unauthorized: the token is missing or invalid",
    403: "Forbidden: the caller has no access to the resource",
    404: "Not found",
    409: "Conflict with the current state of the resource",
    415: "Unsupported media type: send application/json",
    422: "Unprocessable content: sub_errors names each bad field",
}


def build_openapi(mounted: list[tuple[str, list[Operation]]], auth_url: str) -> dict[str, Any]:
    """`mounted` pairs each path prefix with the operations mounted under it. `servers` is
    filled in per request (`datawell.api.system.openapi`), from the address clients use."""
    operations = [op for _, ops in mounted for op in ops]
    models = _models(operations)
    keyed: list[tuple[type[BaseModel], Literal["validation"]]] = [(m, "validation") for m in models]
    refs, defs = models_json_schema(keyed, ref_template=REF) if keyed else ({}, {"$defs": {}})
    schemas = defs.get("$defs", {})
    paths: dict[str, dict[str, Any]] = {}
    for prefix, ops in mounted:
        for op in ops:
            paths.setdefault(prefix + op.path, {})[op.method.lower()] = _operation(op, refs, schemas)
    # Operations hold module-level schemas (MCP's body, header schemas): mark a copy, or a second
    # app in one process would mark them again (a `not NUL` on an id that may be an integer).
    paths = copy.deepcopy(paths)
    _no_nul(schemas)
    _no_nul(
        [p for ops in paths.values() for op in ops.values() for p in op.get("parameters", []) if p["in"] != "header"]
    )
    _no_nul([op.get("requestBody", {}) for ops in paths.values() for op in ops.values()])
    schemas[JSON_VALUE] = JSON_VALUE_SCHEMA
    _named_by_title(schemas, paths)
    return {
        "openapi": "3.1.0",
        "info": {"title": "Datawell", "version": __version__, "description": "An open data platform for agents."},
        "paths": paths,
        "components": {
            "schemas": schemas,
            "securitySchemes": {
                "bearerAuth": {"type": "http", "scheme": "bearer", "bearerFormat": "JWT"},
                "openId": {
                    "type": "oauth2",
                    "flows": {"implicit": {"authorizationUrl": auth_url, "scopes": {"openid": "OpenID Connect"}}},
                },
            },
        },
    }


NO_NUL = "^[^\\u0000]*$"
# A free-form value (rows, samples, options) as routing takes it: any JSON without a NUL
# character in a string or a key, at any depth.
JSON_VALUE = "JsonValue"
JSON_VALUE_REF = {"$ref": REF.format(model=JSON_VALUE)}
JSON_VALUE_SCHEMA: dict[str, Any] = {
    "description": "Any JSON value whose strings and keys hold no NUL character.",
    "anyOf": [
        {"type": "string", "pattern": NO_NUL},
        {"type": "number"},
        {"type": "boolean"},
        {"type": "null"},
        {"type": "array", "items": JSON_VALUE_REF},
        {"type": "object", "propertyNames": {"pattern": NO_NUL}, "additionalProperties": JSON_VALUE_REF},
    ],
}
# What makes a schema say something of its value; a schema with none of these takes any value.
CONSTRAINING = {"type", "anyOf", "oneOf", "allOf", "$ref", "enum", "const", "not", "properties", "items"}


def _free_form(schema: Any) -> bool:
    return schema is True or (isinstance(schema, dict) and not CONSTRAINING & schema.keys())


def _no_nul(node: Any) -> None:
    """Every string and key in `node` (schemas, parameters) says what routing refuses: NUL
    characters; a free-form value becomes a `JsonValue`, which says the same at any depth."""
    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, dict):
            named = item.get("type")  # a name, a list of names, or a property called "type"
            types = set(named) if isinstance(named, list) else {named} if isinstance(named, str) else set()
            if "string" in types and not {"enum", "const", "format"} & item.keys():
                if "pattern" in item:
                    item.setdefault("not", {"pattern": "\\u0000"})
                else:
                    item["pattern"] = NO_NUL
            if "object" in types:
                item.setdefault("propertyNames", {"pattern": NO_NUL})
                # unstated additional properties take any value: say "any value without a NUL"
                if _free_form(item.get("additionalProperties", True)):
                    item["additionalProperties"] = JSON_VALUE_REF
            if _free_form(item.get("items")):
                item["items"] = JSON_VALUE_REF
            for name, sub in (item.get("properties") or {}).items():
                if _free_form(sub):
                    item["properties"][name] = {**sub, **JSON_VALUE_REF}
            stack.extend(item.values())


def _named_by_title(schemas: dict[str, Any], paths: dict[str, Any]) -> None:
    """A schema is named by its title where the two differ: a wire model keeps its client
    name in Python (`Dataset`) and its document name (`DatasetResponse`) as its title."""
    titles = Counter(schema.get("title") for schema in schemas.values())
    renamed = {
        name: schema["title"]
        for name, schema in schemas.items()
        if schema.get("title", name) != name and titles[schema["title"]] == 1 and schema["title"] not in schemas
    }
    for old, new in renamed.items():
        schemas[new] = schemas.pop(old)
    refs = {REF.format(model=old): REF.format(model=new) for old, new in renamed.items()}
    stack: list[Any] = [schemas, paths]
    while stack:
        item = stack.pop()
        if isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, dict):
            if item.get("$ref") in refs:
                item["$ref"] = refs[item["$ref"]]
            stack.extend(item.values())


def _models(operations: list[Operation]) -> list[type[BaseModel]]:
    found: list[type[BaseModel]] = [ErrorResponse]
    for op in operations:
        for candidate in (op.body, op.query, op.response):
            if isinstance(candidate, type) and issubclass(candidate, BaseModel) and candidate not in found:
                found.append(candidate)
    return found


def _schema(model: Any, refs: dict[Any, Any], schemas: dict[str, Any]) -> dict[str, Any]:
    """A reference to a model's schema; for other types (`list[Model]`) their schema, the
    models they use moved into `schemas` where the references point."""
    if (model, "validation") in refs:
        return refs[(model, "validation")]
    schema = TypeAdapter(model).json_schema(ref_template=REF)
    schemas.update(schema.pop("$defs", {}))
    return schema


def _operation(op: Operation, refs: dict[Any, Any], schemas: dict[str, Any]) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "operationId": f"{op.tag}.{op.endpoint.__name__}",
        "summary": op.summary,
        "description": op.description,
        "tags": [op.tag],
        "security": [] if op.public else [{"bearerAuth": []}, {"openId": ["openid"]}],
        "parameters": _parameters(op),
        "responses": {},
    }
    if op.body is not None:
        body = _schema(op.body, refs, schemas)
        doc["requestBody"] = {"required": True, "content": {"application/json": {"schema": body}}}
        if op.text_field is not None:
            field = op.body.model_json_schema(by_alias=True)["properties"][op.text_field]
            text = {**field, "description": f"the value of `{op.text_field}` alone, as text"}
            doc["requestBody"]["content"]["text/plain"] = {"schema": text}
    if op.body_schema is not None:
        doc["requestBody"] = {"required": True, "content": {"application/json": {"schema": op.body_schema}}}
    success: dict[str, Any] = {"description": "Success"}
    if op.response is not None:
        success["content"] = {"application/json": {"schema": _schema(op.response, refs, schemas)}}
    for media_type, described in op.streams.items():
        kind = "object" if media_type == "application/json" else "string"
        stream: dict[str, Any] = {"type": kind, "description": described} if isinstance(described, str) else described
        success.setdefault("content", {})[media_type] = {"schema": stream}
    for status in (op.status, *op.also):
        doc["responses"][str(status)] = success
    for status, meaning in op.bodiless:
        doc["responses"][str(status)] = {"description": meaning}
    for status in op.errors:
        doc["responses"][str(status)] = {
            "description": ERROR_TEXT.get(status, "Error"),
            "content": {"application/json": {"schema": {"$ref": REF.format(model="ErrorResponse")}}},
        }
    return doc


def _parameters(op: Operation) -> list[dict[str, Any]]:
    params: list[dict[str, Any]] = [
        {"name": name, "in": "path", "required": True, "schema": PATH_SCHEMAS.get(name, {"type": "string"})}
        for name in re.findall(r"{(\w+)}", op.path)
    ]
    if op.query is not None:
        schema = op.query.model_json_schema(by_alias=True)
        required = set(schema.get("required", []))
        for name, prop in schema.get("properties", {}).items():
            params.append(
                {
                    "name": name,
                    "in": "query",
                    "required": name in required,
                    "schema": prop,
                    "description": prop.get("description", ""),
                }
            )
    params.extend(
        {
            "name": name,
            "in": "header",
            "required": False,
            "description": text,
            "schema": op.header_schemas.get(name) or HEADER_SCHEMAS.get(name, {"type": "string"}),
        }
        for name, text in op.headers
    )
    return params
