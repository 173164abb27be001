"""POST /ontology/curate-links, GET /ontology/{namespace}/links, PATCH and DELETE of a link."""

from __future__ import annotations

import re

import httpx
import pytest
from langchain_core.messages import BaseMessage

from datawell.graphs.curator.state import ChosenLink, LinkSelection
from datawell.llm.models import FixedChatModels, ModelChoice
from datawell.llm.scripted import ScriptedChatModel
from datawell.ontology.graph import join_paths
from datawell.services import Services
from datawell.storage.access import Permission, set_grant
from datawell.storage.links import active_links
from tests.conftest import Account
from tests.ontology.shop import load

CURATE = "/api/v1/ontology/curate-links"
# What the scripted curator accepts: the id links, the countries and the store locations.
MEANINGFUL = {
    frozenset({"shop/orders.customer", "shop/customers.customer_id"}),
    frozenset({"shop/orders.product", "shop/products.sku"}),
    frozenset({"shop/orders.ship_country", "shop/customers.country"}),
    frozenset({"shop/stores.latitude,longitude", "shop/cities.lat,lon"}),
    frozenset({"shop/customers.city", "shop/cities.city"}),
}
CANDIDATE_LINE = re.compile(r"^(L\d+) \[\w+\] (\S+) -> (\S+) ", re.MULTILINE)


def curator(messages: list[BaseMessage]) -> LinkSelection:
    """Selects the meaningful candidates it is shown, plus one id that was never offered."""
    prompt = str(messages[-1].content)
    chosen = [
        ChosenLink(id=label, reason=f"{origin} refers to {destination}")
        for label, origin, destination in CANDIDATE_LINE.findall(prompt)
        if frozenset({origin, destination}) in MEANINGFUL
    ]
    return LinkSelection(selected=[*chosen, ChosenLink(id="L999", reason="not offered")])


@pytest.fixture
def chat_model() -> ScriptedChatModel:
    return ScriptedChatModel([curator] * 5)


async def curate(client: httpx.AsyncClient, account: Account, **body: object) -> httpx.Response:
    return await client.post(CURATE, json={"namespace": "shop", **body}, headers=account.headers)


def pairs(links: list[dict]) -> set[frozenset[str]]:
    return {frozenset({link["origin"], link["destination"]}) for link in links}


async def test_curation_returns_the_selection_without_activating(
    client: httpx.AsyncClient, services: Services, alice: Account, chat_model: ScriptedChatModel
) -> None:
    shop = await load(services, "alice")
    response = await curate(client, alice)
    assert response.status_code == 200
    body = response.json()
    assert body["datasetsProcessed"] == 5
    assert body["totalSelected"] == 5
    assert pairs(body["curatedLinks"]) == MEANINGFUL
    ids = next(link for link in body["curatedLinks"] if link["origin"] == "shop/orders.customer")
    assert ids == {
        "origin": "shop/orders.customer",
        "destination": "shop/customers.customer_id",
        "hits": 200,
        "matchType": "NormalizedMatch",
    }
    # The model saw the candidates the data gave, including the coincidences it rejected.
    assert "shop/products.price -> shop/orders.amount" in chat_model.prompts()[0]
    async with services.db.session() as session:
        assert await active_links(session, shop.namespace.id) == []
    suggested = await client.get("/api/v1/ontology/shop/links?status=Suggested", headers=alice.headers)
    assert pairs(suggested.json()["data"]) == MEANINGFUL
    active = await client.get("/api/v1/ontology/shop/links?status=Active", headers=alice.headers)
    assert active.json()["data"] == []


async def test_activation_adds_the_links_to_the_ontology(
    client: httpx.AsyncClient, services: Services, alice: Account
) -> None:
    shop = await load(services, "alice")
    response = await curate(client, alice, activate=True)
    assert response.status_code == 200
    body = response.json()
    assert body == {"datasetsProcessed": 5, "totalSelected": 5}
    listing = (await client.get("/api/v1/ontology/alice/shop/links?status=Active", headers=alice.headers)).json()
    assert pairs(listing["data"]) == MEANINGFUL
    link = next(link for link in listing["data"] if link["origin"] == "shop/orders.customer")
    assert link["curatedBy"] == "alice"
    # Every customer reference is a customer id: the data settles it, the model is not asked.
    assert link["reason"] == (
        "Every value of shop/orders.customer is a value of shop/customers.customer_id, which has one row per "
        "value: a reference the data shows, selected without the model."
    )
    product = next(link for link in listing["data"] if link["origin"] == "shop/orders.product")
    assert product["reason"] == "shop/orders.product refers to shop/products.sku"
    assert link["model"] == "scripted"
    async with services.db.session() as session:
        assert {
            frozenset({x.origin, x.destination}) for x in await active_links(session, shop.namespace.id)
        } == MEANINGFUL
        [path] = await join_paths(session, shop.namespace.id, "orders", "stores")
    assert path.datasets == ["orders", "customers", "cities", "stores"]
    assert path.steps[0].left_fields == ("customer",) and path.steps[0].right_fields == ("customer_id",)
    assert path.steps[-1].left_fields == ("lat", "lon")


async def test_a_dataset_filter_curates_only_that_dataset(
    client: httpx.AsyncClient, services: Services, alice: Account, chat_model: ScriptedChatModel
) -> None:
    await load(services, "alice")
    response = await curate(client, alice, dataset="products")
    assert response.status_code == 200
    body = response.json()
    assert body["datasetsProcessed"] == 1
    assert pairs(body["curatedLinks"]) == {frozenset({"shop/orders.product", "shop/products.sku"})}
    shown = CANDIDATE_LINE.findall(chat_model.prompts()[0])
    assert shown and all("/products." in origin + destination for _, origin, destination in shown)
    missing = await curate(client, alice, dataset="nope")
    assert missing.status_code == 404


