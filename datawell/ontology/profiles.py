"""Field profiles: what candidate generation knows about one field of one dataset, read once
from the row store (one `GROUP BY` per field) and then compared only in memory."""

from __future__ import annotations

import asyncio
import random
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import sqlalchemy as sa

from datawell.ontology.values import (
    EMPTY,
    code_number,
    country_codes,
    exact_text,
    hashes,
    normalize,
)
from datawell.storage.datasets import DatasetRef
from datawell.storage.db import has_table
from datawell.storage.rows import RowStore

# Share of a field's distinct values that must be prefixed codes ("C-001") or countries for
# the field to be compared as codes or as countries.
CODED_SHARE = 0.9
COUNTRY_SHARE = 0.8
TEXT_SAMPLE = 2000  # distinct text values kept per field for fuzzy matching
SAMPLES = 5  # example values shown to the model
NUMERIC_TYPES = frozenset({"integer", "real"})


@dataclass(frozen=True)
class FieldKey:
    """One field of one dataset, as links name it: `namespace/dataset.field`."""

    namespace: str
    dataset: str
    field: str

    def __str__(self) -> str:
        return f"{self.namespace}/{self.dataset}.{self.field}"


@dataclass
class FieldProfile:
    key: FieldKey
    dataset_id: str
    kind: str  # integer, real, text, boolean, timestamp
    description: str
    rows: int  # non-null values
    distinct: int
    exact: np.ndarray  # hashes of the values' text
    normalized: np.ndarray  # hashes of their normalised forms
    numeric: bool  # every value is a whole number
    code_prefixes: tuple[str, ...] = ()  # the letter prefixes of a field of codes ("c" for C-001)
    code_numbers: np.ndarray = field(default_factory=lambda: EMPTY)  # hashes of the codes' numbers
    countries: np.ndarray = field(default_factory=lambda: EMPTY)  # hashes of alpha-2 codes
    texts: list[str] = field(default_factory=list)  # normalised text values for fuzzy matching
    samples: list[str] = field(default_factory=list)

    @property
    def uniqueness(self) -> float:
        return self.distinct / self.rows if self.rows else 0.0

    @property
    def coded(self) -> bool:
        return bool(self.code_prefixes)


def profile_values(
    key: FieldKey,
    dataset_id: str,
    kind: str,
    description: str,
    values: Sequence[Any],
    rows: int | None = None,
) -> FieldProfile:
    """The profile of a field from its distinct values (`rows`: how many non-null rows hold them)."""
    texts = [t for t in (exact_text(v) for v in values) if t is not None]
    exact = hashes(texts)
    if kind in NUMERIC_TYPES:
        forms = texts
        normalized = exact
    else:
        forms = [normalize(t) for t in texts]
        forms = [f for f in forms if f]
        normalized = hashes(forms)
    distinct = len(exact)
    profile = FieldProfile(
        key=key,
        dataset_id=dataset_id,
        kind=kind,
        description=description,
        rows=rows if rows is not None else distinct,
        distinct=distinct,
        exact=exact,
        normalized=normalized,
        numeric=bool(forms) and all(f.isdigit() or (f[:1] == "-" and f[1:].isdigit()) for f in forms),
        samples=texts[:SAMPLES],
    )
    if kind in NUMERIC_TYPES or not forms:
        return profile
    _add_codes(profile, forms)
    _add_countries(profile, forms)
    if not profile.coded and not profile.numeric:
        wordy = [f for f in dict.fromkeys(forms) if len(f) >= 4 and not f.isdigit()]
        if len(wordy) > TEXT_SAMPLE:
            wordy = random.Random(str(key)).sample(wordy, TEXT_SAMPLE)
        profile.texts = wordy
    return profile


def _add_codes(profile: FieldProfile, forms: list[str]) -> None:
    codes = [c for c in (code_number(f) for f in forms) if c is not None]
    if len(codes) < CODED_SHARE * len(forms):
        return
    prefixes = Counter(prefix for prefix, _ in codes)
    profile.code_prefixes = tuple(p for p, _ in prefixes.most_common(3))
    profile.code_numbers = hashes(number for _, number in codes)


def _add_countries(profile: FieldProfile, forms: list[str]) -> None:
    table = country_codes()
    found = [table[f] for f in forms if f in table]
    if len(found) >= COUNTRY_SHARE * len(forms):
        profile.countries = hashes(found)


async def read_profiles(rows: RowStore, datasets: Iterable[DatasetRef]) -> list[FieldProfile]:
    """Profiles of every field of the given datasets (datasets with no rows yet have none)."""
    profiles: list[FieldProfile] = []
    for dataset in datasets:
        table = rows.table(dataset.record)
        async with rows.engine.connect() as connection:
            if not await has_table(connection, table.name):
                continue
            for name, description in dataset.record.schema_definition.items():
                column = table.c[name]
                result = await connection.execute(
                    sa.select(column, sa.func.count()).where(column.is_not(None)).group_by(column)
                )
                pairs = result.all()
                if not pairs:
                    continue
                profiles.append(
                    await asyncio.to_thread(
                        profile_values,
                        FieldKey(dataset.namespace.name, dataset.name, name),
                        dataset.record.id,
                        dataset.record.field_types.get(name, "text"),
                        str(description),
                        [value for value, _ in pairs],
                        rows=sum(int(count) for _, count in pairs),
                    )
                )
    return profiles
