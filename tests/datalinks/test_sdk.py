"""The DataLinks SDK (`datalinks==2.2.0`), unchanged, against a real server process: one test
per public method of `DataLinksAPI`, used as its README and docstrings use it, asserting what
the SDK returns. `CALLS` counts the SDK's 55 public calls: the ones tested here work; those left
out are named in docs/datalinks.md with the reason."""

from __future__ import annotations

import json
import uuid
from zoneinfo import ZoneInfo

import pytest
import requests
from datalinks.api import DataLinksRequestError
from datalinks.links import ExactMatch, MatchTypeConfig
from datalinks.pipeline import Normalize, NormalizeModes, Pipeline, ProcessStructured, ReverseGeo

from tests.datalinks.conftest import Server
from tests.fake_runs import ANSWER, PLAN, QUERIES

PRODUCTS = [
    {"brand": "Gillette", "category": "Razor", "product": "Heated Razor", "price": 120},
    {"brand": "Oral-B", "category": "Electric Toothbrush", "product": "iO Series 10", "price": 250},
    {"brand": "Philips", "category": "Shaver", "product": "S9000", "price": 180},
    {"brand": "Braun", "category": "Shaver", "product": "Series 9", "price": 90},
]
BRANDS = [
    {"name": "Gillette", "country": "US"},
    {"name": "Oral-B", "country": "US"},
    {"name": "Philips", "country": "NL"},
    {"name": "Braun", "country": "DE"},
]

# The SDK's 55 public calls: the 54 public methods of DataLinksAPI and the README's part
# upload (a PUT to a presigned URL); True where a test below drives it.
PART_UPLOAD = "PUT presigned part URL"
CALLS = {
    PART_UPLOAD: True,
    "ingest": True,
    "create_space": True,
    "update_infer_definition": True,
    "infer_dataset_description": True,
    "update_sort_order": True,
    "prepare_multipart_upload": True,
    "finish_multipart_upload": True,
    "abort_multipart_upload": True,
    "list_ingestions": True,
    "wait_for_ingestion": True,
    "get_dataset_info": True,
    "delete_dataset": True,
    "rename_dataset": True,
    "clear_dataset": True,
    "add_link": True,
    "preview_links": True,
    "rebuild_links": True,
    "load_links": True,
    "list_datasets": True,
    "query_data": True,
    "ask": True,
    "preview_ingest": True,
    "infer_schema": True,
    "retry_ingestion": True,
    "mark_ingestion_seen": True,
    "autorag": True,
    "request_cleaning": False,  # no cleaning agent
    "get_cleaning_code": False,  # no cleaning agent
    "get_ontology": True,
    "save_ontology": True,
    "curate_links": True,
    "rename_namespace": True,
    "list_namespaces": True,
    "list_all_datasets_schema": True,
    "list_datasets_in_namespace_schema": True,
    "get_current_user": True,
    "list_tokens": True,
    "add_token": True,
    "delete_token": True,
    "list_token_permissions": True,
    "get_usage_history": True,
    "get_usage_by_day": True,
    "get_agent_run_status": True,
    "delete_agent_run": True,
    "submit_agent_run_feedback": True,
    "resume_agent_run": True,
    "share_dataset_access": False,  # grants are per namespace
    "revoke_dataset_access": False,
    "list_dataset_shares": True,
    "share_namespace_access": True,
    "revoke_namespace_access": True,
    "list_namespace_shares": True,
    "list_conversations": True,
    "get_conversation": True,
}


def test_the_count_covers_every_public_call_of_the_sdk() -> None:
    from datalinks.api import DataLinksAPI

    public = {name for name in vars(DataLinksAPI) if not name.startswith("_") and callable(getattr(DataLinksAPI, name))}
    public -= {"close"}
    assert public | {PART_UPLOAD} == set(CALLS)
    assert len(CALLS) == 55
    assert sum(value is True for value in CALLS.values()) == 51


