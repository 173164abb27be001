"""The query language as a caller sees it: what is refused and why, what rows come back."""

from __future__ import annotations

import uuid
from dataclasses import replace
from datetime import UTC, datetime

import pytest

from datawell.errors import Forbidden, QueryError
from datawell.services import Services
from datawell.storage import access
from datawell.storage.access import Permission
from datawell.storage.datasets import create_dataset, get_dataset
from datawell.storage.tables import User
from datawell.tools.ql import QueryTools
from datawell.tools.sandbox import Limits
from tests.pgvector_server import WITH_PGVECTOR
from tests.tools.conftest import World, load


async def refused(world: World, sql: str, user: User | None = None) -> QueryError:
    with pytest.raises(QueryError) as caught:
        await world.query.run(user or world.alice, world.sales, sql)
    assert caught.value.sub_errors, "a refusal names what is wrong"
    return caught.value


def codes(error: QueryError) -> list[str]:
    return [s.code for s in error.sub_errors]


async def test_a_select_returns_json_rows_with_metadata(world: World) -> None:
    result = await world.query.run(
        world.alice, world.sales, "SELECT order_id, paid, placed FROM orders WHERE total > 10 ORDER BY order_id"
    )
    assert [r["order_id"] for r in result.rows] == [1, 2, 4]
    assert result.rows[0]["paid"] is True and result.rows[1]["paid"] is False
    assert result.rows[0]["placed"].startswith("2024-01-05T10:00:00")
    metadata = result.rows[0]["__metadata"]
    assert metadata["dataset"] == {"owner": "alice", "namespace": "sales", "datasetName": "orders"}
    assert uuid.UUID(metadata["id"])
    assert "score" not in metadata
    assert result.truncated is False
    assert result.query.startswith("SELECT order_id")


async def test_aggregates_and_postgres_spellings_run_on_every_store(world: World) -> None:
    result = await world.query.run(
        world.alice, world.sales,
        "SELECT customer, COUNT(*) AS n, ROUND(AVG(total), 1) AS average, SUM(order_id) AS ids, "
        "EXTRACT(MONTH FROM MIN(placed)) AS first_month, CONCAT(customer, '!') AS shout, "
        "MIN(strftime('%Y-%m', placed)) AS month, ROUND(MIN(julianday(placed) - julianday('2024-01-01')), 2) AS day "
        "FROM orders WHERE note ILIKE '%APPLE%' AND placed < DATE_TRUNC('month', CAST('2024-03-15' AS TIMESTAMP)) "
        "GROUP BY customer ORDER BY n DESC, customer",
    )  # fmt: skip
    rows = [{k: v for k, v in r.items() if k != "__metadata"} for r in result.rows]
    assert rows == [
        {
            "customer": "Ada",
            "n": 1,
            "average": 12.5,
            "ids": 1,
            "first_month": 1,
            "shout": "Ada!",
            "month": "2024-01",
            "day": 4.42,
        },
        {
            "customer": "Cy",
            "n": 1,
            "average": 7.3,
            "ids": 3,
            "first_month": 2,
            "shout": "Cy!",
            "month": "2024-02",
            "day": 50.5,
        },
    ]
    assert "id" not in result.rows[0]["__metadata"]  # an aggregate is no dataset row


