"""The DataLinks SDK's calls at the root (`datawell.api.datalinks.origin`), in process: the
list is the SDK's, a root call is answered exactly as under /api/v1 (auth, errors, tenants),
and the console's pages and the API's other routes keep their paths."""

from __future__ import annotations

import re

import httpx
from datalinks import _operations as sdk_operations

from datawell.api.datalinks.origin import SDK_CALLS, specificity
from datawell.app import API_ROUTERS
from datawell.services import API_PREFIX
from tests.conftest import Account, Running

# The SDK's operations its DataLinksAPI never calls (docs/datalinks.md): not served at the root.
NOT_CALLED = {"a2aJsonRpc", "getA2aAgentCard", "listA2aAgents", "balefireNamespace"}
NOT_SERVED = {  # called by the SDK, not offered by Datawell (docs/datalinks.md)
    ("POST", "/agents/{}/{}/{}/requestCleaning"),
    ("GET", "/agents/cleaning/{}/code"),
    ("POST", "/permissions/datasets/{}/{}/{}/shares"),
    ("DELETE", "/permissions/datasets/{}/{}/{}/shares"),
}


def shape(path: str) -> str:
    return re.sub(r"\{[^}]+\}", "{}", path)


def test_the_root_calls_are_the_sdks_and_each_is_an_api_route_or_named_as_missing() -> None:
    sdk = {
        (op.method.upper(), shape(op.path_template))
        for op in vars(sdk_operations).values()
        if isinstance(op, sdk_operations.Operation)
        and op.operation_id not in NOT_CALLED
        and not op.path_template.startswith("/file-upload")
    }
    listed = [(method, shape(path)) for method, path in SDK_CALLS]
    assert len(listed) == len(set(listed))
    assert set(listed) == sdk
    served = {(op.method, op.path) for router in API_ROUTERS for op in router.operations}
    missing = {(method, shape(path)) for method, path in SDK_CALLS if (method, path) not in served}
    assert missing == NOT_SERVED


def test_a_literal_segment_is_more_specific_than_a_parameter() -> None:
    assert specificity("/links/add") > specificity("/links/{linkId}")
    assert specificity("/ontology/{o}/{n}/curate") > specificity("/ontology/{u}/{n}/{d}")
    assert specificity("/d/{o}/rows.{format}") > specificity("/d/{o}/{name}")


async def both(client: httpx.AsyncClient, method: str, path: str, **options) -> tuple[httpx.Response, httpx.Response]:
    return (
        await client.request(method, path, **options),
        await client.request(method, API_PREFIX + path, **options),
    )


async def test_a_root_call_is_answered_as_under_api_v1(
    client: httpx.AsyncClient, alice: Account, bob: Account, sales: str
) -> None:
    root, api = await both(client, "GET", "/data/self/sales/orders", headers=alice.headers)
    assert root.status_code == api.status_code == 200
    assert root.json() == api.json() and root.json()["dataset"]["owner"] == "alice"
    # No console cookie or page headers: to everything after the rewrite it is an API request.
    assert "set-cookie" not in root.headers and "content-security-policy" not in root.headers

    root, api = await both(client, "GET", "/data/self/sales/orders")
    assert root.status_code == api.status_code == 401 and root.json() == api.json()

    for path in ("/data/alice/sales/orders", "/links/alice/sales/orders"):  # alice's, not bob's
        root, api = await both(client, "GET", path, headers=bob.headers)
        assert root.status_code == api.status_code and root.status_code in (403, 404)
        assert root.json() == api.json() and root.json()["error_code"] in ("FORBIDDEN", "NOT_FOUND")

    root, api = await both(client, "POST", "/ingest/new/sales/more", json={"dataDescription": 7}, headers=alice.headers)
    assert root.status_code == api.status_code == 422 and root.json() == api.json()

    created = await client.post("/ingest/new/sales/more", json={}, headers=alice.headers)
    assert created.status_code == 201
    again = await client.post(API_PREFIX + "/ingest/new/sales/more", json={}, headers=alice.headers)
    assert again.status_code == 409  # one dataset, whichever form created it

    root, api = await both(client, "POST", "/links/add", json={}, headers=alice.headers)  # the SDK's add_link
    assert root.status_code == api.status_code == 422 and root.json() == api.json()


async def test_the_console_keeps_its_pages_and_the_api_its_other_routes(
    client: httpx.AsyncClient, alice: Account, sales: str
) -> None:
    for method, path in [
        ("GET", "/"),
        ("GET", "/build-specs"),  # also an API path, which is not an SDK call
        ("GET", "/ontology/alice/sales"),
        ("POST", "/ontology/alice/sales/curate"),  # more specific than the SDK's save_ontology
        ("POST", "/links/7c9e6679-7425-40de-944b-e07fc1f90ae7"),  # the console's link form
    ]:
        response = await client.request(method, path, headers=alice.headers)
        assert response.status_code == 303, (method, path)
        assert response.headers["location"].startswith("/signin"), (method, path)
    assert (await client.get("/signin")).status_code == 200
    assert (await client.get("/health")).json()["status"] == "ok"
    # Only the SDK's calls, by method and path: not SPEC's other routes, not another method.
    for method, path, status in [
        ("POST", "/upload/multipart/self/sales/orders/complete", 422),
        ("PATCH", "/data/self/sales/orders", 405),
        ("GET", "/data/self/sales/orders/rows", 200),
    ]:
        root, api = await both(client, method, path, json={}, headers=alice.headers)
        assert (root.status_code, root.json()["message"]) == (404, "no such route"), (method, path)
        assert api.status_code == status, (method, path)


def test_the_openapi_document_keeps_its_paths(service: Running) -> None:
    paths = service.app.state.openapi["paths"]
    assert "/api/v1/ingest/new/{namespace}/{datasetName}" in paths
    assert not any(path.startswith(("/ingest", "/data", "/query", "/links")) for path in paths)
