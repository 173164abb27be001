"""The DataLinks query language: grammar, compilation to the QL, searchAround over active
links, errors with positions."""

from __future__ import annotations

import pytest

from datawell.errors import QueryError
from datawell.tools.dlql import Position, parse
from datawell.tools.dlql_compile import Join, Table, compile_query, hop_join

FIELDS = ["brand", "price", "in_stock", "note", "country", "name"]


def ql(text: str, joins: list[Join] | None = None) -> str:
    query = parse(text)
    tables = [Table(f"alice/{h.dataset.namespace}/{h.dataset.name}", h.dataset.name, FIELDS) for h in query.hops]
    return compile_query(query, tables, joins or [])


def error(text: str) -> QueryError:
    with pytest.raises(QueryError) as raised:
        ql(text)
    return raised.value


def test_a_dataset_alone_reads_every_row() -> None:
    assert ql("Ontology(shop/products)") == "SELECT * FROM products"
    assert ql('Ontology("shop/products")') == "SELECT * FROM products"
    assert ql("Ontology('alice/shop/products')") == "SELECT * FROM products"
    assert parse('Ontology("alice/shop/products")').hops[0].dataset.owner == "alice"


@pytest.mark.parametrize(
    ("condition", "where"),
    [
        ("price == 10", '"price" = 10'),
        ("price = 10", '"price" = 10'),
        ("price != 10", '"price" <> 10'),
        ("price <> 10", '"price" <> 10'),
        ("price < 10.5", '"price" < 10.5'),
        ("price <= -3", '"price" <= -3'),
        ("price > 1e3", '"price" > 1000.0'),
        ("price >= 0", '"price" >= 0'),
        ('brand == "Oral-B"', "\"brand\" = 'Oral-B'"),
        ("in_stock == true", '"in_stock" = TRUE'),
        ("in_stock == FALSE", '"in_stock" = FALSE'),
        ('brand contains "Ra"', "INSTR(LOWER(CAST(\"brand\" AS TEXT)), 'ra') > 0"),
        ('brand startsWith "Br"', "INSTR(LOWER(CAST(\"brand\" AS TEXT)), 'br') = 1"),
        (
            'brand endsWith "UN"',
            'SUBSTR(LOWER(CAST("brand" AS TEXT)), LENGTH(LOWER(CAST("brand" AS TEXT))) - 2 + 1) = \'un\'',
        ),
        ('brand in ["Braun", "Philips"]', "\"brand\" IN ('Braun', 'Philips')"),
        ("price in (1, 2)", '"price" IN (1, 2)'),
        ('brand not in ("Braun")', "\"brand\" NOT IN ('Braun')"),
        ("note is null", '"note" IS NULL'),
        ("note is not null", '"note" IS NOT NULL'),
        ("`price` > 1", '"price" > 1'),
    ],
)
def test_every_operator(condition: str, where: str) -> None:
    assert ql(f'Ontology("shop/products").filter({condition})') == f"SELECT * FROM products WHERE {where}"


def test_logic_and_precedence() -> None:
    assert ql(
        'Ontology("s/p").filter(price > 1 and brand == "B" or not (note is null) || !(price < 0) && price < 9)'
    ) == (
        'SELECT * FROM p WHERE (("price" > 1 AND "brand" = \'B\') OR NOT ("note" IS NULL) '
        'OR (NOT ("price" < 0) AND "price" < 9))'
    )
    # Keywords are whole words: a field may begin with one.
    assert ql('Ontology("s/p").filter(note == "x")').endswith("\"note\" = 'x'")
    assert ql('Ontology("s/p").filter(in_stock == true)').endswith('"in_stock" = TRUE')


def test_two_filters_are_both_applied() -> None:
    assert (
        ql('Ontology("s/p").filter(price > 1).filter(price < 5)') == 'SELECT * FROM p WHERE "price" > 1 AND "price" < 5'
    )


def test_quoting_of_values() -> None:
    assert ql("Ontology(s/p).filter(brand == 'O\\'Neil')") == "SELECT * FROM p WHERE \"brand\" = 'O''Neil'"
    assert ql('Ontology(s/p).filter(brand == "say \\"hi\\"")') == 'SELECT * FROM p WHERE "brand" = \'say "hi"\''
    assert ql('Ontology(s/p).filter(brand contains "50%_off")').endswith("'50%_off') > 0")
    assert ql('Ontology(s/p).filter(brand == "\'; DROP TABLE p; --")') == (
        "SELECT * FROM p WHERE \"brand\" = '''; DROP TABLE p; --'"
    )


