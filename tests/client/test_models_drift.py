"""The client's models (`datawell.client.models`) against the OpenAPI document the server
builds. The service answers with these very models (docs/decisions.md, "One source for wire
models"), so a test here checks that no operation answers with a model declared elsewhere,
and pins what the document says of them (`wire_schemas.json`). Every client model that mirrors a schema of the document has the same fields, each
as required and as nullable, and of the same type (string, integer, number, boolean, array,
object, the same enum values, the same nested schema), both ways: a field that one side adds
fails here until the other side has it too. Each client method reads its answer into the
model mapped to the schema its operation answers with, and sends a body with only the
fields, and all the required fields, of its operation's request schema."""

from __future__ import annotations

import inspect
import json
import re
import tempfile
from pathlib import Path
from typing import Any, get_args

import pytest
from pydantic import BaseModel, TypeAdapter

from datawell.api import system
from datawell.app import API_ROUTERS, create_app
from datawell.client import models, run_records
from datawell.client.calls import Call, operation
from datawell.client.operations import Operations
from datawell.config import Settings
from tests.client.test_client import sample

# Each client model and the schema of the document it mirrors.
MIRRORS: dict[type[BaseModel], str] = {
    models.Dataset: "DatasetResponse",
    models.DatasetList: "DatasetList",
    models.DatasetCoordinate: "DatasetCoordinate",
    models.BuildSpecCode: "BuildSpecCode",
    models.BuildSpec: "BuildSpecResponse",
    models.BuildSpecList: "BuildSpecList",
    models.PresignedPart: "PresignedPart",
    models.PreparedUpload: "PrepareResponse",
    models.PartReceipt: "PartReceipt",
    models.CompletedPart: "CompletedPart",
    models.CompletedUpload: "CompleteResponse",
    models.AbortedUpload: "AbortResponse",
    models.IngestionAttributes: "IngestionAttributes",
    models.IngestionAttempt: "IngestionAttempt",
    models.IngestionDetail: "IngestionDetail",
    models.AttemptsMetadata: "AttemptsMetadata",
    models.AttemptList: "AttemptList",
    models.Retried: "RetryResponse",
    models.Cleared: "ClearResponse",
    models.RowsMetadata: "RowsMetadata",
    models.RowsPage: "RowsPageResponse",
    models.Deleted: "DeletedResponse",
    models.NamespaceInfo: "NamespaceResponse",
    models.StageModel: "StageModel",
    models.AutoRagStep: "AutoRagStep",
    models.AutoRagAnswer: "AutoRagResponse",
    models.CuratedLink: "CuratedLink",
    models.Curation: "CurateLinksResponse",
    models.Link: "LinkResponse",
    models.LinkList: "LinkList",
    models.Example: "ExampleResponse",
    models.ExampleList: "ExampleList",
    models.Mark: "MarkResponse",
    models.Agent: "AgentListItem",
    models.Health: "Health",
    run_records.RunSummary: "RunSummary",
    run_records.RunList: "RunList",
    run_records.RunRecord: "RunRecord",
    run_records.StageRecord: "StageRecord",
    run_records.ModelCallRecord: "ModelCallRecord",
    run_records.PromptMessage: "PromptMessage",
    run_records.QueryRecord: "QueryRecord",
    models.QueryChange: "QueryChange",
    run_records.RewriteRecord: "RewriteRecord",
}
# Client models that mirror no schema, and why.
CLIENT_ONLY: dict[type[BaseModel], str] = {
    models.Model: "the base class: camelCase aliases, unknown fields kept",
    models.RunEvent: "an event of the AutoRAG stream (text/event-stream), which the document describes as text",
    models.UploadProgress: "what upload() reports to its caller while it works; never on the wire",
}
# What the document says of each wire model, as reviewed; `python -m tests.client.test_models_drift`
# writes it again after a deliberate change (review the diff).
PINNED = Path(__file__).with_name("wire_schemas.json")
# The DataLinks-compatible routes answer in the DataLinks SDK's shapes, which this client does not read.
OWN_SHAPES = "datawell.api.datalinks."
# Client methods whose answer the document gives no schema, and why; the client reads a dict.
UNDESCRIBED = {
    "openapi": "the document does not describe itself",
    "agent_card": "an A2A agent card, the A2A specification's to describe",
}
# String formats the client reads as plain strings: ids are handed back as they came, in paths.
PLAIN_FORMATS = {"uuid"}
# A schema that says nothing of its value, and the document's name for any JSON value.
CONSTRAINING = {"type", "anyOf", "oneOf", "allOf", "$ref", "enum", "const", "not", "properties", "items"}
ANY_JSON = "JsonValue"

Shape = tuple[Any, ...]


