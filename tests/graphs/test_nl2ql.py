from __future__ import annotations

import dataclasses

import pytest

from datawell.errors import Forbidden
from datawell.graphs.events import GraphEvent, QueryGenerated, RowsReady, RunFailed
from datawell.graphs.nl2ql.graph import build_graph
from datawell.graphs.nl2ql.state import QueryContext, QueryDraft
from datawell.llm.models import FixedChatModels, ModelChoice, StageChoices
from datawell.llm.scripted import ScriptedChatModel
from datawell.runs import AskRequest, Runs, query_deps
from datawell.services import Services
from datawell.storage.hints import ColumnHint
from tests.conftest import Account
from tests.graphs.conftest import Shop, user_named
from tests.graphs.fakes import FakeQueryTools

OSLO = "SELECT name FROM customers WHERE city = 'Oslo'"


async def ask(services: Services, request: AskRequest) -> list[GraphEvent]:
    run = await Runs(services).start_nl2ql(request)
    return [event async for event in run.events()]


async def test_success_prints_query_and_rows(
    services: Services, shop: Shop, tools: FakeQueryTools, chat_model: ScriptedChatModel
) -> None:
    chat_model.script.append(QueryDraft(query=OSLO))
    tools.rows[OSLO] = [{"name": "Ann"}, {"name": "Ole"}]

    events = await ask(services, AskRequest(shop.user, shop.namespace, "Who lives in Oslo?"))

    assert events == [
        QueryGenerated(query=OSLO, reasoning="written by the query model", attempts=1, model_query=OSLO),
        RowsReady(query=OSLO, rows=[{"name": "Ann"}, {"name": "Ole"}]),
    ]
    prompt = chat_model.prompts()[0]
    assert "Who lives in Oslo?" in prompt
    assert "table customers" in prompt and "city (text)" in prompt
    # The active link is offered as a join; the merely suggested one is not.
    assert "orders.customer_id = customers.id" in prompt
    assert "customers.city = orders.amount" not in prompt
    dialect = {"sqlite": "SQLite", "postgresql": "PostgreSQL"}[services.rows.dialect]
    assert "LEFT JOIN" in prompt and f"read-only SQL queries ({dialect})" in prompt
    assert "julianday(a) - julianday(b)" in prompt


async def test_one_repair_feeds_the_checker_error_back(
    services: Services, shop: Shop, tools: FakeQueryTools, chat_model: ScriptedChatModel
) -> None:
    bad = "SELECT customer_name FROM customers"
    good = "SELECT name FROM customers"
    chat_model.script += [QueryDraft(query=bad), QueryDraft(query=good)]
    tools.rows[good] = [{"name": "Ann"}]

    events = await ask(services, AskRequest(shop.user, shop.namespace, "List customer names"))

    assert [e.type for e in events] == ["query", "rows"]
    assert isinstance(events[0], QueryGenerated) and events[0].attempts == 2 and events[0].query == good
    second = chat_model.prompts()[1]
    assert f"Your previous query was:\n{bad}" in second
    assert "no column 'customer_name'" in second
    assert "did you mean ['customer_id']" in second
    assert [c.query for c in tools.ran()] == [good]


async def test_a_proposed_query_is_checked_and_run_without_a_model_call(
    services: Services, shop: Shop, tools: FakeQueryTools, chat_model: ScriptedChatModel
) -> None:
    tools.rows[OSLO] = [{"name": "Ann"}]
    deps = query_deps(services)
    graph = build_graph(deps)
    context = QueryContext(caller=shop.caller, namespace=shop.namespace)

    out = await graph.ainvoke({"question": "Run this query", "proposed": OSLO}, context=context)

    assert (out["query"], out["rows"], out["attempts"]) == (OSLO, [{"name": "Ann"}], 1)
    assert chat_model.calls == []


async def test_run_time_failure_is_repaired_and_announced_once(
    services: Services, shop: Shop, tools: FakeQueryTools, chat_model: ScriptedChatModel
) -> None:
    first = "SELECT name FROM customers WHERE id > 'x'"
    second = "SELECT name FROM customers WHERE id > 1"
    chat_model.script += [QueryDraft(query=first), QueryDraft(query=second)]
    tools.run_errors[first] = "operator does not exist: integer > text"
    tools.rows[second] = [{"name": "Ole"}]

    events = await ask(services, AskRequest(shop.user, shop.namespace, "Customers with an id over 1"))

    assert events == [
        QueryGenerated(query=second, reasoning="written by the query model", attempts=2, model_query=second),
        RowsReady(query=second, rows=[{"name": "Ole"}]),
    ]
    assert "operator does not exist: integer > text" in chat_model.prompts()[1]


