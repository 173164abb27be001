"""The extract suite is right: its eight files go through the real ingestion path and, when
the model maps and extracts as a careful reader would (scripted here, with the values as the
files write them), every gold field comes out right; `fields-match` scores per field."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel

from datawell.evals import metrics, scoring
from datawell.evals.runner import default_targets, predict
from datawell.evals.suites import load_suite
from datawell.ingest.mapping import ColumnMapping, FieldSource
from datawell.llm.embeddings import HashingEmbedder
from datawell.llm.models import FixedChatModels
from datawell.llm.scripted import ScriptedChatModel
from datawell.services import Overrides


class ExtractedRecords(BaseModel):
    """What the model answers for a passage (the pipeline asks for this class name)."""

    records: list[dict[str, Any]]


def mapping(**fields: str | None) -> ColumnMapping:
    return ColumnMapping(fields=[FieldSource(field=f, column=c) for f, c in fields.items()])


# In case order: what a model that reads well answers, values as the file writes them.
ANSWERS: list[BaseModel] = [
    ExtractedRecords(
        records=[
            {"store": "Nordlicht Berlin", "city": "Berlin", "opened": "14 March 2019", "employees": 42,
             "monthly_revenue_eur": "€185,000"},
            {"store": "Nordlicht Hafen", "city": "Hamburg", "opened": "2 September 2020", "employees": 23,
             "monthly_revenue_eur": "€97,500"},
            {"store": "Nordlicht Isar", "city": "Munich", "opened": "1 June 2021", "employees": 31,
             "monthly_revenue_eur": "€120,000"},
            {"store": "Nordlicht Rhein", "city": "Cologne", "opened": "15 November 2022", "employees": 12,
             "monthly_revenue_eur": "€48,250"},
            {"store": "Nordlicht Elbe", "city": "Dresden", "opened": "30 April 2024", "employees": 18,
             "monthly_revenue_eur": "€61,900"},
        ]
    ),
    ExtractedRecords(
        records=[
            {"product": "Trail Runner 2", "category": "Shoes", "price_usd": "$129.00", "in_stock": "yes",
             "weight_kg": "0.62 kg"},
            {"product": "Summit Jacket", "category": "Outerwear", "price_usd": "$249.50", "in_stock": "no",
             "weight_kg": "1.1 kg"},
            {"product": "Base Layer Tee", "category": "Shirts", "price_usd": "$34.99", "in_stock": "yes",
             "weight_kg": "180 g"},
            {"product": "Alpine Pack 30L", "category": "Bags", "price_usd": "$1,049.00", "in_stock": "yes",
             "weight_kg": "1.45 kg"},
            {"product": "Merino Socks", "category": "Accessories", "price_usd": "$18.00", "in_stock": "no",
             "weight_kg": "90 g"},
        ]
    ),
    ExtractedRecords(
        records=[
            {"invoice_no": "INV-2024-017", "customer": "Acme Ltd", "issued": "5 March 2024",
             "amount_usd": "1,250.00 USD", "paid": "yes"},
            {"invoice_no": "INV-2024-018", "customer": "Globex Corp", "issued": "12 March 2024",
             "amount_usd": "980.40 USD", "paid": "no"},
            {"invoice_no": "INV-2024-019", "customer": "Initech", "issued": "28 March 2024",
             "amount_usd": "15,000.00 USD", "paid": "yes"},
            {"invoice_no": "INV-2024-020", "customer": "Acme Ltd", "issued": "2 April 2024",
             "amount_usd": "310.75 USD", "paid": "no"},
        ]
    ),
    mapping(station="Station", measured_on="Datum", temperature_c="Temperatur (°C)",
            precipitation_mm="Niederschlag (mm)", wind_kmh="Wind (km/h)"),
    # The XLSX's two header rows name every field (Region, Q1 Units, ...): mapped by name, no call.
    mapping(member_id="id", first_name="name.first", last_name="name.last", city="address.city",
            country="address.country", joined="joined", tier="plan.tier", monthly_fee="plan.monthly_fee"),
    mapping(order_no="Order #", order_date="Date", customer="Customer", total_usd="Total",
            discount_pct="Discount", shipped="Shipped"),
    mapping(parcel_id="Sendung", weight_kg="Gewicht", length_cm="Länge", insured="Versichert"),
]  # fmt: skip


async def test_every_extract_case_scores_every_field_right_when_the_model_reads_well(tmp_path: Path) -> None:
    suite = load_suite("extract")
    assert len(suite.cases) >= 8
    model = ScriptedChatModel(ANSWERS)
    overrides = Overrides(models=FixedChatModels(model), embedder=HashingEmbedder())
    predictions = await predict(suite, tmp_path, targets=default_targets(), overrides=overrides)
    results = await scoring.score_all(suite, predictions)
    wrong = {r.case_id: (r.error, [o.detail for o in r.outcomes if not o.passed]) for r in results if not r.passed}
    assert wrong == {}
    assert all(r.metrics["field_accuracy"] == 1.0 for r in results)
    assert len(model.calls) == len(ANSWERS)  # one answer per file: nothing asked twice


def test_field_scores_count_each_field_and_made_up_rows() -> None:
    gold = [{"id": 1, "price": 9.99, "on": "2025-03-11"}, {"id": 2, "price": 5, "on": "2025-03-12"}]
    predicted = [
        {"id": 2, "price": 5.0, "on": "2025-03-12T00:00:00+00:00"},
        {"id": 1, "price": "9,99 €", "on": "2025-03-11T00:00:00+00:00"},  # the price kept as text: wrong
        {"id": 3, "price": 1.0, "on": None},  # not in the file
    ]
    score = metrics.field_scores(predicted, gold, key="id")
    assert (score.right, score.total) == (5, 8)
    assert score.wrong[0] == "row 1 price: '9,99 €' != 9.99"
    assert metrics.field_scores([], gold).accuracy == 0.0
