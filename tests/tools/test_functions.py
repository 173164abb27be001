"""Every function docs/query-language.md lists, executed on each store, with its result
checked. The dataset has one row: order 1 of `tests.tools.conftest.ORDERS` (Ada, 12.5, placed
2024-01-05 10:00 UTC)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from datawell.errors import QueryError
from datawell.services import Services
from datawell.storage import access
from datawell.storage.access import NamespaceRef
from datawell.storage.tables import User
from datawell.storage.users import create_user
from tests.tools.conftest import ORDERS, load


def BETWEEN_0_AND_1(value: Any) -> bool:
    return isinstance(value, float) and 0 <= value < 1


def TODAY(value: Any) -> bool:
    return isinstance(value, str) and value.startswith(datetime.now(UTC).date().isoformat())


EXPECTED: list[tuple[str, Any]] = [
    ('COUNT(*)', 1),
    ('SUM(total)', 12.5),
    ('AVG(total)', 12.5),
    ('MIN(total)', 12.5),
    ('MAX(total)', 12.5),
    ("STRING_AGG(customer, ',')", 'Ada'),
    ('GROUP_CONCAT(customer)', 'Ada'),
    ('ARRAY_AGG(customer)', ['Ada']),
    ('STDDEV(total)', None),
    ('VARIANCE(total)', None),
    ('PERCENTILE_CONT(0.5) WITHIN GROUP (ORDER BY total)', 12.5),
    ('PERCENTILE_DISC(0.5) WITHIN GROUP (ORDER BY total)', 12.5),
    ('MODE() WITHIN GROUP (ORDER BY customer)', 'Ada'),
    ('MEDIAN(total)', 12.5),
    ('BOOL_AND(total > 1)', True),
    ('BOOL_OR(total > 1)', True),
    ('COUNT(*) FILTER (WHERE total > 1)', 1),
    ('ROW_NUMBER() OVER (ORDER BY total)', 1),
    ('RANK() OVER (PARTITION BY customer ORDER BY total)', 1),
    ('DENSE_RANK() OVER (ORDER BY total)', 1),
    ('LAG(total) OVER (ORDER BY total)', None),
    ('LEAD(total, 1) OVER (ORDER BY total)', None),
    ('FIRST_VALUE(total) OVER (ORDER BY total)', 12.5),
    ('LAST_VALUE(total) OVER (ORDER BY total)', 12.5),
    ('NTH_VALUE(total, 2) OVER (ORDER BY total)', None),
    ('NTILE(4) OVER (ORDER BY total)', 1),
    ('PERCENT_RANK() OVER (ORDER BY total)', 0.0),
    ('CUME_DIST() OVER (ORDER BY total)', 1.0),
    ('SUM(total) OVER (ORDER BY placed ROWS BETWEEN 2 PRECEDING AND CURRENT ROW)', 12.5),
    ('ROUND(total, 1)', 12.5),
    ('ABS(total)', 12.5),
    ('CEIL(total)', 13.0),
    ('FLOOR(total)', 12.0),
    ('SIGN(total)', 1.0),
    ('POWER(total, 2)', 156.25),
    ('SQRT(total)', 3.5355339059327378),
    ('LN(total)', 2.5257286443082556),
    ('LOG(10, total)', 1.0969100130080565),
    ('EXP(total)', 268337.2865208745),
    ('GREATEST(total, 1)', 12.5),
    ('LEAST(total, 1)', 1.0),
    ('TRUNC(total)', 12.0),
    ('RANDOM()', BETWEEN_0_AND_1),
    ('LOWER(customer)', 'ada'),
    ('UPPER(customer)', 'ADA'),
    ('LENGTH(customer)', 3),
    ('SUBSTRING(customer, 1, 2)', 'Ad'),
    ('SUBSTR(customer, 2)', 'da'),
    ('TRIM(customer)', 'Ada'),
    ("REPLACE(customer, 'a', 'b')", 'Adb'),
    ("CONCAT(customer, '!')", 'Ada!'),
    ("CONCAT_WS(',', customer, 'x')", 'Ada,x'),
    ("POSITION('a' IN customer)", 3),
    ("STRPOS(customer, 'a')", 3),
    ('LEFT(customer, 2)', 'Ad'),
    ('RIGHT(customer, 2)', 'da'),
    ('INITCAP(customer)', 'Ada'),
    ("LPAD(customer, 5, '.')", '..Ada'),
    ("RPAD(customer, 5, '.')", 'Ada..'),
    ('REVERSE(customer)', 'adA'),
    ("SPLIT_PART(customer, ' ', 1)", 'Ada'),
    ('EXTRACT(YEAR FROM placed)', 2024),
    ("DATE_PART('month', placed)", 1),
    ("DATE_TRUNC('week', placed)", '2024-01-01T00:00:00+00:00'),
    ('CURRENT_DATE', TODAY),
    ('CURRENT_TIMESTAMP', TODAY),
    ('NOW()', TODAY),
    ('DATE(placed)', '2024-01-05'),
    ("TO_CHAR(placed, 'YYYY-MM')", '2024-01'),
    ("TO_TIMESTAMP('2024', 'YYYY')", '2024-01-01T00:00:00+00:00'),
    ("TO_DATE('2024-03-05', 'YYYY-MM-DD')", '2024-03-05'),
    ("placed + INTERVAL '3 days'", '2024-01-08T10:00:00+00:00'),
    ("placed - INTERVAL '1 month'", '2023-12-05T10:00:00+00:00'),
    ("STRFTIME('%Y-%m', placed)", '2024-01'),
    ("JULIANDAY(placed) - JULIANDAY('2024-01-01')", 4.416666666511446),
    ("COALESCE(customer, 'x')", 'Ada'),
    ('NULLIF(total, 0)', 12.5),
    ('CAST(total AS INTEGER)', 12),
    ('total::text', '12.5'),
    ("CAST('2024-01-05 10:00:00' AS TIMESTAMP)", '2024-01-05T10:00:00'),
    ('CAST(total AS NUMERIC(10, 2))', 12.5),
    ("CASE WHEN total > 1 THEN 'a' ELSE 'b' END", 'a'),
    ("customer || '!'", 'Ada!'),
    ("customer ILIKE '%a%'", True),
    ("customer SIMILAR TO 'a%'", False),
    ("customer ~ 'a'", True),
    ("customer IS DISTINCT FROM 'a'", True),
    ('total BETWEEN 1 AND 2', False),
    ('total IN (1, 2)', False),
    ('EXISTS (SELECT 1 FROM orders o2 WHERE o2.total > orders.total)', False),
    ('total = ANY (SELECT total FROM orders)', True),
]  # fmt: skip

# Documented as PostgreSQL only: on SQLite they come back as a database error.
POSTGRES_ONLY = {
    "ARRAY_AGG(customer)", "STDDEV(total)", "VARIANCE(total)", "PERCENTILE_CONT(0.5) WITHIN GROUP (ORDER BY total)",
    "PERCENTILE_DISC(0.5) WITHIN GROUP (ORDER BY total)", "MEDIAN(total)", "SPLIT_PART(customer, ' ', 1)",
    "customer ~ 'a'", "customer SIMILAR TO 'a%'", "MODE() WITHIN GROUP (ORDER BY customer)",
}  # fmt: skip

# Known defects, listed so the test fails when one is fixed (then remove it here) or a new one appears.
KNOWN_WRONG: dict[tuple[str, str], str] = {}


# Corner cases of what SQLite runs differently (its own spelling, or a Python function of the
# query connection): NULLs, cuts, empty fills, NOT IN, and timestamps without a zone.
CORNERS: list[tuple[str, Any]] = [
    ("LPAD(customer, 2)", "Ad"),
    ("RPAD(customer, 2, 'x')", "Ad"),
    ("LPAD(customer, 6, 'xy')", "xyxAda"),
    ("RPAD(customer, 6, 'xy')", "Adaxyx"),
    ("LPAD(customer, 5)", "  Ada"),
    ("LPAD(customer, 5, '')", "Ada"),
    ("RPAD(customer, -1, 'x')", ""),
    ("LPAD(NULL, 5, 'x')", None),
    ("RPAD(customer, NULL, 'x')", None),
    ("LPAD(customer, 5, NULL)", None),
    ("INITCAP('hello wORLD 3rd-x_y')", "Hello World 3rd-X_Y"),
    ("INITCAP(NULL)", None),
    ("REVERSE(NULL)", None),
    ("REVERSE('äbc')", "cbä"),
    ("CONCAT_WS(',', customer, NULL, total)", "Ada,12.5"),
    ("CONCAT_WS('--', NULL, NULL)", ""),
    ("CONCAT_WS(NULL, customer)", None),
    ("total <> ALL (SELECT total FROM orders)", False),
    ("total = ANY (SELECT total + 1 FROM orders)", False),
    ("LOG(2, 8)", 3.0),
    ("CAST(placed AS TIMESTAMP)", "2024-01-05T10:00:00"),
    ("DATE_TRUNC('day', CAST(placed AS TIMESTAMP))", "2024-01-05T00:00:00"),
    ("CAST(placed AS TIMESTAMP) + INTERVAL '1 day'", "2024-01-06T10:00:00"),
    ("DATE_TRUNC('month', placed) - INTERVAL '1 day'", "2023-12-31T00:00:00+00:00"),
    ("TO_TIMESTAMP('2024-03-05 07:08', 'YYYY-MM-DD HH24:MI')", "2024-03-05T07:08:00+00:00"),
    ("TO_TIMESTAMP(1709622480)", "2024-03-05T07:08:00+00:00"),
    ("EXTRACT(MONTH FROM TO_TIMESTAMP(1709622480))", 3),
    ("TO_CHAR(TO_TIMESTAMP(1709622480), 'HH24:MI')", "07:08"),
    # The difference of two dates is a number of days on every store (SQLite alone would
    # subtract the texts' years and give 0, PostgreSQL an interval).
    ("ROUND(placed - '2024-01-01', 3)", 4.417),
    ("ROUND(placed - CAST('2024-01-01' AS DATE), 3)", 4.417),
    ("ROUND(TO_TIMESTAMP(1709622480) - placed, 2)", 59.88),
    ("CURRENT_DATE - placed > 365", True),
    # A date compared with a year, a month or a day compares that period (a timestamp never
    # equals '2024-01': as written, the filter matched nothing on either store).
    ("placed = '2024-01'", True),
    ("placed = '2024'", True),
    ("placed = '2024-01-05'", True),
    ("'2024-02' = placed", False),
]


def matches(expected: Any, value: Any) -> bool:
    return expected(value) if isinstance(expected, Callable) else value == expected  # type: ignore[arg-type]


async def one_order(services: Services) -> tuple[User, NamespaceRef]:
    async with services.db.session() as session:
        alice = await create_user(session, "alice")
        sales = await access.ensure_namespace(session, alice, "sales")
    types = {
        "order_id": "integer",
        "customer": "text",
        "total": "real",
        "paid": "boolean",
        "note": "text",
        "placed": "timestamp",
    }
    await load(services, sales, alice, "orders", {k: k for k in types}, types, ORDERS[:1])
    return alice, sales


async def value_of(services: Services, user: User, namespace: NamespaceRef, expression: str) -> Any:
    """The expression's value for the one order, or the QueryError it raised."""
    try:
        result = await services.query_tools.run(user, namespace, f"SELECT {expression} AS value FROM orders")
    except QueryError as error:
        return error
    return result.rows[0]["value"]


