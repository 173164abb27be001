from __future__ import annotations

import numpy as np

from datawell.ontology.geo import as_points, coordinate_fields, near_count
from datawell.ontology.links import FieldRef
from datawell.ontology.profiles import FieldKey, profile_values
from datawell.ontology.values import code_number, country_codes, exact_text, normalize, overlap


def test_normalisation_folds_spellings_together() -> None:
    assert normalize("C-001") == normalize("c001") == normalize("c 1") == "c1"
    assert normalize("007") == "7"
    assert normalize("Côte d'Ivoire") == normalize("COTE D IVOIRE") == "cotedivoire"
    assert normalize("ＡＢＣ１") == "abc1"  # full-width forms (NFKC)
    assert normalize("1.50") == "1.50" and normalize("15") != normalize("1.5")  # decimals keep their point
    assert exact_text(1) == exact_text(1.0) == exact_text("1") == "1"
    assert exact_text("  ") is None


def test_codes_and_countries() -> None:
    assert code_number("p42") == ("p", "42")
    assert code_number("hello") is None
    table = country_codes()
    assert table[normalize("Germany")] == table["deu"] == table["de"] == "DE"
    assert table[normalize("Côte d'Ivoire")] == "CI"


def test_profiles_recognise_codes_countries_and_numbers() -> None:
    codes = profile_values(FieldKey("n", "d", "f"), "d", "text", "", [f"C-{i:03d}" for i in range(1, 50)])
    assert codes.coded and codes.code_prefixes == ("c",) and not codes.numeric
    countries = profile_values(FieldKey("n", "d", "c"), "d", "text", "", ["FR", "DE", "US", "JP"])
    names = profile_values(FieldKey("n", "e", "c"), "e", "text", "", ["France", "Germany", "Japan"])
    assert overlap(countries.countries, names.countries) == 3
    assert overlap(countries.normalized, names.normalized) == 0
    numbers = profile_values(FieldKey("n", "d", "i"), "d", "integer", "", [1, 2, 3], rows=6)
    assert numbers.numeric and numbers.uniqueness == 0.5
    assert overlap(numbers.normalized, codes.code_numbers) == 3


def test_coordinates() -> None:
    assert coordinate_fields(["lat", "lon", "name"]) == [("lat", "lon")]
    assert coordinate_fields(["pickup_latitude", "pickup_longitude", "drop_lat", "drop_lng"]) == [
        ("drop_lat", "drop_lng"),
        ("pickup_latitude", "pickup_longitude"),
    ]
    assert as_points([(100.0, 2.0), (95.0, 1.0)]) is None  # not latitudes
    paris, paris_nearby, lyon = (48.8566, 2.3522), (48.8600, 2.3500), (45.7640, 4.8357)
    assert near_count(np.array([paris_nearby, lyon]), np.array([paris]), 1.0) == 1
    assert near_count(np.array([paris_nearby]), np.array([paris]), 0.1) == 0


def test_link_ends_parse() -> None:
    assert FieldRef.parse("shop/orders.customer").fields == ("customer",)
    geo = FieldRef.parse("shop/stores.latitude,longitude")
    assert (geo.dataset, geo.fields) == ("stores", ("latitude", "longitude"))
    assert str(geo) == "shop/stores.latitude,longitude"
