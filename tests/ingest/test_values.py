"""Values written for people are stored in their field's type: each column gets one
reading, decided from all its values and the field's description (`ingest/values.py`);
a value that reading cannot read is left empty and reported with its line."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from datawell.ingest.mapping import ColumnMapping, FieldSource
from datawell.ingest.readings import MONTH_NAMES, babel_month_names
from datawell.ingest.values import decide
from datawell.llm.scripted import ScriptedChatModel
from datawell.services import Services
from tests.conftest import Account
from tests.ingest.support import attempt, create_dataset, dataset_ref, drain, rows_of, upload


def read(values: list[str], description: str) -> tuple[str, list[Any]]:
    """The column's reading and each value as read (or the reason it could not be)."""
    reading = decide(values, description)
    assert reading is not None, values
    found: list[Any] = []
    for value in values:
        try:
            found.append(reading.read(value))
        except ValueError as exc:
            found.append(f"unreadable: {exc}")
    return reading.label, found


def test_decimal_commas_and_thousands_separators() -> None:
    label, found = read(["1.234,5", "12,25", "7", "1 000,75"], "Quantity shipped")
    assert label == "numbers with a decimal comma"
    assert found == [1234.5, 12.25, 7, 1000.75]
    label, found = read(["1,234.5", "12.25", "3,000,000", "n/a"], "Total amount")
    assert label == "numbers with a decimal point"
    assert found[:3] == [1234.5, 12.25, 3000000] and found[3].startswith("unreadable")


def test_currency_symbols_and_codes_and_a_value_in_another_currency() -> None:
    label, found = read(["9,99 €", "EUR 1.299,00", "12 €", "$5,00"], "Unit price in euros (a number)")
    assert label == "amounts of money in EUR, decimal comma"
    assert found[:3] == [9.99, 1299.0, 12]
    assert found[3] == "unreadable: is in USD, the field holds EUR"
    assert read(["USD 12.50", "$3", "£2.10"], "Price")[1][:2] == [12.5, 3]


def test_percentages_as_written_or_as_fractions() -> None:
    assert read(["12,5 %", "50 %", "7%"], "Discount in percent") == ("percentages", [12.5, 50.0, 7.0])
    label, found = read(["12.5%", "50%"], "Share of returns, a fraction between 0 and 1")
    assert label == "percentages as fractions" and found == [0.125, 0.5]


def test_day_first_is_decided_by_the_whole_column_not_value_by_value() -> None:
    # Only the last value says day first; the first two would read either way.
    label, found = read(["03.04.2025", "05.06.2025", "28.02.2025"], "Order date")
    assert label == "dates, day first"
    assert found == [datetime(2025, 4, 3), datetime(2025, 6, 5), datetime(2025, 2, 28)]
    label, found = read(["03/04/2025", "04/13/2025"], "Order date")
    assert label == "dates, month first" and found[0] == datetime(2025, 3, 4)
    assert decide(["13/04/2025", "04/13/2025"], "Order date") is None  # both ways at once: no reading


def test_month_name_dates_in_several_languages() -> None:
    label, found = read(["11. März 2025", "3. April 2025", "1 March 2024", "March 5, 2024"], "Order date")
    assert label == "dates with month names, day first"
    assert found == [datetime(2025, 3, 11), datetime(2025, 4, 3), datetime(2024, 3, 1), datetime(2024, 3, 5)]


def test_the_written_out_month_names_are_babels() -> None:
    """`MONTH_NAMES` is babel's month names written out (building them from babel's locale data
    took 0.1 s of every first ingestion of a column with digits and words in it)."""
    assert babel_month_names() == MONTH_NAMES
    assert {"märz", "janv", "października", "september"} <= MONTH_NAMES


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        (["ja", "nein", "Ja"], [True, False, True]),
        (["oui", "non"], [True, False]),
        (["sí", "no", "si"], [True, False, True]),
        (["yes", "n", "Y"], [True, False, True]),
    ],
)
def test_booleans_in_several_languages(values: list[str], expected: list[bool]) -> None:
    assert read(values, "Paid") == ("yes/no words", expected)


def test_x_marks_are_booleans_only_when_the_description_says_so() -> None:
    assert decide(["x", "-"], "Notes") is None
    assert read(["x", "-"], "Whether the item is gift-wrapped")[1] == [True, False]


def test_units_named_in_the_description_are_converted_with_pint() -> None:
    label, found = read(["1.5 kg", "1500 g", "2", "3 lb", "4 m"], "Weight in kilograms")
    assert label == "quantities in kilogram"
    assert found[:3] == [1.5, 1.5, 2] and found[3] == pytest.approx(1.3607771)
    assert found[4].startswith("unreadable: is not a quantity of kilogram")


def test_free_text_and_plain_values_get_no_reading() -> None:
    assert decide(["Room 12", "Room 14", "Hall"], "Where the class meets") is None
    assert decide(["12.5", "3", "7"], "Amount in EUR") is None  # the plain ladder reads these
    assert decide(["2024-03-01", "2024-03-02"], "Order date") is None


