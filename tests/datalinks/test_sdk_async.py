"""The SDK's `AsyncDataLinksAPI`, unchanged, against the same server process: the calls of the
README's flows, awaited, with `DL_HOST` in the `/api/v1` form of the SDK's `.env.example`."""

from __future__ import annotations

import asyncio
import uuid

from datalinks.api import AsyncDataLinksAPI

from tests.datalinks.conftest import Server
from tests.datalinks.test_sdk import BRANDS, PRODUCTS
from tests.fake_runs import ANSWER, QUERIES


def test_the_async_client_ingests_queries_links_and_asks(server: Server) -> None:
    products, brands = "p" + uuid.uuid4().hex[:8], "b" + uuid.uuid4().hex[:8]

    async def flow() -> None:
        api = AsyncDataLinksAPI(server.config("async", products, host=server.prefixed))
        other = AsyncDataLinksAPI(server.config("async", brands, host=server.prefixed))
        try:
            await api.create_space()
            assert (await api.ingest(data=PRODUCTS)).failed == []
            assert (await other.ingest(data=BRANDS, data_description="Brands")).failed == []
            info = await api.get_dataset_info()
            assert info.metadata.row_count == 4
            assert {products, brands} <= {d.name for d in await api.list_datasets(namespace="async")}
            data = await api.query_data(f'Ontology("async/{products}").filter(brand startsWith "p")')
            assert [row["product"] for row in data] == ["S9000"]
            assert await api.add_link("async", products, "brand", "async", brands, "name", "ExactMatch") is True
            reached = await api.query_data(
                f'Ontology("async/{products}").filter(price > 200).searchAround("async/{brands}").find()'
            )
            assert reached == [{"name": "Oral-B", "country": "US"}]
            assert len(await api.get_ontology()) == 1
            events = [event async for event in api.ask("Who ordered most?")]
            assert [e.data["query"] for e in events if e.type == "step"] == QUERIES
            assert events[-1].type == "answer" and events[-1].data["response"] == ANSWER
            assert (await api.autorag("Who ordered most?"))["response"] == ANSWER
            assert (await api.get_current_user()).username == "alice"
            await api.share_namespace_access("bob", "viewer")
            assert [g.username for g in await api.list_namespace_shares()] == ["bob"]
            await api.revoke_namespace_access("bob", "viewer")
            await api.clear_dataset()
            assert (await api.get_dataset_info()).metadata.row_count == 0
        finally:
            await api.aclose()
            await other.aclose()

    asyncio.run(flow())
