from __future__ import annotations

from datawell.services import Services
from datawell.storage.access import Permission, ensure_namespace, set_grant
from datawell.storage.users import get_user
from tests.conftest import Account

ORDERS = {
    "dataDescription": "Orders placed in the web shop",
    "schemaDefinition": {"order_id": "Order number", "customer": "Customer name", "total": "Amount in EUR"},
}


async def create(client, account: Account, namespace: str = "sales", name: str = "orders", body=None):
    return await client.post(f"/api/v1/ingest/new/{namespace}/{name}", json=body or ORDERS, headers=account.headers)


async def test_create_dataset_returns_the_record(client, alice: Account) -> None:
    response = await create(client, alice)
    assert response.status_code == 201
    body = response.json()
    assert body["owner"] == "alice"
    assert body["namespace"] == "sales"
    assert body["datasetName"] == "orders"
    assert body["dataDescription"] == ORDERS["dataDescription"]
    assert list(body["schemaDefinition"]) == ["order_id", "customer", "total"]
    assert body["fieldTypes"] == {}
    assert body["createdAt"].endswith(("Z", "+00:00"))


async def test_duplicate_dataset_is_409(client, alice: Account) -> None:
    assert (await create(client, alice)).status_code == 201
    response = await create(client, alice)
    assert response.status_code == 409
    assert "already exists" in response.json()["message"]


async def test_oversized_description_is_422(client, alice: Account) -> None:
    response = await create(client, alice, body={**ORDERS, "dataDescription": "x" * 10001})
    assert response.status_code == 422
    [sub] = response.json()["sub_errors"]
    assert sub["code"] == "string_too_long"
    assert sub["message"].startswith("dataDescription:")


async def test_description_at_the_limit_is_accepted(client, alice: Account) -> None:
    assert (await create(client, alice, body={**ORDERS, "dataDescription": "x" * 10000})).status_code == 201


async def test_unusable_field_names_are_each_named(client, alice: Account) -> None:
    schema = {"ok": "fine", "1st": "starts with a digit", "has space": "space", "__id": "reserved", "OK": "dup"}
    response = await create(client, alice, body={"schemaDefinition": schema})
    assert response.status_code == 422
    messages = [s["message"] for s in response.json()["sub_errors"]]
    assert len(messages) == 4
    assert any(m.startswith("schemaDefinition.1st:") for m in messages)
    assert any(m.startswith("schemaDefinition.has space:") for m in messages)
    assert any(m.startswith("schemaDefinition.__id:") and "reserved" in m for m in messages)
    assert any(m.startswith("schemaDefinition.OK:") and "'ok'" in m for m in messages)


async def test_a_dataset_without_schema_waits_for_its_first_rows(client, alice: Account) -> None:
    """The DataLinks SDK's `create_space()` sends `{}`: the fields come with the first rows."""
    response = await create(client, alice, body={"dataDescription": "no schema"})
    assert response.status_code == 201
    assert response.json()["schemaDefinition"] == {}


async def test_invalid_names_in_path_are_422(client, alice: Account) -> None:
    response = await create(client, alice, namespace="bad.ns")
    assert response.status_code == 422
    assert "namespace 'bad.ns'" in response.json()["sub_errors"][0]["message"]


async def test_list_and_read(client, alice: Account) -> None:
    await create(client, alice)
    await create(client, alice, name="customers")
    listing = await client.get("/api/v1/datasets/alice/sales", headers=alice.headers)
    assert listing.status_code == 200
    assert [d["datasetName"] for d in listing.json()["data"]] == ["customers", "orders"]
    one = await client.get("/api/v1/datasets/alice/sales/orders", headers=alice.headers)
    assert one.status_code == 200
    assert one.json()["schemaDefinition"] == ORDERS["schemaDefinition"]


async def test_list_and_read_show_what_create_returned(client, services: Services, alice: Account) -> None:
    # Listing and reading take the direct read path, create the ORM: the bodies must agree.
    created = (await create(client, alice)).json()
    listing = await client.get("/api/v1/datasets/alice/sales", headers=alice.headers)
    one = await client.get("/api/v1/datasets/alice/sales/orders", headers=alice.headers)
    assert listing.json() == {"data": [created]}
    assert one.json() == created


async def test_namespace_without_datasets_lists_none(client, services: Services, alice: Account) -> None:
    async with services.db.session() as session:
        await ensure_namespace(session, await get_user(session, "alice"), "empty")
    listing = await client.get("/api/v1/datasets/alice/empty", headers=alice.headers)
    assert listing.status_code == 200
    assert listing.json() == {"data": []}
    missing = await client.get("/api/v1/datasets/alice/empty/orders", headers=alice.headers)
    assert missing.status_code == 404
    assert missing.json()["message"] == "dataset alice/empty/orders does not exist"


async def test_read_missing_dataset_is_404(client, alice: Account) -> None:
    await create(client, alice)
    assert (await client.get("/api/v1/datasets/alice/sales/nope", headers=alice.headers)).status_code == 404
    assert (await client.get("/api/v1/datasets/alice/nons", headers=alice.headers)).status_code == 404


async def test_other_users_namespace_needs_a_grant(client, services: Services, alice: Account, bob: Account) -> None:
    await create(client, alice)
    denied = await client.get("/api/v1/datasets/alice/sales", headers=bob.headers)
    assert denied.status_code == 403
    assert denied.json()["error_code"] == "FORBIDDEN"
    async with services.db.session() as session:
        await set_grant(session, "alice", "sales", "bob", Permission.READ)
    allowed = await client.get("/api/v1/datasets/alice/sales/orders", headers=bob.headers)
    assert allowed.status_code == 200


async def test_create_is_in_the_callers_own_namespace(client, alice: Account, bob: Account) -> None:
    await create(client, alice)
    response = await create(client, bob)
    assert response.status_code == 201
    assert response.json()["owner"] == "bob"