def test_select_order_limit() -> None:
    assert ql("Ontology(s/p).select(brand, price).orderBy(price, desc).limit(5)") == (
        'SELECT "brand", "price" FROM p ORDER BY "price" DESC LIMIT 5'
    )
    assert ql("Ontology(s/p).orderBy(price, ASC)") == 'SELECT * FROM p ORDER BY "price"'


def test_search_around_nests_each_hop() -> None:
    text = 'Ontology("s/products").filter(price > 100).searchAround("s/brands").find(country != "NL")'
    assert ql(text, [Join("brand", "name")]) == (
        'SELECT * FROM brands WHERE "name" IN (SELECT "brand" FROM products WHERE "price" > 100) '
        "AND \"country\" <> 'NL'"
    )
    two = 'Ontology("s/a").searchAround("s/b").find().searchAround("s/c").find(price > 1)'
    assert ql(two, [Join("brand", "name"), Join("country", "note")]) == (
        'SELECT * FROM c WHERE "note" IN (SELECT "country" FROM b WHERE "name" IN (SELECT "brand" FROM a)) '
        'AND "price" > 1'
    )


LINKS = [
    ("alice/s/products", "brand", "alice/s/brands", "name"),
    ("alice/s/brands", "name", "alice/s/products", "brand"),
    ("alice/s/products", "country", "alice/s/countries", "code"),
]


def test_search_around_follows_active_links() -> None:
    products = Table("alice/s/products", "products", FIELDS)
    hop = parse('Ontology("s/products").searchAround("s/brands")').hops[1]
    assert hop_join(products, hop, LINKS) == ("alice/s/brands", Join("brand", "name"))
    back = parse('Ontology("s/brands").searchAround("s/products")').hops[1]
    brands = Table("alice/s/brands", "brands", FIELDS)
    assert hop_join(brands, back, LINKS) == ("alice/s/products", Join("name", "brand"))
    only = parse('Ontology("s/brands").searchAround()').hops[1]
    assert hop_join(brands, only, LINKS)[0] == "alice/s/products"


def test_search_around_without_a_link_or_with_several_is_refused_with_its_position() -> None:
    products = Table("alice/s/products", "products", FIELDS)
    missing = parse('Ontology("s/products")\n  .searchAround("s/stores")').hops[1]
    with pytest.raises(QueryError) as raised:
        hop_join(products, missing, LINKS)
    assert raised.value.sub_errors[0].code == "no_link"
    assert raised.value.sub_errors[0].message.startswith("line 2, column 3:")
    several = parse('Ontology("s/products").searchAround()').hops[1]
    with pytest.raises(QueryError) as raised:
        hop_join(products, several, LINKS)
    assert raised.value.sub_errors[0].code == "ambiguous_link"
    assert "alice/s/brands" in raised.value.message and "alice/s/countries" in raised.value.message


@pytest.mark.parametrize(
    ("text", "at", "words"),
    [
        ("Ontology(s/p).filter(price > )", Position(1, 30), "unexpected ')'"),
        ("Ontology(s/p).filtre(price > 1)", Position(1, 15), "unexpected 'filtre'"),
        ('Ontology(s/p).filter(brand == "open)', Position(1, 31), "unexpected character"),
        ("Ontology(s/p).filter(price > 1", Position(1, 30), "ends too early"),
        ("Ontology(s/p)\n.filter(price == null)", Position(2, 9), "is null"),
        ("Ontology(s/p).find(price > 1)", Position(1, 14), "after searchAround"),
        ('Ontology("products")', Position(1, 10), "namespace/dataset"),
        ("Ontology(s/p).limit(-1)", Position(1, 21), "unexpected"),
        ("Ontology(s/p) extra", Position(1, 15), "unexpected"),
    ],
)
def test_syntax_errors_name_line_and_column(text: str, at: Position, words: str) -> None:
    raised = error(text)
    assert raised.mapping.http_status == 422
    assert words in raised.message
    assert raised.sub_errors[0].message.startswith(f"{at}:")


def test_an_unknown_field_names_its_position_and_the_known_ones() -> None:
    raised = error("Ontology(s/p).filter(price > 1 and\n   pric < 3)")
    assert raised.sub_errors[0].code == "unknown_field"
    assert raised.sub_errors[0].message.startswith("line 2, column 4:")
    assert "brand" in raised.sub_errors[0].message
    assert error("Ontology(s/p).select(nope)").sub_errors[0].code == "unknown_field"
    assert error("Ontology(s/p).orderBy(nope)").sub_errors[0].code == "unknown_field"
