"""Every error a client sees is an ErrorResponse, never a traceback or an HTML page."""

from __future__ import annotations

from tests.conftest import Account


def assert_error_shape(body: dict) -> None:
    assert set(body) == {"error_code", "message", "error_message", "sub_errors"}


async def test_unknown_route_is_error_response(client) -> None:
    response = await client.get("/api/v1/no/such/route")
    assert response.status_code == 404
    assert_error_shape(response.json())
    assert response.json()["error_code"] == "NOT_FOUND"


async def test_wrong_method_is_error_response(client) -> None:
    response = await client.patch("/api/v1/build-specs")
    assert response.status_code == 405
    assert response.json()["error_code"] == "METHOD_NOT_ALLOWED"


async def test_malformed_json_is_422(client, alice: Account) -> None:
    response = await client.post(
        "/api/v1/ingest/new/sales/orders",
        content=b'{"schemaDefinition": {',
        headers={**alice.headers, "content-type": "application/json"},
    )
    assert response.status_code == 422
    body = response.json()
    assert_error_shape(body)
    assert body["message"] == "the body is not valid JSON"
    assert body["sub_errors"][0]["code"] == "invalid_json"


async def test_wrong_content_type_is_415(client, alice: Account) -> None:
    response = await client.post(
        "/api/v1/ingest/new/sales/orders",
        content=b"schemaDefinition=x",
        headers={**alice.headers, "content-type": "application/x-www-form-urlencoded"},
    )
    assert response.status_code == 415
    assert response.json()["error_code"] == "UNSUPPORTED_MEDIA_TYPE"


async def test_unexpected_failure_is_500_error_response(client, alice: Account, monkeypatch) -> None:
    from datawell.storage import build_specs

    async def explode(*_args, **_kwargs):
        raise RuntimeError("secret internals")

    monkeypatch.setattr(build_specs, "list_build_specs", explode)
    monkeypatch.setattr("datawell.api.build_specs.list_build_specs", explode)
    response = await client.get("/api/v1/build-specs", headers=alice.headers)
    assert response.status_code == 500
    assert_error_shape(response.json())
    assert "secret internals" not in response.text
