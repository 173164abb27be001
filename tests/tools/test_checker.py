"""The checker alone (no database): what it accepts, and the SQL it writes for each store."""

from __future__ import annotations

import dataclasses

import pytest

from datawell.errors import QueryError
from datawell.storage.access import NamespaceRef
from datawell.storage.hints import ColumnHint
from datawell.tools.catalog import TableInfo
from datawell.tools.checker import compile_query, parse

ORDERS = TableInfo(
    name="orders",
    dataset_id="d1",
    namespace=NamespaceRef("n1", "alice", "sales"),
    physical="ds_0123456789abcdef01234567",
    description="",
    columns={"order_id": "integer", "customer": "text", "total": "real", "placed": "timestamp", "orderNote": "text"},
    column_descriptions={},
)


def compiled(sql: str, target: str = "sqlite", row_cap: int = 100) -> str:
    parsed = parse(sql)
    return compile_query(parsed, dict.fromkeys(parsed.references, ORDERS), target, row_cap).sql


# Every function docs/query-language.md lists passes the checker and compiles for both stores.
DOCUMENTED = [
    "COUNT(*)", "SUM(total)", "AVG(total)", "MIN(total)", "MAX(total)", "STRING_AGG(customer, ',')",
    "GROUP_CONCAT(customer)", "ARRAY_AGG(customer)", "STDDEV(total)", "VARIANCE(total)",
    "PERCENTILE_CONT(0.5) WITHIN GROUP (ORDER BY total)", "PERCENTILE_DISC(0.5) WITHIN GROUP (ORDER BY total)",
    "MODE() WITHIN GROUP (ORDER BY customer)", "MEDIAN(total)", "BOOL_AND(total > 1)", "BOOL_OR(total > 1)",
    "COUNT(*) FILTER (WHERE total > 1)",
    "ROW_NUMBER() OVER (ORDER BY total)", "RANK() OVER (PARTITION BY customer ORDER BY total)",
    "DENSE_RANK() OVER (ORDER BY total)", "LAG(total) OVER (ORDER BY total)", "LEAD(total, 1) OVER (ORDER BY total)",
    "FIRST_VALUE(total) OVER (ORDER BY total)", "LAST_VALUE(total) OVER (ORDER BY total)",
    "NTH_VALUE(total, 2) OVER (ORDER BY total)", "NTILE(4) OVER (ORDER BY total)",
    "PERCENT_RANK() OVER (ORDER BY total)", "CUME_DIST() OVER (ORDER BY total)",
    "SUM(total) OVER (ORDER BY placed ROWS BETWEEN 2 PRECEDING AND CURRENT ROW)",
    "ROUND(total, 1)", "ABS(total)", "CEIL(total)", "FLOOR(total)", "SIGN(total)", "POWER(total, 2)", "SQRT(total)",
    "LN(total)", "LOG(10, total)", "EXP(total)", "GREATEST(total, 1)", "LEAST(total, 1)", "TRUNC(total)", "RANDOM()",
    "LOWER(customer)", "UPPER(customer)", "LENGTH(customer)", "SUBSTRING(customer, 1, 2)", "SUBSTR(customer, 2)",
    "TRIM(customer)", "REPLACE(customer, 'a', 'b')", "CONCAT(customer, '!')", "CONCAT_WS(',', customer, 'x')",
    "POSITION('a' IN customer)", "STRPOS(customer, 'a')", "LEFT(customer, 2)", "RIGHT(customer, 2)",
    "INITCAP(customer)", "LPAD(customer, 5, '.')", "RPAD(customer, 5, '.')", "REVERSE(customer)",
    "SPLIT_PART(customer, ' ', 1)",
    "EXTRACT(YEAR FROM placed)", "DATE_PART('month', placed)", "DATE_TRUNC('week', placed)", "CURRENT_DATE",
    "CURRENT_TIMESTAMP", "NOW()", "DATE(placed)", "TO_CHAR(placed, 'YYYY-MM')", "TO_TIMESTAMP(customer, 'YYYY')",
    "TO_DATE(customer, 'YYYY-MM-DD')", "placed + INTERVAL '3 days'", "placed - INTERVAL '1 month'",
    "STRFTIME('%Y-%m', placed)", "JULIANDAY(placed) - JULIANDAY('2024-01-01')",
    "COALESCE(customer, 'x')", "NULLIF(total, 0)", "CAST(total AS INTEGER)", "total::text",
    "CAST(customer AS TIMESTAMP)", "CAST(total AS NUMERIC(10, 2))", "CASE WHEN total > 1 THEN 'a' ELSE 'b' END",
    "customer || '!'", "customer ILIKE '%a%'", "customer SIMILAR TO 'a%'", "customer ~ 'a'",
    "customer IS DISTINCT FROM 'a'", "total BETWEEN 1 AND 2", "total IN (1, 2)",
    "EXISTS (SELECT 1 FROM orders o2 WHERE o2.total > orders.total)",
    "total = ANY (SELECT total FROM orders)",
]  # fmt: skip