async def test_giving_up_ends_with_a_clear_error(
    services: Services, shop: Shop, tools: FakeQueryTools, chat_model: ScriptedChatModel
) -> None:
    chat_model.script += [QueryDraft(query=f"SELECT nope{i} FROM customers") for i in range(3)]

    events = await ask(services, AskRequest(shop.user, shop.namespace, "Something impossible"))

    assert len(events) == 1 and isinstance(events[0], RunFailed)
    assert events[0].error_code == "QUERY_ERROR"
    assert events[0].message.startswith("no valid query after 3 attempt(s)")
    assert "no column 'nope2'" in events[0].message
    assert "Traceback" not in events[0].message
    assert tools.ran() == []
    assert len(chat_model.calls) == 3  # bounded by query_max_attempts


async def test_refusal_ends_without_a_query(
    services: Services, shop: Shop, tools: FakeQueryTools, chat_model: ScriptedChatModel
) -> None:
    chat_model.script.append(QueryDraft(refusal="there is no weather data"))

    events = await ask(services, AskRequest(shop.user, shop.namespace, "Will it rain tomorrow?"))

    assert [event.model_dump() for event in events] == [
        {
            "type": "error",
            "error_code": "QUERY_REFUSED",
            "message": "the datasets cannot answer this: there is no weather data",
        }
    ]
    assert [c.method for c in tools.calls] == ["catalog"]


@pytest.mark.parametrize(
    ("statement", "keyword"),
    [("DELETE FROM orders WHERE amount < 10", "DELETE"), ("DROP TABLE customers", "DROP")],
)
async def test_a_question_that_changes_data_is_declined_without_repairs(
    services: Services, shop: Shop, tools: FakeQueryTools, chat_model: ScriptedChatModel, statement: str, keyword: str
) -> None:
    # The model obliges a request to change data; no repair can make that a read.
    chat_model.script.append(QueryDraft(query=statement))

    events = await ask(services, AskRequest(shop.user, shop.namespace, "Remove the small orders"))

    assert [event.model_dump() for event in events] == [
        {
            "type": "error",
            "error_code": "QUERY_REFUSED",
            "message": f"the datasets cannot answer this: the question asks to change data ({keyword}); "
            "queries here only read it",
        }
    ]
    assert len(chat_model.calls) == 1
    assert tools.ran() == []


async def test_a_reply_in_the_wrong_shape_is_retried(
    services: Services, shop: Shop, tools: FakeQueryTools, chat_model: ScriptedChatModel
) -> None:
    chat_model.script += ["SELECT name FROM customers", QueryDraft(query="SELECT name FROM customers")]
    tools.rows["SELECT name FROM customers"] = [{"name": "Ann"}]

    events = await ask(services, AskRequest(shop.user, shop.namespace, "Names"))

    assert [e.type for e in events] == ["query", "rows"]
    assert "did not follow the required format" in chat_model.prompts()[1]


async def test_helper_prompt_and_model_choice_reach_the_query_stage(
    services: Services, shop: Shop, tools: FakeQueryTools, chat_model: ScriptedChatModel, chat_models: FixedChatModels
) -> None:
    chat_model.script.append(QueryDraft(query="SELECT name FROM customers"))
    tools.rows["SELECT name FROM customers"] = [{"name": "Ann"}]
    choices = StageChoices(default=ModelChoice("gpt-x", "openai"))

    await ask(services, AskRequest(shop.user, shop.namespace, "Names", choices=choices, helper_prompt="Sort by name."))

    assert "Additional instructions from the caller:\nSort by name." in chat_model.prompts()[0]
    assert chat_models.requests == [("query", ModelChoice("gpt-x", "openai"))]