def fresh(server: Server, rows: list[dict] | None = None, namespace: str = "shop") -> tuple[str, object]:
    name = "d" + uuid.uuid4().hex[:8]
    api = server.api(namespace, name)
    if rows is not None:
        api.create_space()
        result = api.ingest(data=rows)
        assert result.failed == []
    return name, api


def test_create_space_then_ingest_then_query_data(server: Server) -> None:
    """The README's quick start: create_space(), ingest(data=rows), query_data()."""
    _, api = fresh(server)
    api.create_space()
    api.create_space()  # exists: 409, which the SDK takes as success
    result = api.ingest(data=PRODUCTS)
    assert result.successful == PRODUCTS and result.failed == []
    data = api.query_data(include_metadata=False)
    assert sorted(row["product"] for row in data) == sorted(p["product"] for p in PRODUCTS)
    assert all(not key.startswith("_") for row in data for key in row)


def test_ingest_in_batches_with_a_description_and_schema(server: Server) -> None:
    _, api = fresh(server)
    result = api.ingest(
        data=PRODUCTS,
        batch_size=2,
        data_description="Shaving products",
        schema_definition={"brand": "Maker", "product": "Name", "price": "Price in EUR", "category": "Kind"},
    )
    assert len(result.successful) == 4 and result.failed == []
    info = api.get_dataset_info()
    assert info.metadata.row_count == 4
    assert info.metadata.data_description.root == "Shaving products"


def test_ingest_with_a_rows_step_and_entity_resolution(server: Server) -> None:
    """As the SDK's example: the rows sit under a key, ProcessStructured(derive_from="rows")."""
    _, api = fresh(server)
    result = api.ingest(
        data=[{"rows": PRODUCTS}],
        inference_steps=Pipeline(ProcessStructured(derive_from="rows")),
        entity_resolution=MatchTypeConfig(ExactMatch()),
    )
    assert result.failed == []
    assert len(api.query_data()) == 4


def test_ingest_normalises_onto_target_columns(server: Server) -> None:
    _, api = fresh(server)
    steps = Pipeline(
        Normalize(
            target_cols={"maker": "the brand", "item": "the product"},
            mode=NormalizeModes.ALL_IN_ONE,
            model=None,
            provider=None,
        )
    )
    rows = [{"maker": "Braun", "item": "Series 9"}]
    assert api.ingest(data=rows, inference_steps=steps).failed == []
    assert api.query_data() == [{"maker": "Braun", "item": "Series 9"}]


def test_ingest_refuses_reverse_geo_and_reports_the_rows_failed(server: Server) -> None:
    _, api = fresh(server)
    result = api.ingest(data=[{"lat": 1.0}], inference_steps=Pipeline(ReverseGeo(derive_from="lat")), max_attempts=1)
    assert result.successful == [] and result.failed == [{"lat": 1.0}]


def test_query_data_with_the_query_language(server: Server) -> None:
    name, api = fresh(server, PRODUCTS)
    data = api.query_data(f'Ontology("shop/{name}").filter(price > 100 and category != "Razor").orderBy(price, desc)')
    assert [row["product"] for row in data] == ["iO Series 10", "S9000"]
    with_metadata = api.query_data(f"Ontology(shop/{name}).select(brand).limit(1)", include_metadata=True)
    assert len(with_metadata) == 1 and "__metadata" in with_metadata[0] and "price" not in with_metadata[0]
    assert api.query_data(f'Ontology("shop/{name}").filter(pric > 1)') is None  # 422: unknown field
    found = api.query_data(f'Ontology("shop/{name}").filter(brand contains "RA" and product endsWith "10")')
    assert [row["brand"] for row in found] == ["Oral-B"]


def test_query_data_in_natural_language(server: Server) -> None:
    _, api = fresh(server, PRODUCTS)
    data = api.query_data("Which orders are over 100?", is_natural_language=True)
    assert data == [{"customer": "alice", "total": 120}]