def shape(schema: Any, names: dict[str, str]) -> Shape:
    """What a schema says of its value's type, with references renamed by `names` (the client's
    model names to the document's schema names; nullability is read apart, by `nullable`)."""
    if schema is True or not CONSTRAINING & schema.keys():
        return ("any",)
    if "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[1]
        return ("any",) if name == ANY_JSON else ("schema", names.get(name, name))
    if "anyOf" in schema:
        options = frozenset(shape(option, names) for option in schema["anyOf"] if option != {"type": "null"})
        return next(iter(options)) if len(options) == 1 else ("anyOf", options)
    if "enum" in schema or "const" in schema:
        return ("enum", frozenset(schema.get("enum", [schema.get("const")])))
    kind = schema.get("type")
    if kind == "array":
        return ("array", shape(schema.get("items", True), names))
    if kind == "object":
        return ("object", shape(schema.get("additionalProperties", True), names))
    if kind == "string":
        return ("string", None if schema.get("format") in PLAIN_FORMATS else schema.get("format"))
    return (kind,)


def nullable(schema: Any) -> bool:
    return {"type": "null"} in schema.get("anyOf", [])


def fields(schema: dict[str, Any], names: dict[str, str]) -> dict[str, tuple[bool, bool, Shape]]:
    """Each field of an object schema, by its JSON name: (required, nullable, type)."""
    required = set(schema.get("required", []))
    return {
        name: (name in required, nullable(field), shape(field, names))
        for name, field in schema.get("properties", {}).items()
    }


def drift(model: type[BaseModel], schema: dict[str, Any]) -> dict[str, tuple[Any, Any]]:
    """The fields where the client model and the document's schema disagree: {name: (client's, document's)}."""
    names = {client.__name__: server for client, server in MIRRORS.items()}
    mine = fields(model.model_json_schema(by_alias=True, mode="validation"), names)
    theirs = fields(schema, {})
    return {
        name: (mine.get(name), theirs.get(name))
        for name in mine.keys() | theirs.keys()
        if mine.get(name) != theirs.get(name)
    }