async def test_model_choice_reaches_the_curate_stage(
    client: httpx.AsyncClient, services: Services, alice: Account, chat_models: FixedChatModels
) -> None:
    await load(services, "alice", only=["orders", "products"])
    response = await curate(client, alice, model="gpt-4o-mini", provider="openai", activate=True)
    assert response.status_code == 200
    assert ("curate", ModelChoice("gpt-4o-mini", "openai")) in chat_models.requests
    listing = (await client.get("/api/v1/ontology/shop/links", headers=alice.headers)).json()["data"]
    assert [link["model"] for link in listing] == ["openai/gpt-4o-mini"]


async def test_another_users_namespace_needs_write_access(
    client: httpx.AsyncClient, services: Services, alice: Account, bob: Account
) -> None:
    await load(services, "alice", only=["orders", "products"])
    denied = await curate(client, bob, namespace="alice/shop")
    assert denied.status_code == 403
    assert denied.json()["error_code"] == "FORBIDDEN"
    assert (await curate(client, bob)).status_code == 404  # bob has no namespace "shop" of his own
    async with services.db.session() as session:
        await set_grant(session, "alice", "shop", "bob", Permission.READ)
    assert (await curate(client, bob, namespace="alice/shop")).status_code == 403
    readable = await client.get("/api/v1/ontology/alice/shop/links", headers=bob.headers)
    assert readable.status_code == 200
    async with services.db.session() as session:
        await set_grant(session, "alice", "shop", "bob", Permission.WRITE)
    allowed = await curate(client, bob, namespace="alice/shop", activate=True)
    assert allowed.status_code == 200
    assert allowed.json()["totalSelected"] == 1


async def test_bad_requests_are_422(client: httpx.AsyncClient, alice: Account) -> None:
    response = await client.post(CURATE, json={"activate": True}, headers=alice.headers)
    assert response.status_code == 422
    assert response.json()["sub_errors"][0]["message"].startswith("namespace:")
    bad = await client.post(CURATE, json={"namespace": "a/b/c"}, headers=alice.headers)
    assert bad.status_code == 422
    status = await client.get("/api/v1/ontology/shop/links?status=Maybe", headers=alice.headers)
    assert status.status_code == 422


async def test_listing_filters_and_deleting_a_link(
    client: httpx.AsyncClient, services: Services, alice: Account, bob: Account
) -> None:
    shop = await load(services, "alice")
    await curate(client, alice, activate=True)
    by_dataset = (await client.get("/api/v1/ontology/shop/links?dataset=stores", headers=alice.headers)).json()
    assert pairs(by_dataset["data"]) == {frozenset({"shop/stores.latitude,longitude", "shop/cities.lat,lon"})}
    link_id = by_dataset["data"][0]["id"]
    assert (await client.delete(f"/api/v1/ontology/links/{link_id}", headers=bob.headers)).status_code == 404
    async with services.db.session() as session:
        await set_grant(session, "alice", "shop", "bob", Permission.READ)
    assert (await client.delete(f"/api/v1/ontology/links/{link_id}", headers=bob.headers)).status_code == 403
    deleted = await client.delete(f"/api/v1/ontology/links/{link_id}", headers=alice.headers)
    assert deleted.status_code == 204
    assert (await client.delete(f"/api/v1/ontology/links/{link_id}", headers=alice.headers)).status_code == 404
    left = (await client.get("/api/v1/ontology/shop/links?dataset=stores", headers=alice.headers)).json()
    assert left["data"] == []
    async with services.db.session() as session:
        assert await join_paths(session, shop.namespace.id, "orders", "stores") == []


async def test_a_suggestion_can_be_activated_and_suspended(
    client: httpx.AsyncClient, services: Services, alice: Account
) -> None:
    shop = await load(services, "alice", only=["orders", "products"])
    await curate(client, alice)
    [suggested] = (await client.get("/api/v1/ontology/shop/links", headers=alice.headers)).json()["data"]
    assert suggested["status"] == "Suggested"
    url = f"/api/v1/ontology/links/{suggested['id']}"
    activated = await client.patch(url, json={"status": "Active"}, headers=alice.headers)
    assert activated.status_code == 200 and activated.json()["status"] == "Active"
    async with services.db.session() as session:
        assert [link.id for link in await active_links(session, shop.namespace.id)] == [suggested["id"]]
    # A later run without activation keeps active links active.
    await curate(client, alice)
    [again] = (await client.get("/api/v1/ontology/shop/links", headers=alice.headers)).json()["data"]
    assert (again["id"], again["status"]) == (suggested["id"], "Active")
    suspended = await client.patch(url, json={"status": "Suggested"}, headers=alice.headers)
    assert suspended.json()["status"] == "Suggested"
    async with services.db.session() as session:
        assert await active_links(session, shop.namespace.id) == []


async def test_an_answer_that_is_not_a_selection_is_a_model_error(
    client: httpx.AsyncClient, services: Services, alice: Account, chat_model: ScriptedChatModel
) -> None:
    shop = await load(services, "alice", only=["orders", "products"])
    chat_model.script[:] = ["L1 looks meaningful to me."]  # prose, not the structured answer
    response = await curate(client, alice, activate=True)
    assert response.status_code == 502
    assert response.json()["error_code"] == "MODEL_ERROR"
    async with services.db.session() as session:
        assert await active_links(session, shop.namespace.id) == []