def test_query_search_around_follows_an_active_link(server: Server) -> None:
    products, api = fresh(server, PRODUCTS)
    brands, _ = fresh(server, BRANDS)
    assert api.add_link("shop", products, "brand", "shop", brands, "name", "ExactMatch") is True
    data = api.query_data(
        f'Ontology("shop/{products}").filter(category == "Shaver").searchAround("shop/{brands}").find(country != "NL")'
    )
    assert data == [{"name": "Braun", "country": "DE"}]


def test_ask_streams_the_sdk_events(server: Server) -> None:
    _, api = fresh(server, PRODUCTS)
    events = list(api.ask("Who ordered most?"))
    types = [e.type for e in events]
    assert types[:3] == ["run-started", "planningStarted", "plan"]
    assert events[2].data["steps"] == PLAN and events[2].data["reasoning"]
    steps = [e.data for e in events if e.type == "step"]
    assert [s["index"] for s in steps] == [0, 1] and [s["query"] for s in steps] == QUERIES
    assert types[-2:] == ["answerStarted", "answer"] and events[-1].data == {"response": ANSWER}
    assert "stepStarted" in types


def test_autorag_answers_with_steps(server: Server) -> None:
    _, api = fresh(server, PRODUCTS)
    result = api.autorag("Who ordered most?")
    assert result["response"] == ANSWER
    assert [s["query"] for s in result["steps"]] == QUERIES


def test_conversations_list_and_detail(server: Server) -> None:
    api = server.api("convos", "x")
    api.create_space()
    first = api.ask("Who ordered most?")
    conversation_id = next(e.data["conversationId"] for e in first if e.type == "run-started")
    listed = api.list_conversations()
    assert [str(c.id) for c in listed.conversations] == [conversation_id]
    assert listed.conversations[0].title == "Who ordered most?"
    detail = api.get_conversation(conversation_id)
    assert str(detail.id) == conversation_id and detail.title == "Who ordered most?"
    assert server.api("convos", "x", token=server.bob).get_conversation(conversation_id) is None  # not bob's


def multipart(api, payload: bytes, filename: str = "products.jsonl") -> tuple[str, str, list[dict]]:
    prepared = api.prepare_multipart_upload(filename, len(payload))
    parts = []
    for number, entry in enumerate(prepared["presignedUrls"], start=1):
        chunk = payload[(number - 1) * prepared["partSize"] : number * prepared["partSize"]]
        response = requests.put(entry["url"], data=chunk, timeout=30)
        response.raise_for_status()
        parts.append({"partNumber": number, "etag": response.headers["ETag"].strip('"')})
    return prepared["uploadId"], prepared["key"], parts


def jsonl(rows: list[dict]) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in rows).encode()


def test_multipart_upload_finish_and_wait(server: Server) -> None:
    """The SDK's multipart example: prepare, PUT each part, finish, wait_for_ingestion."""
    _, api = fresh(server)
    api.create_space(schema_definition={"brand": "Maker", "product": "Name", "price": "Price", "category": "Kind"})
    upload_id, key, parts = multipart(api, jsonl(PRODUCTS))
    result = api.finish_multipart_upload(
        upload_id,
        key,
        parts,
        name="products.jsonl",
        entity_resolution=MatchTypeConfig(ExactMatch()),
        infer_batch_size=100,
    )
    final = api.wait_for_ingestion(result["id"], poll_interval=1, timeout=60)
    assert final.status == "SUCCEEDED" and final.processed_rows == 4
    attempts = api.list_ingestions()
    assert [str(a.id) for a in attempts] == [result["id"]] and attempts[0].attributes.name == "products.jsonl"