async def test_a_namespace_the_caller_cannot_read_is_refused_before_the_run(
    services: Services, shop: Shop, bob: Account, tools: FakeQueryTools
) -> None:
    intruder = await user_named(services, "bob")
    with pytest.raises(Forbidden):
        await ask(services, AskRequest(intruder, shop.namespace, "Names"))
    assert tools.calls == []


async def test_a_literal_in_another_case_runs_as_the_stored_value(
    services: Services, shop: Shop, tools: FakeQueryTools, chat_model: ScriptedChatModel
) -> None:
    """Issue 27: `city = 'oslo'` where the column stores `Oslo` runs as `city = 'Oslo'`."""
    customers = next(t for t in tools.tables if t.name == "customers")
    hinted = dataclasses.replace(
        customers, hints={"city": ColumnHint(type="text", distinct=2, values=["Oslo", "Paris"])}
    )
    tools.tables[tools.tables.index(customers)] = hinted
    chat_model.script.append(QueryDraft(query="SELECT name FROM customers WHERE city = 'oslo'"))
    tools.rows[OSLO] = [{"name": "Ann"}]

    events = await ask(services, AskRequest(shop.user, shop.namespace, "Who lives in Oslo?"))

    assert isinstance(events[0], QueryGenerated)
    assert [(c["rule"], c["after"]) for c in events[0].changes] == [("match_stored_values", OSLO)]
    assert events[0].model_copy(update={"changes": []}) == QueryGenerated(
        query=OSLO,
        reasoning="written by the query model; literals matched to the data: customers.city: 'oslo' is stored as 'Oslo'",
        attempts=1,
        model_query="SELECT name FROM customers WHERE city = 'oslo'",
    )
    assert events[1] == RowsReady(query=OSLO, rows=[{"name": "Ann"}])


async def test_an_empty_results_repair_names_the_column_that_holds_the_filters_text(
    services: Services, shop: Shop, tools: FakeQueryTools, chat_model: ScriptedChatModel
) -> None:
    """Issue 27: `name = 'Oslo'` finds nobody; the repair is told Oslo is a city, and the
    repaired query's rows are the answer."""
    customers = next(t for t in tools.tables if t.name == "customers")
    hinted = dataclasses.replace(
        customers,
        hints={
            "city": ColumnHint(type="text", distinct=2, values=["Oslo", "Paris"]),
            "name": ColumnHint(type="text", distinct=2, values=["Ann", "Ole"]),
        },
    )
    tools.tables[tools.tables.index(customers)] = hinted
    wrong = "SELECT name FROM customers WHERE name LIKE 'Oslo'"
    chat_model.script += [QueryDraft(query=wrong), QueryDraft(query=OSLO)]
    tools.rows[OSLO] = [{"name": "Ann"}]

    events = await ask(services, AskRequest(shop.user, shop.namespace, "Who lives in Oslo?"))

    repair = chat_model.prompts()[1]
    assert "It ran but returned no rows." in repair
    assert "- 'Oslo' is no value of customers.name; customers.city holds 'Oslo'" in repair
    assert events[-1] == RowsReady(query=OSLO, rows=[{"name": "Ann"}])


async def test_a_filter_of_a_text_another_column_stores_reads_that_column_before_it_runs(
    services: Services, shop: Shop, tools: FakeQueryTools, chat_model: ScriptedChatModel
) -> None:
    """Issue 27 (academic-21): `name = 'oslo'` would find nobody; the one column that stores
    the text (as 'Oslo') is read instead, with no repair."""
    customers = next(t for t in tools.tables if t.name == "customers")
    hints = {
        "city": ColumnHint(type="text", distinct=2, values=["Oslo", "Paris"]),
        "name": ColumnHint(type="text", distinct=2, values=["Ann", "Ole"]),
    }
    tools.tables[tools.tables.index(customers)] = dataclasses.replace(customers, hints=hints)
    chat_model.script.append(QueryDraft(query="SELECT name FROM customers WHERE name = 'oslo'"))
    tools.rows[OSLO] = [{"name": "Ann"}]

    events = await ask(services, AskRequest(shop.user, shop.namespace, "Who lives in Oslo?"))

    assert len(chat_model.prompts()) == 1
    assert isinstance(events[0], QueryGenerated)
    assert [(c["rule"], c["after"]) for c in events[0].changes] == [("filter_where_stored", OSLO)]
    assert events[0].model_copy(update={"changes": []}) == QueryGenerated(
        query=OSLO,
        reasoning="written by the query model; literals matched to the data: "
        "name holds no 'oslo'; customers.city holds 'Oslo': the filter reads it",
        attempts=1,
        model_query="SELECT name FROM customers WHERE name = 'oslo'",
    )
    assert events[-1] == RowsReady(query=OSLO, rows=[{"name": "Ann"}])