@pytest.mark.parametrize(
    ("sql", "code"),
    [
        ("CREATE TABLE x (a int)", "not_a_select"),
        ("DROP TABLE orders", "not_a_select"),
        ("INSERT INTO orders (order_id) VALUES (9)", "not_a_select"),
        ("UPDATE orders SET total = 0", "not_a_select"),
        ("DELETE FROM orders", "not_a_select"),
        ("PRAGMA query_only = 0", "not_a_select"),
        ("ATTACH DATABASE '/tmp/x.db' AS x", "syntax_error"),
        ("SELECT 1; DROP TABLE orders", "multiple_statements"),
        ("SELECT 1; SELECT 2", "multiple_statements"),
        ("SELECT 1 /* ; DROP TABLE orders */", "comment_hides_statement"),
        ("SELECT 1 -- ; DELETE FROM orders", "comment_hides_statement"),
        ("SELECT 1 /* /* */ ; DROP TABLE orders; /* */ */", "comment_hides_statement"),
        ("WITH gone AS (DELETE FROM orders RETURNING *) SELECT * FROM gone", "not_allowed"),
        ("SELECT * INTO copy FROM orders", "not_allowed"),
        ("SELECT * FROM orders FOR UPDATE", "not_allowed"),
        ("SELECT pg_read_file('/etc/passwd')", "function_not_allowed"),
        ("SELECT load_extension('evil')", "function_not_allowed"),
        ("SELECT * FROM generate_series(1, 3)", "not_allowed"),
        ("SELECT version()", "not_allowed"),
        ("SELECT CAST(order_id AS regclass) FROM orders", "not_allowed"),
        ("SELECT * FROM orders WHERE order_id = $1", "not_allowed"),
        ("SELECT order_id AS __dw_id FROM orders", "reserved_name"),
    ],
)
async def test_the_checker_refuses_anything_but_one_select(world: World, sql: str, code: str) -> None:
    error = await refused(world, sql)
    assert code in codes(error), error.sub_errors
    assert await world.query.run(world.alice, world.sales, "SELECT COUNT(*) AS n FROM orders") is not None


async def test_physical_and_system_tables_are_unknown(world: World) -> None:
    async with world.query.db.session() as session:
        physical = (await get_dataset(session, world.sales, "orders")).record.table_name
    for table in (physical, "sqlite_master", "pg_catalog.pg_tables", "information_schema.tables", "datasets"):
        error = await refused(world, f"SELECT * FROM {table}")
        assert codes(error) == ["unknown_table"], error.sub_errors


async def test_unknown_table_and_column_suggest_close_matches(world: World) -> None:
    error = await refused(world, "SELECT totl FROM ordrs")
    assert codes(error) == ["unknown_table"]
    assert "did you mean 'orders'" in error.sub_errors[0].message

    error = await refused(world, "SELECT totl, custmer FROM orders o WHERE o.paid")
    assert codes(error) == ["unknown_column", "unknown_column"]
    assert "'totl'" in error.sub_errors[0].message and "did you mean 'total'" in error.sub_errors[0].message
    assert "did you mean 'customer'" in error.sub_errors[1].message

    error = await refused(world, "SELECT o.totl FROM orders o")
    assert "o has no column 'totl': did you mean 'total'" in error.sub_errors[0].message

    error = await refused(world, "SELECT x.total FROM orders o")
    assert codes(error) == ["unknown_table"]


async def test_a_subquery_selecting_a_column_only_the_outer_query_has_is_refused(world: World) -> None:
    """Issue 27: `note IN (SELECT note FROM names)`, where `names` has no note, reads the outer
    row's own note and keeps every row; a correlated filter stays allowed."""
    names = "WITH names AS (SELECT customer AS who FROM orders WHERE total > 20) "
    error = await refused(world, names + "SELECT order_id FROM orders WHERE note IN (SELECT note FROM names)")
    assert codes(error) == ["unknown_column"]
    assert "the subquery selects 'note', which names has not: it would read the outer query's note" in (
        error.sub_errors[0].message
    )
    result = await world.query.run(
        world.alice,
        world.sales,
        names + "SELECT order_id FROM orders o WHERE EXISTS (SELECT who FROM names WHERE who = o.customer)",
    )
    assert sorted(r["order_id"] for r in result.rows) == [1, 2, 4]  # Ada and Bob spent over 20 once


async def test_columns_resolve_through_ctes_subqueries_and_aliases(world: World) -> None:
    result = await world.query.run(
        world.alice, world.sales,
        "WITH big AS (SELECT customer AS who, total FROM orders WHERE total > 5) "
        "SELECT who, SUM(total) AS spent FROM big GROUP BY who HAVING SUM(total) > 10 ORDER BY spent DESC",
    )  # fmt: skip
    assert [(r["who"], r["spent"]) for r in result.rows] == [("Bob", 99.0), ("Ada", 42.5)]
    result = await world.query.run(
        world.alice, world.sales,
        "SELECT ORDER_ID FROM Orders o WHERE EXISTS (SELECT 1 FROM orders p WHERE p.customer = o.customer "
        "AND p.order_id <> o.order_id) ORDER BY 1",
    )  # fmt: skip
    assert [r["order_id"] for r in result.rows] == [1, 4]
    error = await refused(world, "WITH big AS (SELECT customer AS who FROM orders) SELECT customer FROM big")
    assert "available columns: who" in error.sub_errors[0].message


