from __future__ import annotations

import uuid

from datawell.services import Services
from datawell.storage.access import Permission, set_grant
from tests.conftest import Account

SCHEMA = {"dataDescription": "", "schemaDefinition": {"id": "identifier"}}


def coordinate(owner: str, name: str, namespace: str = "sales") -> dict:
    return {"owner": owner, "namespace": namespace, "datasetName": name}


def spec(owner: str = "alice", payload: str = "SELECT 1", sources=None, destination=None) -> dict:
    return {
        "sources": sources if sources is not None else [coordinate(owner, "orders")],
        "destination": destination or coordinate(owner, "summary"),
        "code": {"payload": payload},
    }


async def datasets(client, account: Account, *names: str, namespace: str = "sales") -> None:
    for name in names:
        response = await client.post(f"/api/v1/ingest/new/{namespace}/{name}", json=SCHEMA, headers=account.headers)
        assert response.status_code == 201


async def create_spec(client, account: Account, body=None) -> dict:
    response = await client.post("/api/v1/build-specs", json=body or spec(account.name), headers=account.headers)
    assert response.status_code == 201, response.text
    return response.json()


async def test_create_read_list(client, alice: Account) -> None:
    await datasets(client, alice, "orders", "summary")
    payload = "def build(ctx):\n    return ctx['orders']  # ünïcode \u2028 kept\r\n"
    created = await create_spec(client, alice, spec(payload=payload))
    assert created["version"] == 1
    assert created["owner"] == "alice"
    assert created["code"]["payload"] == payload
    assert created["sources"] == [coordinate("alice", "orders")]
    uuid.UUID(created["id"])
    read = await client.get(f"/api/v1/build-specs/{created['id']}", headers=alice.headers)
    assert read.json() == created
    listing = await client.get("/api/v1/build-specs", headers=alice.headers)
    assert [s["id"] for s in listing.json()["data"]] == [created["id"]]


async def test_put_replaces_and_bumps_version(client, alice: Account) -> None:
    await datasets(client, alice, "orders", "summary", "customers")
    created = await create_spec(client, alice)
    body = spec(sources=[coordinate("alice", "orders"), coordinate("alice", "customers")], payload="v2")
    response = await client.put(f"/api/v1/build-specs/{created['id']}", json=body, headers=alice.headers)
    assert response.status_code == 200
    updated = response.json()
    assert updated["version"] == 2
    assert updated["code"]["payload"] == "v2"
    assert len(updated["sources"]) == 2
    assert updated["createdAt"] == created["createdAt"]
    assert updated["updatedAt"] >= created["updatedAt"]


async def test_if_match_current_version_succeeds_and_stale_is_409(client, alice: Account) -> None:
    await datasets(client, alice, "orders", "summary")
    created = await create_spec(client, alice)
    url = f"/api/v1/build-specs/{created['id']}"
    ok = await client.put(url, json=spec(payload="v2"), headers={**alice.headers, "If-Match": '"1"'})
    assert ok.status_code == 200
    stale = await client.put(url, json=spec(payload="v3"), headers={**alice.headers, "If-Match": "1"})
    assert stale.status_code == 409
    assert stale.json()["error_code"] == "CONFLICT"
    assert "version 2" in stale.json()["message"]
    current = await client.get(url, headers=alice.headers)
    assert current.json()["code"]["payload"] == "v2"


async def test_empty_sources_is_422(client, alice: Account) -> None:
    await datasets(client, alice, "orders", "summary")
    response = await client.post("/api/v1/build-specs", json=spec(sources=[]), headers=alice.headers)
    assert response.status_code == 422
    assert response.json()["sub_errors"][0]["message"].startswith("sources:")


async def test_an_unknown_field_in_a_coordinate_is_422(client, alice: Account) -> None:
    """DatasetCoordinate is a wire model the client also reads (which keeps unknown fields);
    in a request body it is as strict as the body around it."""
    await datasets(client, alice, "orders", "summary")
    body = spec(sources=[{**coordinate("alice", "orders"), "branch": "main"}])
    response = await client.post("/api/v1/build-specs", json=body, headers=alice.headers)
    assert response.status_code == 422
    assert response.json()["sub_errors"][0]["message"].startswith("sources.0.branch:")


async def test_missing_payload_is_422(client, alice: Account) -> None:
    body = spec()
    body["code"] = {}
    response = await client.post("/api/v1/build-specs", json=body, headers=alice.headers)
    assert response.status_code == 422
    assert response.json()["sub_errors"][0]["message"].startswith("code.payload:")


async def test_unknown_dataset_is_422_naming_the_coordinate(client, alice: Account) -> None:
    await datasets(client, alice, "summary")
    response = await client.post("/api/v1/build-specs", json=spec(), headers=alice.headers)
    assert response.status_code == 422
    [sub] = response.json()["sub_errors"]
    assert sub["message"] == "sources.0: dataset alice/sales/orders does not exist"


async def test_source_without_access_is_403_and_read_grant_allows(
    client, services: Services, alice: Account, bob: Account
) -> None:
    await datasets(client, alice, "orders")
    await datasets(client, bob, "summary")
    body = spec(sources=[coordinate("alice", "orders")], destination=coordinate("bob", "summary"))
    denied = await client.post("/api/v1/build-specs", json=body, headers=bob.headers)
    assert denied.status_code == 403
    async with services.db.session() as session:
        await set_grant(session, "alice", "sales", "bob", Permission.READ)
    assert (await client.post("/api/v1/build-specs", json=body, headers=bob.headers)).status_code == 201


async def test_destination_needs_write(client, services: Services, alice: Account, bob: Account) -> None:
    await datasets(client, alice, "orders", "summary")
    async with services.db.session() as session:
        await set_grant(session, "alice", "sales", "bob", Permission.READ)
    body = spec(sources=[coordinate("alice", "orders")], destination=coordinate("alice", "summary"))
    assert (await client.post("/api/v1/build-specs", json=body, headers=bob.headers)).status_code == 403
    async with services.db.session() as session:
        await set_grant(session, "alice", "sales", "bob", Permission.WRITE)
    assert (await client.post("/api/v1/build-specs", json=body, headers=bob.headers)).status_code == 201


async def test_other_users_spec_is_404(client, alice: Account, bob: Account) -> None:
    await datasets(client, alice, "orders", "summary")
    created = await create_spec(client, alice)
    url = f"/api/v1/build-specs/{created['id']}"
    assert (await client.get(url, headers=bob.headers)).status_code == 404
    assert (await client.put(url, json=spec(), headers=bob.headers)).status_code == 404
    assert (await client.delete(url, headers=bob.headers)).status_code == 404


async def test_delete_then_404(client, alice: Account) -> None:
    await datasets(client, alice, "orders", "summary")
    created = await create_spec(client, alice)
    url = f"/api/v1/build-specs/{created['id']}"
    response = await client.delete(url, headers=alice.headers)
    assert response.status_code == 204
    assert response.content == b""
    assert (await client.get(url, headers=alice.headers)).status_code == 404
    assert (await client.put(url, json=spec(), headers=alice.headers)).status_code == 404


async def test_non_uuid_id_is_422(client, alice: Account) -> None:
    response = await client.get("/api/v1/build-specs/not-a-uuid", headers=alice.headers)
    assert response.status_code == 422
    assert response.json()["sub_errors"][0]["message"].startswith("buildSpecId:")


async def test_put_unknown_id_is_404(client, alice: Account) -> None:
    await datasets(client, alice, "orders", "summary")
    response = await client.put(f"/api/v1/build-specs/{uuid.uuid4()}", json=spec(), headers=alice.headers)
    assert response.status_code == 404
