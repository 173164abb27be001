"""Issue 27: the columns a question names, said beside it to the query writer."""

from __future__ import annotations

from datawell.storage.access import NamespaceRef
from datawell.tools.catalog import Catalog, TableInfo
from datawell.tools.linking import named_block, named_columns

NAMESPACE = NamespaceRef("n1", "alice", "travel")


def table(name: str, *columns: str) -> TableInfo:
    return TableInfo(
        name=name,
        dataset_id=name,
        namespace=NAMESPACE,
        physical=name,
        description="",
        columns={c: "text" for c in columns},
        column_descriptions={},
    )


TRAVEL = Catalog(
    NAMESPACE,
    [
        table("airport", "airport_code", "airport_name", "minimum_connect_time", "time_zone_code"),
        table("flight", "flight_id", "flight_number", "departure_time", "arrival_time", "time_elapsed", "stops"),
        table("days", "days_code", "day_name"),
        table("airline", "airline_code", "name"),
        table("city", "city_code", "name"),
    ],
)


def named(question: str) -> list[str]:
    return [n.column for n in named_columns(TRAVEL, question)]


def test_a_column_the_question_says_nearly_word_for_word_is_named() -> None:
    assert named("What is the minimum amount of time required for a connecting flight at JFK?") == [
        "airport.minimum_connect_time"
    ]
    assert named("How many stops does flight AA123 make?") == ["flight.stops"]


def test_a_word_of_many_column_names_names_none_of_them() -> None:
    # "time" is in five names, "flight" in two of one table: neither says which column.
    assert named("Which flight takes the most time?") == []


def test_a_column_named_after_its_table_is_not_named_by_the_table_name() -> None:
    assert named("On how many days does each flight operate?") == []


def test_a_name_of_several_tables_columns_is_named_only_with_its_table() -> None:
    shop = Catalog(NAMESPACE, [table("customers", "id", "name", "country"), table("products", "id", "name", "price")])
    assert [n.column for n in named_columns(shop, "List the names of the customers in Germany.")] == ["customers.name"]
    assert [n.column for n in named_columns(shop, "Give all the names.")] == []


def test_the_line_under_the_question() -> None:
    assert named_block(["airport.minimum_connect_time"]) == (
        "\nColumns the question names: airport.minimum_connect_time."
    )
    assert named_block([]) == ""
