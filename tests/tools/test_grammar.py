"""The query grammar (issue 50), checked through its lark mirror: what the embedded model may
write in its reply's query, on a catalog of two tables."""

from __future__ import annotations

import json

import lark
import pytest

from datawell.tools.grammar import lark_grammar, reply_grammar

COLUMNS = ["orders.id", "orders.customer_id", "orders.amount", "customers.id", "customers.name", "customers.Home Town"]


def parser(named: tuple[str, ...] = ()) -> lark.Lark:
    return lark.Lark(lark_grammar(reply_grammar(COLUMNS, named)), start="root", parser="earley", lexer="dynamic")


def accepts(reply: str, named: tuple[str, ...] = ()) -> bool:
    try:
        parser(named).parse(reply)
    except lark.exceptions.LarkError:
        return False
    return True


def query(sql: str) -> str:
    return json.dumps({"query": sql})


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT name FROM customers WHERE id = 3",
        "SELECT c.name, SUM(o.amount) AS spent FROM orders o JOIN customers AS c ON o.customer_id = c.id "
        "GROUP BY c.name ORDER BY spent DESC LIMIT 5",
        "select customers.name, count(*) from customers left join orders on orders.customer_id = customers.id "
        "group by customers.name having count(*) > 1;",
        "SELECT \"Home Town\" FROM customers WHERE name ILIKE '%o''b \"x\"%'",
        "SELECT EXTRACT(YEAR FROM CURRENT_DATE) - 1, amount::integer FROM orders WHERE amount BETWEEN 1.5 AND 2e3",
        "SELECT name\nFROM customers\nWHERE id IN (SELECT customer_id FROM orders)",
        "WITH big AS (SELECT customer_id, SUM(amount) AS total FROM orders GROUP BY customer_id) SELECT total FROM big",
    ],
)
def test_a_query_on_the_catalogs_names_is_accepted(sql: str) -> None:
    assert accepts(query(sql))


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT name FROM products",  # a table the namespace lacks
        "SELECT price FROM orders",  # a column no table has
        "SELECT orders.name FROM orders",  # a column of another table
        "SELECT customers.amount FROM customers",
        "SELECT o.price FROM orders o",  # an alias's column no table has
        "WITH t AS (SELECT 1) SELECT orders.name FROM orders",  # checked in a WITH too
        "SELECT ids FROM orders",  # a catalog name with more after it
        "DELETE FROM orders",
    ],
)
def test_a_name_the_namespace_lacks_is_refused(sql: str) -> None:
    assert not accepts(query(sql))


def test_the_whole_reply_is_held_and_only_the_query_is_constrained() -> None:
    assert accepts('{"query": "SELECT id FROM orders", "refusal": "any text at all, even orders.name"}')
    assert accepts('{"refusal": "no dataset holds prices"}')
    assert accepts('{ "query" : "", "refusal": "no" }')
    assert not accepts('{"answer": "SELECT id FROM orders"}')
    assert not accepts("SELECT id FROM orders")


def test_named_columns_come_first_and_from_the_list() -> None:
    named = ("orders.id", "orders.amount")
    assert accepts('{"columns": ["orders.amount"], "query": "SELECT amount FROM orders"}', named)
    assert not accepts('{"columns": ["orders.price"], "query": "SELECT amount FROM orders"}', named)
    assert not accepts('{"query": "SELECT amount FROM orders"}', named)