@pytest.mark.parametrize("expression", DOCUMENTED)
@pytest.mark.parametrize("target", ["sqlite", "postgres"])
def test_documented_functions_pass(expression: str, target: str) -> None:
    assert compiled(f"SELECT {expression} AS value FROM orders", target).startswith("SELECT")


def test_tables_become_row_tables_under_the_names_the_query_uses() -> None:
    sql = compiled('SELECT o.total, ORDERNOTE FROM orders o WHERE "total" > 1')
    assert sql.startswith(
        'SELECT "o"."total", "orderNote", "o"."__id" AS "__dw_id" FROM "ds_0123456789abcdef01234567" AS "o"'
    )
    assert compiled("SELECT total FROM alice.sales.orders WHERE alice.sales.orders.total > 1").startswith(
        'SELECT "total", "orders"."__id" AS "__dw_id" FROM "ds_0123456789abcdef01234567" AS "orders" WHERE "orders"."total" > 1'
    )


def test_sqlite_gets_its_own_spelling_of_postgres_functions() -> None:
    sql = compiled(
        "SELECT EXTRACT(MONTH FROM placed) AS m, DATE_TRUNC('month', placed) AS start, LEFT(customer, 2) AS two, "
        "CONCAT(customer, total) AS both, placed + INTERVAL '2 hours' AS later FROM orders"
    )
    assert "CAST(STRFTIME('%m', \"placed\") AS INTEGER)" in sql
    assert "STRFTIME('%Y-%m-01 00:00:00', \"placed\")" in sql
    assert 'SUBSTRING("customer", 1, 2)' in sql
    assert "COALESCE(CAST(\"customer\" AS TEXT), '') || COALESCE(CAST(\"total\" AS TEXT), '')" in sql
    assert "DATETIME(\"placed\", '+2 hours')" in sql
    assert "ROUND(CAST(" in compiled("SELECT ROUND(AVG(total), 2) AS a FROM orders", "postgres")


def test_the_row_cap_becomes_a_limit_one_past_it() -> None:
    assert compiled("SELECT total FROM orders", row_cap=100).endswith("LIMIT 101")
    assert compiled("SELECT total FROM orders LIMIT 5", row_cap=100).endswith("LIMIT 5")
    assert compiled("SELECT total FROM orders LIMIT 500", row_cap=100).endswith("LIMIT 101")
    assert compiled("SELECT total FROM orders UNION SELECT total FROM orders", row_cap=100).endswith("LIMIT 101")


def test_semantic_becomes_a_lookup_of_the_searched_rows() -> None:
    parsed = parse("SELECT total FROM orders ORDER BY semantic('apple pie') DESC")
    query = compile_query(parsed, dict.fromkeys(parsed.references, ORDERS), "sqlite", 10)
    assert [s.text for s in query.searches] == ["apple pie"]
    assert query.sql.startswith('WITH "__dw_score0"("__id") AS MATERIALIZED (SELECT value FROM json_each(?))')
    assert '"__dw_score" FROM' in query.sql  # the score reaches __metadata
    parsed = parse("SELECT total, semantic('pie') AS s FROM orders WHERE semantic('pie') > 0.5")
    query = compile_query(parsed, dict.fromkeys(parsed.references, ORDERS), "postgres", 10)
    assert len(query.searches) == 1 and query.sql.count("CAST($1 AS JSONB)") == 3


