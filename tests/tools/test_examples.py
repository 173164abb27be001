from __future__ import annotations

from datawell.services import Services
from datawell.storage.access import Permission, remove_grant, set_grant
from datawell.storage.examples import add_example, question_key
from datawell.tools.examples import Example, render_examples
from tests.tools.conftest import World

PAID = "SELECT customer FROM orders WHERE paid"
BIG = "SELECT customer, total FROM orders WHERE total > 20"
COUNT = "SELECT COUNT(*) AS n FROM orders"
# alice's namespace, joining bob's customers: alice may run it only while bob grants her read.
CITIES = "SELECT o.customer, c.city FROM orders o JOIN bob.crm.customers c ON c.name = o.customer"


async def store(services: Services, world: World, pairs: list[tuple[str, str]]) -> None:
    async with services.db.session() as session:
        for question, query in pairs:
            await add_example(session, world.sales, world.alice, question, query)


def test_question_key_ignores_case_spacing_and_trailing_punctuation() -> None:
    assert (
        question_key("  Which orders are PAID?? ") == question_key("which   orders are paid") == "which orders are paid"
    )
    assert question_key("Orders over 20 EUR.") != question_key("Orders over 2 EUR")


async def test_exact_matches_the_normalised_question(services: Services, world: World) -> None:
    await store(services, world, [("Which orders are paid?", PAID)])
    found = await services.examples.exact(world.alice, world.sales, "which orders are PAID")
    assert found is not None and (found.question, found.query) == ("Which orders are paid?", PAID)
    assert await services.examples.exact(world.alice, world.sales, "Which orders are unpaid?") is None


async def test_similar_ranks_the_closer_question_first(services: Services, world: World) -> None:
    await store(
        services,
        world,
        [("Which orders are paid?", PAID), ("Orders over 20 EUR", BIG), ("How many orders are there?", COUNT)],
    )
    found = await services.examples.similar(world.alice, world.sales, "which orders have been paid", k=2)
    assert len(found) == 2 and found[0].query == PAID
    assert (await services.examples.similar(world.alice, world.sales, "how many orders exist", k=1))[0].query == COUNT


async def test_only_examples_the_caller_may_run_now(services: Services, world: World) -> None:
    async with services.db.session() as session:
        await set_grant(session, "bob", "crm", "alice", Permission.READ)
    await store(services, world, [("Where do the customers live?", CITIES)])
    question = "Where do the customers live?"
    assert await services.examples.exact(world.alice, world.sales, question) is not None
    async with services.db.session() as session:
        await remove_grant(session, "bob", "crm", "alice")
    # The grant is gone: the example's query no longer runs for alice, so it is not offered.
    assert await services.examples.exact(world.alice, world.sales, question) is None
    assert await services.examples.similar(world.alice, world.sales, question) == []
    # bob cannot read alice's namespace at all.
    assert await services.examples.exact(world.bob, world.sales, question) is None


def test_render_examples_is_few_shot_text() -> None:
    examples = [Example("1", "Which orders are paid?", PAID), Example("2", "How many orders?", COUNT)]
    assert render_examples(examples) == (
        f"Question: Which orders are paid?\nQuery: {PAID}\n\nQuestion: How many orders?\nQuery: {COUNT}"
    )
    assert render_examples([]) == ""


async def test_unrunnable_examples_cost_a_question_a_bounded_number_of_checks(services: Services, world: World) -> None:
    """The issue: 1,000 examples nobody can run made every question check them all (2.5-5 s)."""
    await store(services, world, [(f"Which orders are paid, take {i}?", f"SELECT x FROM gone{i}") for i in range(200)])
    examples = services.examples
    checked: list[str] = []
    real = examples.checker

    class Counting:
        async def check(self, user, namespace, query):  # type: ignore[no-untyped-def]
            checked.append(query)
            return await real.check(user, namespace, query)

    examples.checker = Counting()
    try:
        assert await examples.similar(world.alice, world.sales, "Which orders are paid?") == []
    finally:
        examples.checker = real
    assert len(checked) == examples.max_checks == 12