def test_finish_takes_the_schema_of_a_dataset_without_fields(server: Server) -> None:
    _, api = fresh(server)
    api.create_space()
    upload_id, key, parts = multipart(api, jsonl(BRANDS))
    result = api.finish_multipart_upload(upload_id, key, parts, schema_definition={"name": "Brand", "country": "ISO"})
    assert api.wait_for_ingestion(result["id"], poll_interval=1, timeout=60).status == "SUCCEEDED"
    assert api.get_dataset_info().metadata.column_names == ["name", "country"]


def test_abort_multipart_upload(server: Server) -> None:
    _, api = fresh(server, PRODUCTS)
    prepared = api.prepare_multipart_upload("x.csv", 10)
    api.abort_multipart_upload(prepared["uploadId"], prepared["key"])
    with pytest.raises(DataLinksRequestError) as refused:
        api.abort_multipart_upload(prepared["uploadId"], prepared["key"])  # already aborted
    assert refused.value.status_code == 409


def test_retry_and_mark_seen(server: Server) -> None:
    _, api = fresh(server)
    api.create_space(schema_definition={"name": "Brand"})
    upload_id, key, parts = multipart(api, b'{"name": "Braun"}\n{not json\n', "broken.jsonl")
    failed = api.finish_multipart_upload(upload_id, key, parts)
    assert api.wait_for_ingestion(failed["id"], poll_interval=1, timeout=60).status == "FAILED"
    retried = api.retry_ingestion(failed["id"])
    assert retried is not None and str(retried.id) != failed["id"]
    before = next(a for a in api.list_ingestions() if str(a.id) == failed["id"]).attributes.seen_at
    api.mark_ingestion_seen(failed["id"])
    after = next(a for a in api.list_ingestions() if str(a.id) == failed["id"]).attributes.seen_at
    assert after > before


def test_dataset_info_listings_and_sort_order(server: Server) -> None:
    name, api = fresh(server, PRODUCTS)
    info = api.get_dataset_info()
    assert (info.dataset.name, info.dataset.namespace, info.dataset.owner) == (name, "shop", "alice")
    assert info.dataset.visibility.value == "Private"
    assert info.metadata.column_names == ["brand", "category", "product", "price"]
    api.update_sort_order(["price", "product", "brand", "category"])
    assert api.get_dataset_info().metadata.column_names == ["price", "product", "brand", "category"]
    with pytest.raises(DataLinksRequestError):
        api.update_sort_order(["price"])
    assert name in [d.name for d in api.list_datasets()]
    assert name in [d.name for d in api.list_datasets(namespace="shop")]
    assert api.list_datasets(namespace="nowhere") == []
    assert name in [d.name for d in api.list_all_datasets_schema()]
    assert name in [d.name for d in api.list_datasets_in_namespace_schema()]
    assert {"shop"} <= {n.name for n in api.list_namespaces()}
    assert all(n.owner == "alice" for n in api.list_namespaces())


def test_clear_dataset(server: Server) -> None:
    _, api = fresh(server, PRODUCTS)
    api.clear_dataset()
    assert api.get_dataset_info().metadata.row_count == 0


def test_links_add_load_ontology_save(server: Server) -> None:
    products, api = fresh(server, PRODUCTS, namespace="linked")
    brands, _ = fresh(server, BRANDS, namespace="linked")
    assert api.add_link("linked", products, "brand", "linked", brands, "name", "ExactMatch") is True
    assert api.add_link("linked", products, "brand", "linked", brands, "name", "ExactMatch") is False
    assert api.add_link("linked", products, "nope", "linked", brands, "name", "ExactMatch") is None
    link = f"linked/{products}.brand", f"linked/{brands}.name"
    assert [(li.origin, li.destination, li.match_type) for li in api.load_links()] == [(*link, "ExactMatch")]
    ontology = api.get_ontology()
    assert [(li.origin, li.destination) for li in ontology] == [link]
    api.save_ontology(remove=ontology)
    assert api.get_ontology() == []
    api.save_ontology(add=[{"origin": link[0], "destination": link[1], "hits": 4, "matchType": "ExactMatch"}])
    assert len(api.get_ontology()) == 1