@pytest.mark.parametrize(
    ("sql", "code"),
    [
        ("SELECT semantic(total) FROM orders", "semantic_usage"),
        ("SELECT semantic('a') FROM (SELECT * FROM orders) AS t", "semantic_usage"),
        ("SELECT __dw_score0(order_id) FROM orders", "function_not_allowed"),
        ("SELECT strftime('%Y', placed, 'start of month') FROM orders", "function_usage"),
        ("SELECT to_json(placed) FROM orders", "function_not_allowed"),
        ("SELECT o.total FROM orders o JOIN orders o ON TRUE", "duplicate_alias"),
    ],
)
def test_refusals_without_a_database(sql: str, code: str) -> None:
    with pytest.raises(QueryError) as caught:
        parsed = parse(sql)
        compile_query(parsed, dict.fromkeys(parsed.references, ORDERS), "sqlite", 10)
    assert code in [s.code for s in caught.value.sub_errors]


# --- issue 27: date functions only on columns that hold dates (checker/dates.py) ---
CALENDAR = {
    "year": "integer",
    "month": "text",
    "day": "text",
    "held": "timestamp",
    "count": "integer",
    "departure_time": "integer",
}
CALENDAR_HINTS = {
    "year": ColumnHint(type="integer", low=1998, high=2019),
    "month": ColumnHint(type="text", distinct=3, values=["January", "March", "May"]),
    "day": ColumnHint(type="text", distinct=2, values=["2024-03-01", "2024-03-02"]),
    "held": ColumnHint(type="timestamp", low="2024-01-01", high="2024-12-31", format="YYYY-MM-DD"),
    "count": ColumnHint(type="integer", low=0, high=40),
    "departure_time": ColumnHint(type="integer", low=1577836800, high=1577900000),  # Unix seconds
}


def calendar_compile(sql: str) -> str:
    info = dataclasses.replace(ORDERS, name="events", columns=CALENDAR, hints=CALENDAR_HINTS)
    parsed = parse(sql)
    return compile_query(parsed, {ref: info for ref in parsed.references}, "sqlite", 100).sql


@pytest.mark.parametrize(
    ("sql", "told"),
    [
        (
            "SELECT COUNT(*) FROM events WHERE strftime('%Y', year) = '2019'",
            "events.year holds years (integer), not dates: strftime() cannot take it; compare it as stored, "
            "for example year = 2019",
        ),
        (
            "SELECT COUNT(*) FROM events WHERE EXTRACT(MONTH FROM month) = 3",
            "events.month holds month names (text), not dates: EXTRACT() cannot take it; compare it as stored, "
            "for example month = 'January'",
        ),
        ("SELECT julianday(count) FROM events", "events.count holds numbers (integer), not dates"),
        (
            "SELECT strftime('%m', departure_time) FROM events",
            "events.departure_time holds unix seconds (integer), not dates: strftime() cannot take it; make it a "
            "timestamp with to_timestamp(), for example strftime('%Y-%m', to_timestamp(departure_time))",
        ),
    ],
)
def test_a_date_function_on_a_column_without_dates_is_refused_with_how_to_compare(sql: str, told: str) -> None:
    with pytest.raises(QueryError) as caught:
        calendar_compile(sql)
    assert [s.code for s in caught.value.sub_errors] == ["not_a_date"]
    assert caught.value.sub_errors[0].message.startswith(told)


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT COUNT(*) FROM events WHERE year = 2019 AND month = 'March'",
        "SELECT strftime('%Y-%m', held) FROM events",
        "SELECT date(day) FROM events",  # ISO dates kept as text
        "SELECT strftime('%m', to_timestamp(departure_time)) FROM events",  # Unix seconds, read as such
    ],
)
def test_date_functions_on_dates_and_plain_comparisons_pass(sql: str) -> None:
    assert calendar_compile(sql)
