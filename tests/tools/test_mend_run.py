"""Issue 27: a refused query whose slip has one sensible reading runs mended, with no second
model call, on the real checker and each store; the reasoning says what changed."""

from __future__ import annotations

import pytest

from datawell.graphs.events import QueryGenerated, RowsReady
from datawell.graphs.nl2ql.state import QueryDraft
from datawell.llm.scripted import ScriptedChatModel
from datawell.runs import AskRequest, Runs
from datawell.services import Services
from tests.tools.conftest import World, load

MARCH_2024 = 1_709_251_200  # 2024-03-01 00:00 UTC


@pytest.fixture
async def refunds(services: Services, world: World) -> World:
    await load(
        services, world.sales, world.alice, "refunds",
        {"order_id": "the refunded order", "amount": "EUR refunded", "refund_time": "when, in Unix seconds"},
        {"order_id": "integer", "amount": "real", "refund_time": "integer"},
        [{"order_id": 1, "amount": 5.0, "refund_time": MARCH_2024},
         {"order_id": 2, "amount": 2.5, "refund_time": MARCH_2024 + 86_400},
         {"order_id": 1, "amount": 1.0, "refund_time": MARCH_2024 + 40 * 86_400}],
    )  # fmt: skip
    return world


async def ask(services: Services, world: World, question: str) -> list[object]:
    run = await Runs(services).start_nl2ql(AskRequest(world.alice, world.sales, question))
    return [event async for event in run.events()]


async def test_a_column_read_through_the_wrong_alias_runs_mended(
    services: Services, refunds: World, chat_model: ScriptedChatModel
) -> None:
    chat_model.script += [
        QueryDraft(
            query="SELECT o.order_id, SUM(o.amount) AS refunded FROM orders AS o "
            "JOIN refunds AS r ON r.order_id = o.order_id GROUP BY o.order_id ORDER BY o.order_id"
        )
    ]

    events = await ask(services, refunds, "How much was refunded for each order?")

    mended = (
        "SELECT o.order_id, SUM(r.amount) AS refunded FROM orders AS o "
        "JOIN refunds AS r ON r.order_id = o.order_id GROUP BY o.order_id ORDER BY o.order_id"
    )
    assert isinstance(events[0], QueryGenerated)
    assert [c["rule"] for c in events[0].changes] == ["requalify_columns"]
    assert events[0].changes[-1]["after"] == events[0].query
    assert events[0].model_query == (
        "SELECT o.order_id, SUM(o.amount) AS refunded FROM orders AS o "
        "JOIN refunds AS r ON r.order_id = o.order_id GROUP BY o.order_id ORDER BY o.order_id"
    )
    assert events[0].model_copy(update={"model_query": "", "changes": []}) == QueryGenerated(
        query=mended, reasoning="written by the query model; mended: o.amount read as r.amount", attempts=1
    )
    assert isinstance(events[1], RowsReady)
    assert [(row["order_id"], row["refunded"]) for row in events[1].rows] == [(1, 6.0), (2, 2.5)]
    assert len(chat_model.calls) == 1  # no repair was asked of the model


async def test_a_mended_query_is_fitted_as_a_written_one_is(
    services: Services, refunds: World, chat_model: ScriptedChatModel
) -> None:
    """A query ordered by a column read through the wrong alias, and cut by a LIMIT the
    question never asked for: the rules that fit a written query run on the mended one too
    (before the mend the query was refused, so nothing could fit it)."""
    query = (
        "SELECT o.customer FROM orders AS o JOIN refunds AS r ON r.order_id = o.order_id ORDER BY r.customer LIMIT 1"
    )
    chat_model.script += [QueryDraft(query=query)]

    events = await ask(services, refunds, "Which customers got refunds?")

    assert isinstance(events[0], QueryGenerated)
    assert [c["rule"] for c in events[0].changes] == ["requalify_columns", "drop_unasked_limit"]
    assert events[0].model_query == query
    assert (
        events[0].query
        == events[0].changes[-1]["after"]
        == ("SELECT o.customer FROM orders AS o JOIN refunds AS r ON r.order_id = o.order_id ORDER BY o.customer")
    )
    assert isinstance(events[1], RowsReady)
    assert [row["customer"] for row in events[1].rows] == ["Ada", "Ada", "Bob"]  # Ada's order had two refunds
    assert len(chat_model.calls) == 1


async def test_a_join_a_mend_drops_no_longer_merges_rows(
    services: Services, refunds: World, chat_model: ScriptedChatModel
) -> None:
    """advising-29: the written query joined a table only to filter; fitted, it showed each
    row once. The join could not run and the mend dropped it; the mend starts from the query as
    written, so nothing merges two of Ada's orders that were both paid."""
    chat_model.script += [
        QueryDraft(
            query="SELECT o.paid FROM orders AS o JOIN refunds AS r ON o.refund_id = r.refund_id "
            "WHERE r.customer = 'Ada'"
        )
    ]

    events = await ask(services, refunds, "Were Ada's orders paid?")

    assert isinstance(events[0], QueryGenerated)
    assert [c["rule"] for c in events[0].changes] == ["requalify_columns", "drop_dead_joins"]
    assert events[0].changes[-1]["after"] == events[0].query
    assert events[0].model_query == (
        "SELECT o.paid FROM orders AS o JOIN refunds AS r ON o.refund_id = r.refund_id WHERE r.customer = 'Ada'"
    )
    assert events[0].model_copy(update={"model_query": "", "changes": []}) == QueryGenerated(
        query="SELECT o.paid FROM orders AS o WHERE o.customer = 'Ada'",
        reasoning="written by the query model; mended: r.customer read as o.customer; the join of refunds could "
        "not run (o.refund_id, r.refund_id) and nothing else read it: dropped",
        attempts=1,
    )
    assert isinstance(events[1], RowsReady)
    assert [row["paid"] for row in events[1].rows] == [True, True]  # orders 1 and 4
    assert len(chat_model.calls) == 1