def test_preview_and_rebuild_links_from_the_data(server: Server) -> None:
    products, api = fresh(server, PRODUCTS, namespace="found")
    brands, _ = fresh(server, BRANDS, namespace="found")
    preview = api.preview_links(data=api.query_data(), entity_resolution=MatchTypeConfig(ExactMatch()))
    pair = {f"found/{products}.brand", f"found/{brands}.name"}
    assert any({li.origin, li.destination} == pair and li.hits == 4 for li in preview)
    assert api.load_links() == []  # nothing saved by a preview
    rebuilt = api.rebuild_links(data=[])
    assert any({li.origin, li.destination} == pair for li in rebuilt)
    assert any({li.origin, li.destination} == pair for li in api.load_links())
    assert api.get_ontology() == []  # suggestions, not active


def test_curate_links(server: Server) -> None:
    fresh(server, PRODUCTS, namespace="curated")
    fresh(server, BRANDS, namespace="curated")
    result = server.api("curated", "x").curate_links(namespace="curated")
    assert result is not None and result.datasets_processed == 2


def test_infer_schema_description_and_preview(server: Server) -> None:
    api = server.api()
    inferred = api.infer_schema(PRODUCTS)
    assert inferred.schema_ == {"brand": "text", "category": "text", "product": "text", "price": "integer"}
    described = api.infer_dataset_description(PRODUCTS, current_description="Products")
    assert described["dataDescription"] == "Products" and set(described["schemaDefinition"]) == set(PRODUCTS[0])
    preview = api.preview_ingest([{"rows": PRODUCTS}], inference_steps=Pipeline(ProcessStructured(derive_from="rows")))
    assert preview == PRODUCTS


def test_current_user_and_tokens(server: Server) -> None:
    api = server.api()
    me = api.get_current_user()
    assert me.username == "alice" and me.id
    created = api.add_token("ci", expires_at="2099-01-01T00:00:00Z")
    assert created.token and created.name == "ci" and created.expires_at.startswith("2099-01-01")
    assert created.id in [t.id for t in api.list_tokens()]
    assert all(t.token is None for t in api.list_tokens())
    assert server.api(token=created.token).get_current_user().username == "alice"
    permissions = api.list_token_permissions(created.id)
    assert permissions.restricted is False
    api.delete_token(created.id)
    assert created.id not in [t.id for t in api.list_tokens()]
    assert server.api(token=created.token).get_current_user() is None  # revoked: 401
    assert api.add_token("narrow", access_restricted_to=[{"username": "alice", "namespace": "shop"}]) is None


def test_namespace_shares(server: Server) -> None:
    name, api = fresh(server, PRODUCTS, namespace="shared")
    bob = server.api("shared", name, token=server.bob)
    assert bob.get_dataset_info() is None
    api.share_namespace_access("bob", "viewer")
    assert [(g.username, g.role.value) for g in api.list_namespace_shares()] == [("bob", "viewer")]
    assert [(g.username, g.role.value) for g in api.list_dataset_shares()] == [("bob", "viewer")]
    assert server.api("shared", name, token=server.bob).query_data(
        f'Ontology("alice/shared/{name}").filter(price < 100)', username="alice"
    ) == [{"brand": "Braun", "category": "Shaver", "product": "Series 9", "price": 90}]
    with pytest.raises(DataLinksRequestError):
        bob.share_namespace_access("alice", "editor")  # only the owner shares
    api.share_namespace_access("bob", "editor")
    assert [(g.username, g.role.value) for g in api.list_namespace_shares()] == [("bob", "editor")]
    api.revoke_namespace_access("bob", "editor")
    assert api.list_namespace_shares() == []


