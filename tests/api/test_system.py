from __future__ import annotations


async def test_health_is_public(client) -> None:
    response = await client.get("/health")
    assert response.status_code == 200
    assert response.json()["status"] == "ok"


async def test_openapi_covers_every_route(client, service) -> None:
    from starlette.routing import Route

    response = await client.get("/api/v1/openapi.json")
    assert response.status_code == 200
    doc = response.json()
    assert doc["openapi"].startswith("3.1")
    app_routes = {
        (method.lower(), route.path)
        for route in service.app.routes
        if isinstance(route, Route) and route.methods and route.include_in_schema
        if not route.endpoint.__module__.startswith("datawell.console.")  # HTML pages, not the API
        for method in route.methods
        if method != "HEAD"
    }
    documented = {(m, p) for p, ops in doc["paths"].items() for m in ops}
    assert app_routes <= documented


async def test_openapi_describes_buildspec_edit(client) -> None:
    doc = (await client.get("/api/v1/openapi.json")).json()
    put = doc["paths"]["/api/v1/build-specs/{buildSpecId}"]["put"]
    assert set(put["responses"]) >= {"200", "401", "403", "404", "409", "422"}
    assert put["requestBody"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/BuildSpecRequest"
    }
    request_schema = doc["components"]["schemas"]["BuildSpecRequest"]
    assert request_schema["properties"]["sources"]["minItems"] == 1
    assert set(doc["components"]["schemas"]["ErrorResponse"]["properties"]) == {
        "error_code",
        "message",
        "error_message",
        "sub_errors",
    }
    assert doc["components"]["securitySchemes"]["bearerAuth"]["scheme"] == "bearer"
