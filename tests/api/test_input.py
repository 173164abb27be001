"""Request input is taken as the OpenAPI document types it: a body nested past any use is
422 on every operation with a JSON body, a boolean is no integer, a number no date-time, and
every method of a path is named in a 405's `Allow`."""

from __future__ import annotations

import re

from tests.conftest import Account

DEEP = ("[" * 1100 + "]" * 1100).encode()


def concrete(path: str) -> str:
    """A path template with plausible values for its parameters."""
    return re.sub(r"{\w+Id}", "00000000-0000-0000-0000-000000000000", re.sub(r"{(\w+)}", "alice", path))


async def test_a_deeply_nested_body_is_422_on_every_json_operation(client, alice: Account) -> None:
    document = (await client.get("/api/v1/openapi.json")).json()
    with_body = [
        (method, path)
        for path, operations in document["paths"].items()
        for method, operation in operations.items()
        if "application/json" in operation.get("requestBody", {}).get("content", {})
    ]
    assert len(with_body) >= 9  # the A2A endpoint reads JSON-RPC itself (docs/a2a.md)
    for method, path in with_body:
        response = await client.request(
            method.upper(),
            concrete(path),
            content=DEEP,
            headers={**alice.headers, "content-type": "application/json"},
        )
        assert response.status_code == 422, (method, path, response.text)
        body = response.json()
        if path == "/api/v1/mcp":  # the MCP SDK parses its JSON-RPC itself: a JSON-RPC parse error
            assert body["error"]["code"] == -32700
            assert "recursion limit" in body["message"]
            continue
        assert body["message"] == "the body is not valid JSON"
        assert "recursion limit" in body["sub_errors"][0]["message"]


async def test_a_boolean_is_no_size(client, alice: Account) -> None:
    await client.post("/api/v1/ingest/new/sales/orders", json={"schemaDefinition": {"a": "b"}}, headers=alice.headers)
    prepare = "/api/v1/upload/multipart/alice/sales/orders/prepare"
    refused = await client.post(prepare, json={"filename": "a.csv", "size": True}, headers=alice.headers)
    assert refused.status_code == 422
    assert refused.json()["sub_errors"][0]["message"] == "size: Input should be a valid integer"
    assert (
        await client.post(prepare, json={"filename": "a.csv", "size": "3"}, headers=alice.headers)
    ).status_code == 422
    # JSON Schema's integer includes 3.0.
    assert (
        await client.post(prepare, json={"filename": "a.csv", "size": 3.0}, headers=alice.headers)
    ).status_code == 200


async def test_a_number_is_no_date_time(client, alice: Account) -> None:
    await client.post("/api/v1/ingest/new/sales/orders", json={"schemaDefinition": {"a": "b"}}, headers=alice.headers)
    attempts = "/api/v1/data/alice/sales/orders/ingest/attempts"
    for value in ("0.5", "1700000000", "-1e3"):
        response = await client.get(attempts, params={"beforeCreatedAt": value}, headers=alice.headers)
        assert response.status_code == 422, value
        assert "expected an ISO 8601 date-time" in response.json()["sub_errors"][0]["message"]
    fine = await client.get(attempts, params={"beforeCreatedAt": "2026-01-31T12:00:00Z"}, headers=alice.headers)
    assert fine.status_code == 200


async def test_405_names_every_method_of_the_path(client, alice: Account) -> None:
    response = await client.patch("/api/v1/build-specs/00000000-0000-0000-0000-000000000000", headers=alice.headers)
    assert response.status_code == 405
    assert set(response.headers["allow"].replace(" ", "").split(",")) >= {"GET", "PUT", "DELETE"}


async def test_the_document_defines_what_it_references(client) -> None:
    document = (await client.get("/api/v1/openapi.json")).json()
    text = str(document)
    for name in set(re.findall(r"#/components/schemas/(\w+)", text)):
        assert name in document["components"]["schemas"], name
    rpc = document["paths"]["/api/v1/a2a/{agent}"]["post"]["responses"]["200"]["content"]["application/json"]
    assert rpc["schema"]["type"] == "object"


async def test_a_query_parameter_given_twice_is_refused(client, alice: Account) -> None:
    """Each parameter is one value: a repeated one was read as its last value (schemathesis)."""
    response = await client.get("/api/v1/runs?outcome=bogus&outcome=failed&order=slowest", headers=alice.headers)
    assert response.status_code == 422, response.text
    assert response.json()["message"] == "a query parameter is given more than once"
    assert [e["message"] for e in response.json()["sub_errors"]] == ["query.outcome: given 2 times; give it once"]
    assert (await client.get("/api/v1/runs?order=slowest", headers=alice.headers)).status_code == 200
