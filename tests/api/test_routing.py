"""A route's declaration (`api.routing.Router`): the summary and description come from the
handler's docstring, and the documented errors are those its inputs answer plus those it lists."""

from __future__ import annotations

from typing import Annotated, Any

import pytest
from pydantic import BaseModel

from datawell.api.routing import (
    READABLE_DATASET,
    READABLE_NAMESPACE,
    WRITABLE_NAMESPACE,
    NamespaceNamed,
    NamespacePath,
    Operation,
    PathModel,
    Router,
    namespace_for,
    uuid_in_path,
)
from datawell.storage.access import Permission


class Body(BaseModel):
    name: str


class Query(BaseModel):
    limit: int = 10


class ThingPath(PathModel):
    thing_id: Annotated[str, uuid_in_path("thing")]


class ExamplePath(NamespacePath):
    example_id: Annotated[str, uuid_in_path("example")]


def declared(method: str, path: str, **options: Any) -> Operation:
    router = Router("things")

    async def handler(request: Any, **_: Any) -> None:
        """Read a thing

        Reads one thing: its name and
        what it holds."""

    getattr(router, method)(path, **options)(handler)
    [operation] = router.operations
    return operation


def test_the_method_shortcuts_declare_the_method_path_and_response() -> None:
    for method in ("get", "post", "put", "patch", "delete"):
        operation = declared(method, "/things", response=Body)
        assert (operation.method, operation.path, operation.response) == (method.upper(), "/things", Body)
    router = Router("things")

    @router.post("/things", Body, status=201)
    async def create(request: Any) -> None:
        """Create a thing"""

    assert (router.operations[0].response, router.operations[0].status) == (Body, 201)


def test_the_summary_is_the_docstrings_first_line_and_the_rest_the_description() -> None:
    operation = declared("get", "/things")
    assert operation.summary == "Read a thing"
    assert operation.description == "Reads one thing: its name and\n        what it holds."


def test_a_given_summary_leaves_the_whole_docstring_as_the_description() -> None:
    operation = declared("get", "/things", summary="Read one")
    assert operation.summary == "Read one"
    assert operation.description.startswith("Read a thing\n\n        Reads one thing")


def test_a_handler_without_docstring_or_summary_is_refused() -> None:
    router = Router("things")

    async def bare(request: Any) -> None:
        pass

    with pytest.raises(ValueError, match="bare: give a summary"):
        router.get("/things")(bare)
    router.get("/things", summary="Bare")(bare)
    assert (router.operations[0].summary, router.operations[0].description) == ("Bare", "")


@pytest.mark.parametrize(
    ("options", "errors"),
    [
        ({}, (401,)),
        ({"public": True}, ()),
        ({"public": True, "errors": (404,)}, (404,)),
        ({"body": Body}, (401, 415, 422)),
        ({"query": Query}, (401, 422)),
        ({"params": NamespacePath}, (401,)),  # names only: the handler answers what it finds
        ({"params": ThingPath}, (401, 422)),  # an id: 422 when it is no UUID
        ({"resolve": READABLE_DATASET}, (401, 403, 404)),
        ({"resolve": WRITABLE_NAMESPACE, "params": ExamplePath}, (401, 403, 404, 422)),
        ({"resolve": namespace_for(Permission.READ, NamespaceNamed)}, (401, 404)),  # the caller's own
        ({"resolve": READABLE_NAMESPACE, "body": Body, "errors": (409, 502)}, (401, 403, 404, 409, 415, 422, 502)),
        ({"errors": (409, 401, 404)}, (401, 404, 409)),
    ],
)
def test_the_errors_a_routes_inputs_answer_are_documented_with_its_own(
    options: dict[str, Any], errors: tuple[int, ...]
) -> None:
    assert declared("post", "/things/{username}/{namespace}", **options).errors == errors


async def test_the_document_lists_derived_errors_and_docstring_summaries(client) -> None:
    document = (await client.get("/api/v1/openapi.json")).json()
    attempts = document["paths"]["/api/v1/data/{username}/{namespace}/{datasetName}/ingest/attempts"]["get"]
    assert attempts["summary"] == "List a dataset's ingestion attempts"
    assert attempts["description"].startswith("Lists the dataset's ingestion attempts, newest first.")
    assert sorted(attempts["responses"]) == ["200", "401", "403", "404", "422"]
    retry = document["paths"]["/api/v1/ingestionTracking/{ingestionId}/retry"]["post"]
    assert sorted(retry["responses"]) == ["201", "401", "403", "404", "409", "422"]
    read = document["paths"]["/api/v1/ingestionTracking/{ingestionId}"]["get"]
    assert sorted(read["responses"]) == ["200", "401", "404", "422"]
    health = document["paths"]["/health"]["get"]
    assert sorted(health["responses"]) == ["200"]
    summaries = [op["summary"] for ops in document["paths"].values() for op in ops.values()]
    assert all(s and "\n" not in s and not s.endswith(".") for s in summaries)