async def test_an_empty_results_repair_names_the_filters_whose_text_the_question_never_says(
    services: Services, shop: Shop, tools: FakeQueryTools, chat_model: ScriptedChatModel
) -> None:
    """Issue 27 (academic-22): asked about Oslo, the writer also filters on a name nobody
    gave; the repair says so, and the repaired query's rows are the answer."""
    invented = "SELECT name FROM customers WHERE city = 'Oslo' AND name = 'Ole Nordmann'"
    chat_model.script += [QueryDraft(query=invented), QueryDraft(query=OSLO)]
    tools.rows[OSLO] = [{"name": "Ann"}]

    events = await ask(services, AskRequest(shop.user, shop.namespace, "Who lives in Oslo?"))

    repair = chat_model.prompts()[1]
    assert "It ran but returned no rows." in repair
    assert (
        "- the question never mentions the text of name = 'Ole Nordmann': keep only the filters it asks for" in repair
    )
    assert "city = 'Oslo': keep" not in repair
    assert events[-1] == RowsReady(query=OSLO, rows=[{"name": "Ann"}])


async def test_a_limit_the_question_did_not_ask_for_is_dropped_and_said(
    services: Services, shop: Shop, tools: FakeQueryTools, chat_model: ScriptedChatModel
) -> None:
    """Issue 27: "each" asks for every row; the writer's LIMIT 10 would hide the rest."""
    every = "SELECT city, COUNT(*) AS people FROM customers GROUP BY city"
    chat_model.script.append(QueryDraft(query=f"{every} LIMIT 10"))
    tools.rows[every] = [{"city": "Oslo", "people": 2}]

    events = await ask(services, AskRequest(shop.user, shop.namespace, "How many customers live in each city?"))

    assert events[0] == QueryGenerated(
        query=every,
        reasoning="written by the query model; dropped LIMIT 10: the question asks for every row",
        attempts=1,
        model_query=f"{every} LIMIT 10",
        changes=[
            {
                "rule": "drop_unasked_limit",
                "before": f"{every} LIMIT 10",
                "after": every,
                "reason": "dropped LIMIT 10: the question asks for every row",
            }
        ],
    )


async def test_a_rule_switched_off_by_name_leaves_the_query_as_written(
    services: Services, shop: Shop, tools: FakeQueryTools, chat_model: ScriptedChatModel
) -> None:
    """Issue 47: with `drop_unasked_limit` off (DATAWELL_QUERY_RULES_DISABLED), the LIMIT stays."""
    every = "SELECT city, COUNT(*) AS people FROM customers GROUP BY city"
    chat_model.script.append(QueryDraft(query=f"{every} LIMIT 10"))
    tools.rows[f"{every} LIMIT 10"] = [{"city": "Oslo", "people": 2}]
    settings = services.settings.model_copy(update={"query_rules_disabled": "drop_unasked_limit"})

    run = await Runs(dataclasses.replace(services, settings=settings)).start_nl2ql(
        AskRequest(shop.user, shop.namespace, "How many customers live in each city?")
    )
    events = [event async for event in run.events()]

    assert events[0] == QueryGenerated(
        query=f"{every} LIMIT 10",
        reasoning="written by the query model",
        attempts=1,
        model_query=f"{every} LIMIT 10",
        changes=[],
    )


async def test_an_aggregate_asked_per_a_column_is_grouped_and_said(
    services: Services, shop: Shop, tools: FakeQueryTools, chat_model: ScriptedChatModel
) -> None:
    """Issue 27: "per city" asks for a count a city; the writer's query gave one for all."""
    grouped = "SELECT city, COUNT(*) AS people FROM customers GROUP BY city"
    chat_model.script.append(QueryDraft(query="SELECT COUNT(*) AS people FROM customers"))
    tools.rows[grouped] = [{"city": "Oslo", "people": 2}]

    events = await ask(services, AskRequest(shop.user, shop.namespace, "How many customers are there per city?"))

    assert events[0] == QueryGenerated(
        query=grouped,
        reasoning="written by the query model; grouped by city: the question asks per city",
        attempts=1,
        model_query="SELECT COUNT(*) AS people FROM customers",
        changes=[
            {
                "rule": "group_per_asked",
                "before": "SELECT COUNT(*) AS people FROM customers",
                "after": grouped,
                "reason": "grouped by city: the question asks per city",
            }
        ],
    )