async def test_unix_seconds_in_a_date_function_run_as_timestamps(
    services: Services, refunds: World, chat_model: ScriptedChatModel
) -> None:
    chat_model.script += [
        QueryDraft(query="SELECT strftime('%Y-%m', refund_time) AS month, COUNT(*) AS n FROM refunds GROUP BY month")
    ]

    events = await ask(services, refunds, "How many refunds were there each month?")

    assert isinstance(events[0], QueryGenerated)
    assert events[0].query == (
        "SELECT STRFTIME('%Y-%m', TO_TIMESTAMP(refund_time)) AS month, COUNT(*) AS n FROM refunds GROUP BY month"
    )
    assert events[0].reasoning.endswith("mended: refund_time holds Unix seconds: read as to_timestamp()")
    assert isinstance(events[1], RowsReady)
    assert sorted((row["month"], row["n"]) for row in events[1].rows) == [("2024-03", 2), ("2024-04", 1)]
    assert len(chat_model.calls) == 1


async def test_a_join_that_skipped_the_linking_table_runs_through_it(
    services: Services, world: World, chat_model: ScriptedChatModel
) -> None:
    await load(services, world.sales, world.alice, "authors", {"aid": "author id", "name": "who"},
               {"aid": "integer", "name": "text"}, [{"aid": 1, "name": "Ada"}, {"aid": 2, "name": "Bo"}])  # fmt: skip
    await load(services, world.sales, world.alice, "papers", {"pid": "paper id", "title": "its title"},
               {"pid": "integer", "title": "text"}, [{"pid": 10, "title": "On A"}, {"pid": 11, "title": "On B"}])  # fmt: skip
    await load(services, world.sales, world.alice, "writes", {"aid": "the author", "pid": "the paper"},
               {"aid": "integer", "pid": "integer"},
               [{"aid": 1, "pid": 10}, {"aid": 1, "pid": 11}, {"aid": 2, "pid": 11}])  # fmt: skip
    chat_model.script += [
        QueryDraft(
            query="SELECT a.name, COUNT(p.title) AS papers FROM authors AS a JOIN papers AS p ON a.aid = p.aid "
            "GROUP BY a.name ORDER BY a.name"
        )
    ]

    events = await ask(services, world, "How many papers did each author write?")

    assert isinstance(events[0], QueryGenerated)
    assert events[0].query == (
        "SELECT a.name, COUNT(p.title) AS papers FROM authors AS a JOIN writes ON a.aid = writes.aid "
        "JOIN papers AS p ON writes.pid = p.pid GROUP BY a.name ORDER BY a.name"
    )
    assert events[0].reasoning.endswith("mended: papers has no aid: joined through writes, which has aid and pid")
    assert isinstance(events[1], RowsReady)
    assert [(row["name"], row["papers"]) for row in events[1].rows] == [("Ada", 2), ("Bo", 1)]
    assert len(chat_model.calls) == 1


async def test_a_one_table_query_reading_another_tables_column_runs_joined(
    services: Services, refunds: World, chat_model: ScriptedChatModel
) -> None:
    chat_model.script += [
        QueryDraft(query="SELECT customer, SUM(amount) AS refunded FROM refunds GROUP BY customer ORDER BY customer")
    ]

    events = await ask(services, refunds, "How much was refunded to each customer?")

    assert isinstance(events[0], QueryGenerated)
    assert events[0].query == (
        "SELECT orders.customer, SUM(refunds.amount) AS refunded FROM refunds "
        "JOIN orders ON refunds.order_id = orders.order_id GROUP BY orders.customer ORDER BY orders.customer"
    )
    assert events[0].reasoning.endswith("mended: refunds has no customer: joined orders on order_id")
    assert isinstance(events[1], RowsReady)
    assert [(row["customer"], row["refunded"]) for row in events[1].rows] == [("Ada", 6.0), ("Bob", 2.5)]
    assert len(chat_model.calls) == 1


async def test_a_filter_nobody_asked_for_that_cannot_run_goes_with_its_join(
    services: Services, world: World, chat_model: ScriptedChatModel
) -> None:
    """atis-26's slip: a filter on a table no dataset is named, on a text the question never says."""
    chat_model.script += [
        QueryDraft(
            query="SELECT SUM(o.total) AS spent FROM orders AS o JOIN shops AS s ON o.shop_id = s.shop_id "
            "WHERE o.customer = 'Ada' AND s.country = 'France'"
        )
    ]

    events = await ask(services, world, "How much did Ada's orders come to?")

    assert isinstance(events[0], QueryGenerated)
    assert [c["rule"] for c in events[0].changes] == ["drop_invented_filters"]
    assert events[0].changes[-1]["after"] == events[0].query
    assert events[0].model_query == (
        "SELECT SUM(o.total) AS spent FROM orders AS o JOIN shops AS s ON o.shop_id = s.shop_id "
        "WHERE o.customer = 'Ada' AND s.country = 'France'"
    )
    assert events[0].model_copy(update={"model_query": "", "changes": []}) == QueryGenerated(
        query="SELECT SUM(o.total) AS spent FROM orders AS o WHERE o.customer = 'Ada'",
        reasoning="written by the query model; mended: filters on text the question never mentions, one of which "
        "could not run, dropped: s.country = 'France'; the join of shops, read for nothing else: dropped",
        attempts=1,
    )
    assert isinstance(events[1], RowsReady)
    assert [row["spent"] for row in events[1].rows] == [42.5]
    assert len(chat_model.calls) == 1
