"""Issue 26's unbounded requests: bodies past the limit, questions past theirs, NUL characters
and queries nested past the checker's limit each get a 422 ErrorResponse naming the limit or
the field, on every store, never a 500."""

from __future__ import annotations

from tests.conftest import Account
from tests.fake_runs import FakeRuns

AUTORAG = "/api/v1/query/autorag"
EXAMPLES = "/api/v1/examples/alice/sales"


def sub_codes(response) -> list[str]:  # type: ignore[no-untyped-def]
    return [s["code"] for s in response.json()["sub_errors"]]


async def test_a_body_past_the_limit_is_422_naming_it(client, alice: Account, sales: str, fake: FakeRuns) -> None:
    big = "x" * (9 * 1024 * 1024)
    response = await client.post(AUTORAG, json={"namespace": sales, "query": big}, headers=alice.headers)
    assert response.status_code == 422
    assert sub_codes(response) == ["body_too_large"]
    assert "8,388,608 bytes" in response.json()["message"]
    assert fake.requests == []


async def test_a_question_past_the_limit_is_422_naming_it(client, alice: Account, sales: str, fake: FakeRuns) -> None:
    long = "How many orders? " * 600
    response = await client.post(AUTORAG, json={"namespace": sales, "query": long}, headers=alice.headers)
    assert response.status_code == 422
    assert sub_codes(response) == ["question_too_long"]
    assert "the limit is 8,000" in response.json()["message"]


async def test_nul_characters_are_422_naming_the_field(client, alice: Account, sales: str) -> None:
    response = await client.post(
        EXAMPLES, json={"question": "How\u0000 many?", "query": "SELECT 1 AS x"}, headers=alice.headers
    )
    assert response.status_code == 422
    assert sub_codes(response) == ["nul_character"]
    assert response.json()["sub_errors"][0]["message"].startswith("body.question:")
    response = await client.get("/api/v1/examples/alice/sa%00les", headers=alice.headers)
    assert response.status_code == 422 and sub_codes(response) == ["nul_character"]


async def test_a_query_nested_past_the_limit_is_422_naming_the_depth(client, alice: Account, sales: str) -> None:
    deep = "SELECT " + "(" * 480 + "1" + ")" * 480 + " AS x"
    response = await client.post(EXAMPLES, json={"question": "Deep?", "query": deep}, headers=alice.headers)
    assert response.status_code == 422
    assert sub_codes(response) == ["nesting_limit"]
    assert "480 levels deep" in response.json()["sub_errors"][0]["message"]
    assert len(response.content) < 2000