async def test_a_name_no_dataset_holds_is_declined_when_the_repair_asks_for_it_again(
    services: Services, shop: Shop, tools: FakeQueryTools, chat_model: ScriptedChatModel
) -> None:
    """Issue 27: "email" is nowhere in the catalog and the question asks for it: after one
    repair that invents it again, the run is declined instead of repaired a third time."""
    chat_model.script += [
        QueryDraft(query="SELECT name, email FROM customers"),
        QueryDraft(query="SELECT name, email_address FROM customers"),
    ]

    events = await ask(services, AskRequest(shop.user, shop.namespace, "List each customer with their email address"))

    assert [event.model_dump() for event in events] == [
        {
            "type": "error",
            "error_code": "QUERY_REFUSED",
            "message": "the datasets cannot answer this: no dataset holds anything like email address; the "
            "datasets hold: customers (id, name, city); orders (id, customer_id, amount, ordered_at)",
        }
    ]
    assert len(chat_model.calls) == 2
    assert "no column of any dataset is like 'email'" in chat_model.prompts()[1]
    assert tools.ran() == []


async def test_a_name_the_question_asks_for_gets_one_repair_before_any_refusal(
    services: Services, shop: Shop, tools: FakeQueryTools, chat_model: ScriptedChatModel
) -> None:
    """Issue 27: "revenue" is in no dataset, but the repair finds the column that answers."""
    good = "SELECT SUM(amount) AS revenue FROM orders"
    chat_model.script += [QueryDraft(query="SELECT SUM(revenue) FROM orders"), QueryDraft(query=good)]
    tools.rows[good] = [{"revenue": 120.5}]

    events = await ask(services, AskRequest(shop.user, shop.namespace, "What is the total revenue?"))

    assert [e.type for e in events] == ["query", "rows"]
    assert isinstance(events[1], RowsReady) and events[1].rows == [{"revenue": 120.5}]


async def test_a_name_no_column_is_called_like_is_declined_when_the_repairs_run_out(
    services: Services, shop: Shop, tools: FakeQueryTools, chat_model: ScriptedChatModel
) -> None:
    """Issue 27 (erp's "phone number of each customer's contact"): "phone" is in a description,
    so the first attempts are repaired; when the last still reads `phone_number`, which no
    column is named like, the data cannot answer and the question is declined, not failed."""
    tools.tables[0] = dataclasses.replace(tools.tables[0], description="Customers, who order on the web or by phone")
    chat_model.script += [QueryDraft(query="SELECT name, phone_number FROM customers")] * 5  # repeats asked again

    events = await ask(services, AskRequest(shop.user, shop.namespace, "What is the phone number of each customer?"))

    [failed] = events
    assert isinstance(failed, RunFailed) and failed.error_code == "QUERY_REFUSED"
    assert failed.message.startswith("the datasets cannot answer this: no dataset holds anything like phone number")
    assert "customers (id, name, city)" in failed.message
    assert tools.ran() == []


async def test_a_name_a_column_is_called_like_ends_in_an_error_when_the_repairs_run_out(
    services: Services, shop: Shop, tools: FakeQueryTools, chat_model: ScriptedChatModel
) -> None:
    """`customer_city` shares its word with `city`: the data may answer, the query did not."""
    chat_model.script += [QueryDraft(query="SELECT customer_city FROM orders")] * 5

    events = await ask(services, AskRequest(shop.user, shop.namespace, "Which city is each customer in?"))

    [failed] = events
    assert isinstance(failed, RunFailed) and failed.error_code == "QUERY_ERROR"
    assert failed.message.startswith("no valid query after 3 attempt(s)")