async def test_another_namespace_needs_a_read_grant(world: World, services: Services) -> None:
    sql = "SELECT o.order_id, c.city FROM orders o JOIN bob.crm.customers c ON c.name = o.customer ORDER BY o.order_id"
    error = await refused(world, sql)
    assert codes(error) == ["no_read_access"]
    assert "bob/crm" in error.sub_errors[0].message

    async with services.db.session() as session:
        await access.set_grant(session, "bob", "crm", "alice", Permission.READ)
    result = await world.query.run(world.alice, world.sales, sql)
    assert [(r["order_id"], r["city"]) for r in result.rows] == [(1, "Paris"), (2, "Oslo"), (3, "Lima"), (4, "Paris")]

    error = await refused(world, "SELECT * FROM bob.crm.customer")
    assert "did you mean 'customers'" in error.sub_errors[0].message
    error = await refused(world, "SELECT * FROM customers")
    assert "did you mean 'bob.crm.customers'" in error.sub_errors[0].message
    error = await refused(world, "SELECT * FROM crm.customers")
    assert "owner.namespace.dataset: did you mean 'bob.crm.customers'" in error.sub_errors[0].message


async def test_a_namespace_the_caller_cannot_read_is_forbidden(world: World) -> None:
    with pytest.raises(Forbidden):
        await world.query.run(world.alice, world.crm, "SELECT * FROM customers")


@pytest.mark.parametrize("database_url", WITH_PGVECTOR, indirect=True)
async def test_semantic_ranks_rows_by_meaning(world: World) -> None:
    result = await world.query.run(
        world.alice, world.sales,
        "SELECT order_id, note, semantic('apple pie') AS relevance FROM orders ORDER BY semantic('apple pie') DESC LIMIT 3",
    )  # fmt: skip
    assert [r["order_id"] for r in result.rows[:2]] == [3, 1] or [r["order_id"] for r in result.rows[:2]] == [1, 3]
    scores = [r["__metadata"]["score"] for r in result.rows]
    assert scores == sorted(scores, reverse=True) and scores[0] > scores[2]
    assert [r["relevance"] for r in result.rows] == pytest.approx(scores)
    filtered = await world.query.run(
        world.alice, world.sales, "SELECT order_id FROM orders WHERE semantic('apple') > 0.2 AND paid ORDER BY order_id"
    )
    assert [r["order_id"] for r in filtered.rows] == [1, 3]
    assert all(r["__metadata"]["score"] > 0.2 for r in filtered.rows)


async def test_semantic_needs_one_dataset_in_its_select(world: World, services: Services) -> None:
    async with services.db.session() as session:
        await access.set_grant(session, "bob", "crm", "alice", Permission.READ)
    error = await refused(
        world,
        "SELECT o.order_id FROM orders o JOIN bob.crm.customers c ON c.name = o.customer ORDER BY semantic('pie')",
    )
    assert codes(error) == ["semantic_usage"]
    result = await world.query.run(
        world.alice, world.sales,
        "SELECT o.order_id FROM orders o JOIN bob.crm.customers c ON c.name = o.customer ORDER BY semantic(o, 'garden hose') DESC LIMIT 1",
    )  # fmt: skip
    assert result.rows[0]["order_id"] == 4


async def test_the_row_cap_truncates(world: World) -> None:
    capped = QueryTools(
        world.query.db, world.query.rows, world.query.vectors, world.query.embedder, row_cap=2, limits=Limits(seconds=5)
    )
    result = await capped.run(world.alice, world.sales, "SELECT order_id FROM orders ORDER BY order_id")
    assert [r["order_id"] for r in result.rows] == [1, 2] and result.truncated is True
    result = await capped.run(world.alice, world.sales, "SELECT order_id FROM orders ORDER BY order_id LIMIT 2")
    assert len(result.rows) == 2 and result.truncated is False