GERMAN = (
    "Bestellnr.;Kunde;Artikel;Menge;Einzelpreis;Datum\n"
    "1001;Müller GmbH;Kabel;3;9,99 €;11.03.2025\n"
    "1002;Schmidt AG;Stecker;10;1.299,00 €;28.02.2025\n"
    "1003;Weber KG;Lampe;1;12,50 €;01.04.2025\n"
    "1004;Fischer OHG;Kabel;2;n/a;02.04.2025\n"
)
SHOP = {
    "dataDescription": "Orders of the shop",
    "schemaDefinition": {
        "order_no": "Order number",
        "customer": "Customer name",
        "product": "Product name",
        "quantity": "Units ordered",
        "unit_price_eur": "Unit price in euros (a number)",
        "order_date": "Order date",
    },
}
GERMAN_MAPPING = ColumnMapping(
    fields=[
        FieldSource(field="order_no", column="Bestellnr."),
        FieldSource(field="customer", column="Kunde"),
        FieldSource(field="product", column="Artikel"),
        FieldSource(field="quantity", column="Menge"),
        FieldSource(field="unit_price_eur", column="Einzelpreis"),
        FieldSource(field="order_date", column="Datum"),
    ]
)


async def test_a_german_csv_stores_prices_as_numbers_and_dates_as_dates(
    client, services: Services, alice: Account, chat_model: ScriptedChatModel
) -> None:
    await create_dataset(client, alice, body=SHOP)
    chat_model.script.append(GERMAN_MAPPING)
    ingestion_id = await upload(services, "alice", "bestellungen.csv", GERMAN.encode())
    await drain(services)
    done = await attempt(services, ingestion_id)
    assert done.status == "SUCCEEDED", done.status_message
    ref = await dataset_ref(services, "alice")
    assert ref.record.field_types == {
        "order_no": "integer",
        "customer": "text",
        "product": "text",
        "quantity": "integer",
        "unit_price_eur": "real",
        "order_date": "timestamp",
    }
    rows = await rows_of(services, "alice")
    assert [r["unit_price_eur"] for r in rows] == [9.99, 1299.0, 12.5, None]
    dates = [r["order_date"] for r in rows]
    assert [d if isinstance(d, str) else d.replace(tzinfo=d.tzinfo or UTC).date().isoformat() for d in dates] == [
        "2025-03-11",
        "2025-02-28",
        "2025-04-01",
        "2025-04-02",
    ]
    assert done.mapping["readings"] == {
        "unit_price_eur": "amounts of money in EUR, decimal comma",
        "order_date": "dates, day first",
    }
    # The one bad value is counted and named with its line, not kept as text: as the user reads it.
    response = await client.get(f"/api/v1/ingestionTracking/{ingestion_id}", headers=alice.headers)
    assert response.status_code == 200, response.text
    assert (
        "1 value could not be read as its field's type and was left empty "
        "(line 5: field 'unit_price_eur' (column 'Einzelpreis') 'n/a' is not an amount of money)"
    ) in response.json()["statusMessage"]


async def test_a_plain_csv_takes_the_usual_path(client, services: Services, alice: Account) -> None:
    await create_dataset(client, alice)
    data = b"order_id,customer,total,paid,placed_at\n1,Ada,12.5,true,2024-03-01\n2,Bob 2,3,false,2024-03-02\n"
    ingestion_id = await upload(services, "alice", "orders.csv", data)
    await drain(services)
    done = await attempt(services, ingestion_id)
    assert done.status == "SUCCEEDED", done.status_message
    assert "readings" not in done.mapping and "could not be read" not in done.status_message


def test_every_unreadable_value_is_counted_and_the_first_five_named() -> None:
    from collections.abc import Iterator

    from datawell.ingest.records import RecordBatch
    from datawell.ingest.values import ReadRecords

    prices = [f"{n},99 €" for n in range(1, 21)] + ["?"] * 7

    class Prices:
        def __init__(self) -> None:
            self.unit = "line"
            self.sources = {"price": "Preis"}

        def batches(self, size: int) -> Iterator[RecordBatch]:
            yield RecordBatch({"price": prices}, list(range(2, 29)), 0)

    reading = decide(list(dict.fromkeys(prices)), "Unit price in euros")  # as plan() gives it: distinct values
    assert reading is not None
    read = ReadRecords(Prices(), {"price": reading})
    [batch] = list(read.batches(100))
    assert list(batch.columns["price"]) == [n + 0.99 for n in range(1, 21)] + [None] * 7
    assert read.report() == (
        "7 values could not be read as their field's type and were left empty ("
        + "; ".join(f"line {n}: field 'price' (column 'Preis') '?' is not an amount of money" for n in range(22, 27))
        + "; and 2 more)"
    )