async def test_a_repair_is_told_where_an_unknown_name_is_in_the_catalog(
    services: Services, shop: Shop, tools: FakeQueryTools, chat_model: ScriptedChatModel
) -> None:
    """Issue 27: the checker says what the query's tables lack; the whole catalog says where it is."""
    good = "SELECT customer_id, SUM(amount) FROM orders GROUP BY customer_id"
    chat_model.script += [
        QueryDraft(query="SELECT customer, SUM(amount) FROM orders GROUP BY customer"),
        QueryDraft(query=good),
    ]
    tools.rows[good] = [{"customer_id": 1, "SUM(amount)": 30}]

    events = await ask(services, AskRequest(shop.user, shop.namespace, "How much did each customer spend?"))

    assert [e.type for e in events] == ["query", "rows"]
    assert "- 'customer' is in: orders.customer_id, table customers" in chat_model.prompts()[1]


async def test_a_question_the_catalog_does_not_cover_is_refused_before_any_model_call(
    services: Services, shop: Shop, tools: FakeQueryTools, chat_model: ScriptedChatModel
) -> None:
    # Refusal by the question's subject (on by default) would decline it first: see below.
    settings = services.settings.model_copy(
        update={"query_refuse_uncovered": True, "query_refuse_unheld_subject": False}
    )
    run = await Runs(dataclasses.replace(services, settings=settings)).start_nl2ql(
        AskRequest(shop.user, shop.namespace, "What are the opening hours and phone numbers?")
    )
    events = [event async for event in run.events()]

    [failed] = events
    assert isinstance(failed, RunFailed) and failed.error_code == "QUERY_REFUSED"
    assert "hold nothing about 'opening', 'hours', 'phone'" in failed.message
    assert "customers (id, name, city); orders (id, customer_id, amount, ordered_at)" in failed.message
    assert chat_model.calls == []


def voting(services: Services, k: int) -> Runs:
    return Runs(dataclasses.replace(services, settings=services.settings.model_copy(update={"query_candidates": k})))


async def test_voting_keeps_the_changes_the_rules_made_of_the_winner(
    services: Services, shop: Shop, tools: FakeQueryTools, chat_model: ScriptedChatModel
) -> None:
    """Issue 47: the voted query is announced with the query its candidate wrote and the rules
    that changed it (they used to be dropped with several candidates)."""
    every = "SELECT city, COUNT(*) AS people FROM customers GROUP BY city"
    lone = "SELECT 'Bergen' AS city, 1 AS people"
    chat_model.script += [QueryDraft(query=lone), QueryDraft(query=f"{every} LIMIT 10"), QueryDraft(query=every)]
    tools.rows[lone] = [{"city": "Bergen", "people": 1}]
    tools.rows[every] = [{"city": "Oslo", "people": 2}]

    question = "How many customers live in each city?"
    run = await voting(services, 3).start_nl2ql(AskRequest(shop.user, shop.namespace, question))
    events = [event async for event in run.events()]
    generated = events[0]

    assert isinstance(generated, QueryGenerated)
    assert (generated.query, generated.model_query) == (every, f"{every} LIMIT 10")
    assert [(c["rule"], c["before"], c["after"]) for c in generated.changes] == [
        ("drop_unasked_limit", f"{every} LIMIT 10", every)
    ]


async def test_voting_picks_the_result_most_candidates_agree_on(
    services: Services, shop: Shop, tools: FakeQueryTools, chat_model: ScriptedChatModel
) -> None:
    """Issue 27: three candidates, two of them (differently written) find Ann: Ann wins."""
    lone = "SELECT name FROM customers WHERE city = 'Bergen'"
    same = "SELECT c.name FROM customers AS c WHERE c.city = 'Oslo'"
    chat_model.script += [QueryDraft(query=lone), QueryDraft(query=OSLO), QueryDraft(query=same)]
    tools.rows[lone] = [{"name": "Bo"}]
    tools.rows[OSLO] = tools.rows[same] = [{"name": "Ann"}]

    run = await voting(services, 3).start_nl2ql(AskRequest(shop.user, shop.namespace, "Who lives in Oslo?"))
    events = [event async for event in run.events()]

    assert events == [
        QueryGenerated(
            query=OSLO,
            reasoning="written by the query model; 2 of 3 candidates agree on this result",
            attempts=1,
            model_query=OSLO,
        ),
        RowsReady(query=OSLO, rows=[{"name": "Ann"}]),
    ]
    assert sorted(c.query for c in tools.ran()) == sorted([lone, OSLO, same])


