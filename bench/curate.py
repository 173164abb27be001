"""Candidate generation at scale: MinHash LSH Ensemble against all-pairs exact overlap.

    .venv/bin/python bench/curate.py [--fields 10 50 200] [--rows 100000] [--baseline-limit 200]

Namespaces of 10, 50 and 200 fields, in datasets of 5 fields with `--rows` rows each. Every
dataset has a key spelled `AB-000123`, a reference to the previous dataset's key spelled
`ab000123`, the same reference as a plain number, a country (names in even datasets, ISO codes
in odd ones), and one more field taking turns: random unique text, amounts, small counts,
years, city names, hex codes. Both methods
start from the same field profiles (hashes of the exact and normalised values: the part that
reads every value once, timed as `profile`); then LSH asks an LSH Ensemble which pairs to
count, while the baseline counts every pair of fields in every view. The two must find the
same candidates. Not run by the tests."""

from __future__ import annotations

import argparse
import math
import random
import string
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from datawell.ontology.candidate import CandidateOptions
from datawell.ontology.fuzzy import fuzzy_candidates
from datawell.ontology.overlap import Affinity, all_pairs, value_candidates
from datawell.ontology.profiles import FieldKey, FieldProfile, profile_values

T = TypeVar("T")
FIELDS_PER_DATASET = 5
EXTRA = ("label", "amount", "quantity", "year", "city", "code")
COUNTRIES = [
    ("France", "FR"),
    ("Germany", "DE"),
    ("Japan", "JP"),
    ("Brazil", "BR"),
    ("Spain", "ES"),
    ("Italy", "IT"),
    ("Canada", "CA"),
    ("Netherlands", "NL"),
    ("Sweden", "SE"),
    ("Mexico", "MX"),
    ("India", "IN"),
    ("Kenya", "KE"),
]


def prefix(index: int) -> str:
    return string.ascii_uppercase[index // 26] + string.ascii_uppercase[index % 26]


def dataset_columns(index: int, rows: int, rng: random.Random, cities: list[str]) -> dict[str, list[object]]:
    """One dataset's five columns, `rows` values each."""
    name = f"d{index:03d}"
    previous = f"d{index - 1:03d}" if index else "d999"
    own = prefix(index)
    back = prefix(index - 1) if index else "ZZ"
    refs = [rng.randint(1, rows) for _ in range(rows)]
    country = [rng.choice(COUNTRIES)[index % 2] for _ in range(rows)]
    extra = EXTRA[index % len(EXTRA)]
    if extra == "label":
        values: list[object] = ["".join(rng.choices(string.ascii_lowercase, k=10)) for _ in range(rows)]
    elif extra == "amount":
        values = [round(rng.uniform(0, 10_000), 2) for _ in range(rows)]
    elif extra == "quantity":
        values = [rng.randint(1, 20) for _ in range(rows)]
    elif extra == "year":
        values = [rng.randint(2000, 2024) for _ in range(rows)]
    elif extra == "city":
        pool = rng.sample(cities, 2000)
        values = [rng.choice(pool) for _ in range(rows)]
    else:
        values = [f"{rng.getrandbits(48):012x}" for _ in range(rows)]
    return {
        f"{name}_id": [f"{own}-{n:06d}" for n in range(1, rows + 1)],
        f"{previous}_ref": [f"{back.lower()}{n:06d}" for n in refs],
        f"{previous}_number": refs,
        "country": country,
        extra: values,
    }


KINDS = {"amount": "real", "quantity": "integer", "year": "integer"}


def namespace_profiles(fields: int, rows: int, seed: int = 1) -> tuple[list[FieldProfile], float]:
    """Profiles of a generated namespace, and the seconds spent profiling (not generating)."""
    rng = random.Random(seed)
    cities = ["".join(rng.choices(string.ascii_lowercase, k=rng.randint(5, 10))).title() for _ in range(5000)]
    profiles: list[FieldProfile] = []
    spent = 0.0
    for index in range(math.ceil(fields / FIELDS_PER_DATASET)):
        dataset = f"d{index:03d}"
        columns = dataset_columns(index, rows, rng, cities)
        for column, values in list(columns.items())[: fields - len(profiles)]:
            kind = "integer" if column.endswith("_number") else KINDS.get(column, "text")
            distinct = list(dict.fromkeys(values))
            started = time.perf_counter()
            profiles.append(
                profile_values(FieldKey("bench", dataset, column), dataset, kind, column, distinct, rows=rows)
            )
            spent += time.perf_counter() - started
    return profiles, spent


def timed(function: Callable[..., T], *args: Any, **kwargs: Any) -> tuple[T, float]:
    started = time.perf_counter()
    result = function(*args, **kwargs)
    return result, time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--fields", type=int, nargs="+", default=[10, 50, 200])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--baseline-limit", type=int, default=200, help="skip the baseline above this many fields")
    args = parser.parse_args()
    options = CandidateOptions()
    print(f"rows per dataset: {args.rows:,}; {FIELDS_PER_DATASET} fields per dataset")
    small, _ = namespace_profiles(10, 100)
    _, tuning = timed(value_candidates, small, options, Affinity())
    print(f"once per process: LSH Ensemble parameter tuning {tuning:.2f} s (not counted below)")
    header = f"{'fields':>6} {'profile s':>10} {'lsh s':>8} {'all-pairs s':>12} {'speed-up':>9} {'found':>6} {'same':>5} {'fuzzy s':>8}"
    print(header)
    results = []
    for fields in args.fields:
        profiles, profile_seconds = namespace_profiles(fields, args.rows)
        affinity = Affinity()
        lsh, lsh_seconds = timed(value_candidates, profiles, options, affinity)
        _, fuzzy_seconds = timed(fuzzy_candidates, profiles, options, {c.pair for c in lsh})
        if fields <= args.baseline_limit:
            baseline, baseline_seconds = timed(value_candidates, profiles, options, affinity, pairs=all_pairs)
            same = {(c.pair, c.match_type, c.hits) for c in lsh} == {(c.pair, c.match_type, c.hits) for c in baseline}
            speed = f"{baseline_seconds / lsh_seconds:8.1f}x"
            shown = f"{baseline_seconds:12.2f}"
        else:
            baseline_seconds, same, speed, shown = float("nan"), False, "      n/a", "     skipped"
        results.append((fields, profile_seconds, lsh_seconds, baseline_seconds))
        print(
            f"{fields:>6} {profile_seconds:>10.2f} {lsh_seconds:>8.2f} {shown} {speed} {len(lsh):>6} "
            f"{'yes' if same else 'NO':>5} {fuzzy_seconds:>8.2f}",
            flush=True,
        )
    if len(results) >= 2:
        (f0, p0, l0, b0), (f1, p1, l1, b1) = results[0], results[-1]
        scale = math.log(f1 / f0)
        print(
            f"growth exponent from {f0} to {f1} fields (1 = linear, 2 = quadratic): "
            f"profile {math.log(p1 / p0) / scale:.2f}; pairing: lsh {math.log(l1 / l0) / scale:.2f}, "
            f"all-pairs {math.log(b1 / b0) / scale:.2f}; total: lsh {math.log((p1 + l1) / (p0 + l0)) / scale:.2f}, "
            f"all-pairs {math.log((p1 + b1) / (p0 + b0)) / scale:.2f}"
        )


if __name__ == "__main__":
    main()