async def test_every_documented_function_runs_and_gives_its_result(services: Services) -> None:
    alice, sales = await one_order(services)
    store = services.rows.dialect
    wrong = {}
    for expression, expected in EXPECTED:
        value = await value_of(services, alice, sales, expression)
        if store == "sqlite" and expression in POSTGRES_ONLY:
            ok = isinstance(value, QueryError) and value.sub_errors[0].code == "database_error"
        else:
            ok = not isinstance(value, QueryError) and matches(expected, value)
        if not ok:
            wrong[(store, expression)] = value
    assert set(wrong) == {k for k in KNOWN_WRONG if k[0] == store}, wrong


async def test_corner_cases_give_the_same_result_on_every_store(services: Services) -> None:
    alice, sales = await one_order(services)
    wrong = {}
    for expression, expected in CORNERS:
        value = await value_of(services, alice, sales, expression)
        if isinstance(value, QueryError) or not matches(expected, value):
            wrong[expression] = value
    assert not wrong


async def test_padding_past_the_cap_is_refused_or_clamped(services: Services) -> None:
    alice, sales = await one_order(services)
    refused = await value_of(services, alice, sales, "LPAD(customer, 1000000000, 'x')")
    assert isinstance(refused, QueryError) and refused.sub_errors[0].code == "argument_limit"
    assert await value_of(services, alice, sales, "LENGTH(LPAD(customer, 1000000000 + 0, 'x'))") == 10_000