async def test_a_tie_goes_to_the_first_candidate_and_refused_ones_are_not_repaired(
    services: Services, shop: Shop, tools: FakeQueryTools, chat_model: ScriptedChatModel
) -> None:
    lone = "SELECT name FROM customers WHERE city = 'Bergen'"
    chat_model.script += [
        QueryDraft(query=lone),
        QueryDraft(query="SELECT town FROM customers"),
        QueryDraft(query=OSLO),
    ]
    tools.rows[lone] = [{"name": "Bo"}]
    tools.rows[OSLO] = [{"name": "Ann"}]

    run = await voting(services, 3).start_nl2ql(AskRequest(shop.user, shop.namespace, "Who lives in Oslo?"))
    events = [event async for event in run.events()]

    assert isinstance(events[0], QueryGenerated) and events[0].query == lone
    assert len(chat_model.calls) == 3  # no repair of the refused candidate


async def test_when_no_candidate_runs_the_first_is_repaired(
    services: Services, shop: Shop, tools: FakeQueryTools, chat_model: ScriptedChatModel
) -> None:
    bad = "SELECT town FROM customers"
    chat_model.script += [QueryDraft(query=bad), QueryDraft(query=bad), QueryDraft(query=OSLO)]
    tools.rows[OSLO] = [{"name": "Ann"}]

    run = await voting(services, 2).start_nl2ql(AskRequest(shop.user, shop.namespace, "Who lives in Oslo?"))
    events = [event async for event in run.events()]

    assert isinstance(events[0], QueryGenerated) and (events[0].query, events[0].attempts) == (OSLO, 2)
    assert f"Your previous query was:\n{bad}" in chat_model.prompts()[2]


async def test_a_repair_that_sends_the_refused_query_back_is_asked_again_without_it(
    services: Services, shop: Shop, tools: FakeQueryTools, chat_model: ScriptedChatModel
) -> None:
    """Issue 27: the small model, shown its refused query, sends it back word for word; the
    service asks once more with only the problems, and that query runs as the second attempt."""
    bad = "SELECT town FROM customers"
    chat_model.script += [QueryDraft(query=bad), QueryDraft(query=f"{bad};"), QueryDraft(query=OSLO)]
    tools.rows[OSLO] = [{"name": "Ann"}]

    events = await ask(services, AskRequest(shop.user, shop.namespace, "Who lives in Oslo?"))

    assert isinstance(events[0], QueryGenerated) and (events[0].query, events[0].attempts) == (OSLO, 2)
    repair, blind = chat_model.prompts()[1:]
    assert f"Your previous query was:\n{bad}\nIt was refused: " in repair
    assert bad not in blind and "A first query was refused: " in blind
    assert blind.endswith("Write a query that avoids these problems and follows the rules.")


async def test_a_repair_that_writes_another_query_is_not_asked_again(
    services: Services, shop: Shop, tools: FakeQueryTools, chat_model: ScriptedChatModel
) -> None:
    chat_model.script += [QueryDraft(query="SELECT town FROM customers"), QueryDraft(query=OSLO)]
    tools.rows[OSLO] = [{"name": "Ann"}]

    events = await ask(services, AskRequest(shop.user, shop.namespace, "Who lives in Oslo?"))

    assert isinstance(events[0], QueryGenerated) and events[0].query == OSLO
    assert len(chat_model.calls) == 2


async def test_a_question_whose_subject_no_dataset_holds_is_refused_before_any_model_call(
    services: Services, shop: Shop, tools: FakeQueryTools, chat_model: ScriptedChatModel
) -> None:
    """Issue 27: "the email address of each customer" asks for an email address, and no name,
    description or value of the shop holds either word: declined, no query written."""
    events = await ask(services, AskRequest(shop.user, shop.namespace, "What is the email address of each customer?"))

    assert [event.model_dump() for event in events] == [
        {
            "type": "error",
            "error_code": "QUERY_REFUSED",
            "message": "the datasets cannot answer this: no dataset holds anything like email address; the "
            "datasets hold: customers (id, name, city); orders (id, customer_id, amount, ordered_at)",
        }
    ]
    assert chat_model.calls == [] and tools.ran() == []