def test_agent_runs_status_feedback_resume_and_delete(server: Server) -> None:
    api = server.api("runs", "x")
    api.create_space()
    events = list(api.ask("Who ordered most?"))
    run_id = next(e for e in events if e.type == "run-started").data["runId"]
    status = api.get_agent_run_status(run_id)
    assert status.status.value == "completed" and status.question == "Who ordered most?"
    assert status.can_resume is False and status.result["response"] == ANSWER
    assert [s["query"] for s in status.result["steps"]] == QUERIES
    api.submit_agent_run_feedback(run_id, thumbs_up=True, comment="right")
    api.submit_agent_run_feedback(run_id, thumbs_up=False)  # replaces the rating
    resumed = list(api.resume_agent_run(run_id))
    assert [e.type for e in resumed] == ["terminal"] and resumed[0].data["result"]["response"] == ANSWER
    assert server.api("runs", "x", token=server.bob).get_agent_run_status(run_id) is None  # not bob's
    api.delete_agent_run(run_id)
    assert api.get_agent_run_status(run_id) is None
    with pytest.raises(DataLinksRequestError) as missing:
        api.submit_agent_run_feedback(run_id, thumbs_up=True)
    assert missing.value.status_code == 404


def test_usage_history_and_by_day(server: Server) -> None:
    api = server.api("usage", "x", token=server.bob)
    api.create_space()
    for _ in range(3):
        assert api.autorag("Who ordered most?")["response"] == ANSWER
    first = api.get_usage_history(page_size=2)
    assert len(first.data) == 2 and first.meta.page_cursor is not None
    rest = api.get_usage_history(page_size=2, page_cursor=first.meta.page_cursor)
    assert len(rest.data) == 1 and rest.meta.page_cursor is None
    stamps = [item.timestamp for item in first.data + rest.data]
    assert stamps == sorted(stamps) and all(item.cost_usd == 0 for item in first.data)
    by_day = api.get_usage_by_day(timezone="Europe/Lisbon")
    assert by_day.meta.time_zone_for_aggregation == "Europe/Lisbon"
    assert sum(day.tokens_used for day in by_day.data) == sum(i.tokens_used for i in first.data + rest.data)
    assert [str(d.date) for d in by_day.data] == sorted(
        {s.astimezone(ZoneInfo("Europe/Lisbon")).date().isoformat() for s in stamps}
    )
    assert api.get_usage_by_day(timezone="Mars/Olympus") is None  # 422


def test_update_infer_definition(server: Server) -> None:
    _, api = fresh(server, PRODUCTS)
    schema = dict(api.get_dataset_info().metadata.schema_definition.root)
    api.update_infer_definition(data_description="Razors and brushes", schema_definition={**schema, "brand": "Maker"})
    info = api.get_dataset_info()
    assert info.metadata.data_description.root == "Razors and brushes"
    assert info.metadata.schema_definition.root == {**schema, "brand": "Maker"}
    assert "brand" in info.metadata.column_names
    with pytest.raises(DataLinksRequestError) as refused:  # a field that rows use is not dropped unasked
        api.update_infer_definition(schema_definition={"brand": "Maker"})
    assert refused.value.status_code == 409


def test_rename_and_delete_dataset(server: Server) -> None:
    name, api = fresh(server, PRODUCTS)
    renamed = name + "x"
    api.rename_dataset(renamed)
    assert api.get_dataset_info() is None
    moved = server.api("shop", renamed)
    assert moved.get_dataset_info().metadata.row_count == 4
    moved.delete_dataset()
    assert moved.get_dataset_info() is None
    assert renamed not in [d.name for d in moved.list_datasets()]


def test_rename_namespace(server: Server) -> None:
    namespace = "n" + uuid.uuid4().hex[:8]
    name, api = fresh(server, PRODUCTS, namespace=namespace)
    api.rename_namespace(namespace + "x")
    names = {n.name for n in api.list_namespaces()}
    assert namespace + "x" in names and namespace not in names
    assert server.api(namespace + "x", name).get_dataset_info().metadata.row_count == 4
