"""How active links reach the query writer: as the join condition that matches their values."""

from __future__ import annotations

from datawell.graphs.view import render_links
from datawell.storage.access import NamespaceRef
from tests.graphs.fakes import TextCatalog, table

WEATHER = NamespaceRef(id="ns-weather", owner="evals", name="weather")
CATALOG = TextCatalog(
    namespace=WEATHER,
    tables=[
        table(WEATHER, "readings", {"station": "text", "day": "timestamp", "station_no": "integer"}),
        table(WEATHER, "stations", {"station_code": "text", "name": "text", "number": "text"}),
    ],
)


def test_a_normalized_match_of_text_columns_joins_ignoring_case() -> None:
    text = render_links(CATALOG, [("weather/readings.station", "weather/stations.station_code", "NormalizedMatch", 5)])
    assert text == "- LOWER(readings.station) = LOWER(stations.station_code) (NormalizedMatch, 5 matching values)"


def test_an_exact_match_joins_as_written() -> None:
    text = render_links(CATALOG, [("weather/readings.station", "weather/stations.station_code", "ExactMatch", 5)])
    assert text == "- readings.station = stations.station_code (ExactMatch, 5 matching values)"


def test_a_normalized_match_with_a_number_column_is_not_lowered() -> None:
    # LOWER() of an integer fails on PostgreSQL: the plain condition is the better hint.
    text = render_links(CATALOG, [("weather/readings.station_no", "weather/stations.number", "NormalizedMatch", 3)])
    assert text == "- readings.station_no = stations.number (NormalizedMatch, 3 matching values)"