@pytest.mark.parametrize(
    "question",
    [
        "What is the total revenue?",  # computed from amounts: no column need be called so
        "How many customers live in Oslo?",
        "Will it rain tomorrow?",  # no subject by its opening: the model decides
    ],
)
async def test_a_question_whose_subject_the_catalog_holds_or_computes_goes_to_the_model(
    services: Services, shop: Shop, tools: FakeQueryTools, chat_model: ScriptedChatModel, question: str
) -> None:
    chat_model.script.append(QueryDraft(refusal="scripted"))

    await ask(services, AskRequest(shop.user, shop.namespace, question))

    assert len(chat_model.calls) == 1


SPENT = "SELECT SUM(amount) AS spent FROM orders"
ANNS = "SELECT SUM(o.amount) AS spent FROM orders AS o JOIN customers AS c ON o.customer_id = c.id WHERE c.name = 'Ann'"


def hint_names(tools: FakeQueryTools) -> None:
    customers = next(t for t in tools.tables if t.name == "customers")
    hints = {
        "name": ColumnHint(type="text", distinct=2, values=["Ann", "Ole"]),
        "city": ColumnHint(type="text", distinct=2, values=["Oslo", "Paris"]),
    }
    tools.tables[tools.tables.index(customers)] = dataclasses.replace(customers, hints=hints)
    lookup = """SELECT * FROM "customers" WHERE LOWER("name") LIKE '%ann%' LIMIT 5"""
    tools.rows[lookup] = [{"id": 1, "name": "Ann", "city": "Oslo"}]


async def test_a_result_that_leaves_out_a_name_the_question_gives_is_repaired(
    services: Services, shop: Shop, tools: FakeQueryTools, chat_model: ScriptedChatModel
) -> None:
    """Issue 27 (atis-28): asked what Ann spent, the writer sums every order; the repair is
    told where Ann is stored, and the repaired query's rows are the answer."""
    hint_names(tools)
    chat_model.script += [QueryDraft(query=SPENT), QueryDraft(query=ANNS)]
    tools.rows[SPENT] = [{"spent": 300.0}]
    tools.rows[ANNS] = [{"spent": 120.0}]

    events = await ask(services, AskRequest(shop.user, shop.namespace, "How much did Ann spend?"))

    repair = chat_model.prompts()[1]
    assert "It ran, but it leaves out what the question names:" in repair
    assert "- the question names 'Ann', which the query does not filter on: customers.name holds 'Ann'" in repair
    assert events[-1] == RowsReady(query=ANNS, rows=[{"spent": 120.0}])


async def test_a_repair_that_finds_nothing_leaves_the_doubted_rows(
    services: Services, shop: Shop, tools: FakeQueryTools, chat_model: ScriptedChatModel
) -> None:
    hint_names(tools)
    chat_model.script += [QueryDraft(query=SPENT), QueryDraft(query=ANNS)]
    tools.rows[SPENT] = [{"spent": 300.0}]

    events = await ask(services, AskRequest(shop.user, shop.namespace, "How much did Ann spend?"))

    assert len(chat_model.prompts()) == 2
    assert events[-1] == RowsReady(query=SPENT, rows=[{"spent": 300.0}])
    assert [e.query for e in events if isinstance(e, QueryGenerated)] == [SPENT]


async def test_a_result_doubted_for_another_reason_also_names_what_it_leaves_out(
    services: Services, shop: Shop, tools: FakeQueryTools, chat_model: ScriptedChatModel
) -> None:
    """Issue 27 (erp-paid-by-kessler): the sum of invented filters is NULL; the repair is told
    so and where the customer the question names is stored."""
    hint_names(tools)
    chat_model.script += [QueryDraft(query=SPENT), QueryDraft(query=ANNS)]
    tools.rows[SPENT] = [{"spent": None}]
    tools.rows[ANNS] = [{"spent": 120.0}]

    events = await ask(services, AskRequest(shop.user, shop.namespace, "How much did Ann spend?"))

    repair = chat_model.prompts()[1]
    assert "It ran but every value it returned is NULL" in repair
    assert "- the question names 'Ann', which the query does not filter on: customers.name holds 'Ann'" in repair
    assert events[-1] == RowsReady(query=ANNS, rows=[{"spent": 120.0}])