async def test_the_time_limit_stops_a_slow_query(world: World) -> None:
    quick = QueryTools(
        world.query.db,
        world.query.rows,
        world.query.vectors,
        world.query.embedder,
        row_cap=10,
        limits=Limits(seconds=0.2),
    )
    slow = "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 100000000) SELECT COUNT(*) AS c FROM n"
    started = datetime.now(UTC)
    with pytest.raises(QueryError) as caught:
        await quick.run(world.alice, world.sales, slow)
    assert codes(caught.value) == ["time_limit"]
    assert "time limit of 0.2 s" in caught.value.message
    assert (datetime.now(UTC) - started).total_seconds() < 5
    # The connection goes back to the pool usable and writable.
    assert (await quick.run(world.alice, world.sales, "SELECT COUNT(*) AS n FROM orders")).rows[0]["n"] == 5


async def test_queries_run_read_only(world: World) -> None:
    """Even SQL that slipped past the checker could not write: the connection is read-only."""
    compiled = await world.query.prepare(world.alice, world.sales, "SELECT order_id FROM orders")
    table = compiled.tables[0].physical
    writing = replace(compiled, sql=f'DELETE FROM "{table}"', tables=compiled.tables)
    with pytest.raises(QueryError) as caught:
        await world.query.execute(writing)
    assert codes(caught.value) == ["database_error"]
    assert (await world.query.run(world.alice, world.sales, "SELECT COUNT(*) AS n FROM orders")).rows[0]["n"] == 5


async def test_database_errors_name_datasets_not_row_tables(world: World) -> None:
    error = await refused(world, "SELECT o.order_id FROM orders o JOIN orders p USING (no_such_column)")
    assert codes(error) == ["database_error"]
    assert "ds_" not in error.message
    error = await refused(world, "SELECT order_id FROM orders o JOIN orders o ON TRUE")
    assert codes(error) == ["duplicate_alias"]


async def test_unnamed_result_columns_are_named_alike_on_every_store(world: World) -> None:
    result = await world.query.run(
        world.alice,
        world.sales,
        "SELECT COUNT(*), MAX(total), CAST(total AS INTEGER), total * 2 FROM orders GROUP BY total ORDER BY 2 DESC LIMIT 1",
    )
    row = {k: v for k, v in result.rows[0].items() if k != "__metadata"}
    assert row == {"count": 1, "max": 99.0, "total": 99, "total * 2": 198.0}


async def test_a_dataset_without_rows_yet_reads_as_empty(world: World, services: Services) -> None:
    async with services.db.session() as session:
        await create_dataset(session, world.sales, "returns", "", {"reason": "why"}, world.alice)
    result = await world.query.run(world.alice, world.sales, "SELECT COUNT(*) AS n FROM returns")
    assert result.rows[0]["n"] == 0


async def test_check_returns_the_sql_that_runs(world: World) -> None:
    sql = await world.query.check(
        world.alice, world.sales, "select Total from orders -- the big ones\nwhere total > 10"
    )
    assert "ds_" in sql and '"total"' in sql and "the big ones" not in sql and "LIMIT 1001" in sql


async def test_the_date_rules_read_what_the_stored_columns_hold(services: Services, world: World) -> None:
    """Issue 27, through a real store: the checker sees each column's stored values, so a
    column of years not named "year" and a column of Unix seconds are known by their values."""
    rows = [{"flight": i, "season": 2019 + i, "departure_time": 1577836800 + 3600 * i} for i in range(4)]
    schema = {"flight": "flight number", "season": "the season", "departure_time": "when it leaves"}
    await load(services, world.sales, world.alice, "flights", schema, dict.fromkeys(schema, "integer"), rows)

    async def refusal(query: str) -> str:
        with pytest.raises(QueryError) as caught:
            await world.query.prepare(world.alice, world.sales, query)
        return caught.value.sub_errors[0].message

    assert (await refusal("SELECT strftime('%Y', season) FROM flights")).startswith(
        "flights.season holds years (integer), not dates"
    )
    assert "to_timestamp(departure_time)" in await refusal("SELECT strftime('%m', departure_time) FROM flights")
    query = "SELECT strftime('%H', to_timestamp(departure_time)) AS hour FROM flights ORDER BY flight"
    ran = await world.query.run(world.alice, world.sales, query)
    assert [row["hour"] for row in ran.rows] == ["00", "01", "02", "03"]