@pytest.fixture(scope="module")
def document(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    settings = Settings(
        data_dir=tmp_path_factory.mktemp("document"), embeddings_enabled=False, embedded_model_enabled=False
    )
    built: dict[str, Any] = create_app(settings).state.openapi
    return built


@pytest.fixture(scope="module")
def schemas(document: dict[str, Any]) -> dict[str, Any]:
    found: dict[str, Any] = document["components"]["schemas"]
    return found


def result_shape(result: TypeAdapter[Any] | None) -> Shape | None:
    """What a client call reads its answer into, as `shape` says it (a model by its schema's name)."""
    if result is None:
        return None
    schema = result.json_schema(ref_template="#/$defs/{model}")
    names = {client.__name__: server for client, server in MIRRORS.items()}
    if "properties" in schema and "title" in schema:
        return ("schema", names.get(schema["title"], schema["title"]))
    return shape(schema, names)


def answer_shape(spec: dict[str, Any]) -> Shape | None:
    """What a document operation answers on success, as `shape` says it; None for no JSON body."""
    success = next(r for status, r in sorted(spec["responses"].items()) if status.startswith("2"))
    content = success.get("content", {}).get("application/json")
    return None if content is None else shape(content["schema"], {})


def client_calls(everything: bool = False) -> list[tuple[str, Call[Any]]]:
    """Each client method with its required arguments filled in (`everything`: every
    argument it names), as the call it builds."""
    calls = []
    for name, member in vars(Operations).items():
        if isinstance(member, operation):
            parameters = list(inspect.signature(member.build).parameters.values())[1:]
            named = [p for p in parameters if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
            chosen = named if everything else [p for p in named if p.default is p.empty]
            calls.append((name, member.build(None, **{p.name: sample(p) for p in chosen})))
    return calls


def operation_of(call: Call[Any], document: dict[str, Any]) -> list[dict[str, Any]]:
    """The document's operations that `call` may be (its method, a path of its shape)."""
    path = "/api/v1/upload/parts" if "://" in call.path else call.path  # a presigned part URL
    return [
        spec
        for pattern, operations in document["paths"].items()
        if re.fullmatch(re.sub(r"\{[^}]+\}", "[^/]+", pattern), path)
        for verb, spec in operations.items()
        if verb == call.method.lower()
    ]


@pytest.mark.parametrize(("method", "call"), client_calls(), ids=[name for name, _ in client_calls()])
def test_a_client_method_reads_its_answer_into_the_model_of_the_schema_it_answers(
    method: str, call: Call[Any], document: dict[str, Any]
) -> None:
    """So MIRRORS pairs each model with the schema the operations really answer with."""
    answers = {answer_shape(spec) for spec in operation_of(call, document)}
    assert answers == ({None} if method in UNDESCRIBED else {result_shape(call.result)})


@pytest.mark.parametrize("model", list(MIRRORS), ids=lambda model: model.__name__)
def test_a_client_model_has_the_fields_and_types_of_its_schema(model: type[BaseModel], schemas: dict[str, Any]) -> None:
    assert MIRRORS[model] in schemas, f"the document has no schema {MIRRORS[model]}"
    assert drift(model, schemas[MIRRORS[model]]) == {}


def test_every_client_model_mirrors_a_schema_or_says_why_not() -> None:
    declared = {
        value
        for module in (models, run_records)
        for value in vars(module).values()
        if isinstance(value, type) and issubclass(value, BaseModel) and value.__module__ == module.__name__
    }
    assert declared == MIRRORS.keys() | CLIENT_ONLY.keys()


def test_drift_is_seen_both_ways(schemas: dict[str, Any]) -> None:
    """The check itself: a field renamed, retyped, made optional or dropped on either side is drift."""
    server = schemas["CurateLinksResponse"]
    renamed = {
        **server,
        "properties": {"datasetsSeen" if k == "datasetsProcessed" else k: v for k, v in server["properties"].items()},
    }
    assert set(drift(models.Curation, renamed)) == {"datasetsProcessed", "datasetsSeen"}
    retyped = {**server, "properties": {**server["properties"], "totalSelected": {"type": "string"}}}
    assert set(drift(models.Curation, retyped)) == {"totalSelected"}
    optional = {**server, "required": ["datasetsProcessed"]}
    assert set(drift(models.Curation, optional)) == {"totalSelected"}

    class Wider(models.Curation):
        added: bool

    assert set(drift(Wider, server)) == {"added"}


@pytest.mark.parametrize(
    ("method", "call"),
    [(name, call) for name, call in client_calls(everything=True) if isinstance(call.json, dict)],
    ids=[name for name, call in client_calls(everything=True) if isinstance(call.json, dict)],
)
def test_a_client_method_sends_the_fields_its_request_schema_names(
    method: str, call: Call[Any], document: dict[str, Any], schemas: dict[str, Any]
) -> None:
    """A request body (built as a dict, every argument given) names only fields of the schema
    of the operation's body, and every field that schema requires."""
    [spec] = operation_of(call, document)
    body = spec["requestBody"]["content"]["application/json"]["schema"]
    schema = schemas[body["$ref"].rsplit("/", 1)[1]]
    assert set(call.json) <= set(schema["properties"])
    assert set(schema.get("required", [])) <= set(call.json)


def wire_schemas(schemas: dict[str, Any]) -> dict[str, Any]:
    return {name: schemas[name] for name in sorted(MIRRORS.values())}


def test_the_document_describes_the_wire_models_as_pinned(schemas: dict[str, Any]) -> None:
    """The service serves the client's models, so the document changes when they do: here,
    where a reviewer sees it, and not for a client of an older release unawares."""
    assert wire_schemas(schemas) == json.loads(PINNED.read_text())


def answered_models(response: Any) -> list[type[BaseModel]]:
    """The pydantic models an operation's declared answer is made of (`list[Model]`: Model)."""
    if isinstance(response, type) and issubclass(response, BaseModel):
        return [response]
    return [model for arg in get_args(response) for model in answered_models(arg)]


@pytest.mark.parametrize(
    "op",
    [op for router in [*API_ROUTERS, system.router] for op in router.operations],
    ids=lambda op: f"{op.method} {op.path}",
)
def test_every_answer_is_a_client_wire_model(op: Any) -> None:
    """One declaration per shape: an answer declared by hand on the server side would be the
    second copy that the client's model then mirrors."""
    if op.endpoint.__module__.startswith(OWN_SHAPES):
        return
    assert declared_elsewhere(op.response) == set()


def declared_elsewhere(response: Any) -> set[str]:
    return {model.__module__ for model in answered_models(response)} - {models.__name__, run_records.__name__}


def test_an_answer_declared_on_the_server_is_seen() -> None:
    """The check above would fail for a server-side model (the DataLinks shapes are such)."""
    from datawell.api.datalinks.users import CurrentUser

    assert declared_elsewhere(list[CurrentUser]) == {"datawell.api.datalinks.users"}
    assert declared_elsewhere(list[models.Agent]) == set()


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as folder:
        settings = Settings(data_dir=Path(folder), embeddings_enabled=False, embedded_model_enabled=False)
        built = create_app(settings).state.openapi["components"]["schemas"]
    PINNED.write_text(json.dumps(wire_schemas(built), indent=1, sort_keys=True) + "\n")
