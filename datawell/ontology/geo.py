"""Coordinate fields: a dataset's latitude/longitude pair (`lat`+`lon`, `pickup_latitude`+
`pickup_longitude`, ...) linked to another dataset's pair when most points of one side have a
point of the other within a distance (GeoMatch). The link names both fields, latitude first:
`namespace/dataset.lat,lon`."""

from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import combinations, product

import numpy as np
import sqlalchemy as sa

from datawell.ontology.candidate import Candidate, CandidateOptions
from datawell.ontology.links import MatchType
from datawell.ontology.profiles import FieldKey
from datawell.storage.datasets import DatasetRef
from datawell.storage.db import has_table
from datawell.storage.rows import RowStore

EARTH_RADIUS_KM = 6371.0088
MAX_POINTS = 200_000  # distinct points read per pair of fields
VALID_SHARE = 0.95  # share of values that must be in range for a pair to count as coordinates
_LAT = re.compile(r"(?:^|_)(lat|latitude)(?:$|_)")
_LON = re.compile(r"(?:^|_)(lon|lng|long|longitude)(?:$|_)")


@dataclass(frozen=True)
class Coordinates:
    key: FieldKey  # field is "lat,lon"
    dataset_id: str
    points: np.ndarray  # (n, 2) distinct latitude, longitude in degrees


def coordinate_fields(fields: Iterable[str]) -> list[tuple[str, str]]:
    """(latitude field, longitude field) pairs named alike apart from the lat/lon word."""
    lats: dict[str, str] = {}
    lons: dict[str, str] = {}
    for name in fields:
        lower = name.lower()
        if (m := _LAT.search(lower)) is not None:
            lats.setdefault(lower[: m.start(1)] + "#" + lower[m.end(1) :], name)
        elif (m := _LON.search(lower)) is not None:
            lons.setdefault(lower[: m.start(1)] + "#" + lower[m.end(1) :], name)
    return [(lats[stem], lons[stem]) for stem in sorted(lats.keys() & lons.keys())]


def as_points(pairs: Iterable[tuple[object, object]]) -> np.ndarray | None:
    """Distinct (lat, lon) points, or None when the values are not mostly valid coordinates."""
    points: list[tuple[float, float]] = []
    total = 0
    for lat, lon in pairs:
        total += 1
        try:
            y, x = float(lat), float(lon)  # type: ignore[arg-type]
        except (TypeError, ValueError):
            continue
        if -90.0 <= y <= 90.0 and -180.0 <= x <= 180.0:
            points.append((y, x))
    if not points or len(points) < VALID_SHARE * total:
        return None
    return np.unique(np.array(points, dtype=np.float64), axis=0)


async def read_coordinates(rows: RowStore, datasets: Iterable[DatasetRef]) -> list[Coordinates]:
    found: list[Coordinates] = []
    for dataset in datasets:
        pairs = coordinate_fields(dataset.record.schema_definition)
        if not pairs:
            continue
        table = rows.table(dataset.record)
        async with rows.engine.connect() as connection:
            if not await has_table(connection, table.name):
                continue
            for lat, lon in pairs:
                result = await connection.execute(
                    sa.select(table.c[lat], table.c[lon])
                    .where(table.c[lat].is_not(None), table.c[lon].is_not(None))
                    .distinct()
                    .limit(MAX_POINTS)
                )
                points = as_points(result.tuples())
                if points is not None:
                    key = FieldKey(dataset.namespace.name, dataset.name, f"{lat},{lon}")
                    found.append(Coordinates(key, dataset.record.id, points))
    return found


def _unit_vectors(points: np.ndarray) -> np.ndarray:
    lat, lon = np.radians(points[:, 0]), np.radians(points[:, 1])
    return np.column_stack((np.cos(lat) * np.cos(lon), np.cos(lat) * np.sin(lon), np.sin(lat)))


def near_count(a: np.ndarray, b: np.ndarray, distance_km: float) -> int:
    """How many points of `a` have a point of `b` within `distance_km` (great-circle): points
    become unit vectors, `b` is bucketed in a 3-D grid of the chord length, and each point of
    `a` looks in its 27 neighbouring cells."""
    chord = 2.0 * math.sin(min(distance_km / EARTH_RADIUS_KM, math.pi) / 2.0)
    va, vb = _unit_vectors(a), _unit_vectors(b)
    grid: dict[tuple[int, int, int], list[int]] = defaultdict(list)
    for index, cell in enumerate(map(tuple, np.floor(vb / chord).astype(np.int64).tolist())):
        grid[cell].append(index)  # type: ignore[index]
    offsets = list(product((-1, 0, 1), repeat=3))
    limit = chord * chord
    count = 0
    for point, cell in zip(va, np.floor(va / chord).astype(np.int64).tolist(), strict=True):
        x, y, z = cell
        nearby = [i for dx, dy, dz in offsets for i in grid.get((x + dx, y + dy, z + dz), ())]
        if nearby and float(((vb[nearby] - point) ** 2).sum(axis=1).min()) <= limit:
            count += 1
    return count


def geo_candidates(coordinates: Sequence[Coordinates], options: CandidateOptions) -> list[Candidate]:
    found: list[Candidate] = []
    for a, b in combinations(coordinates, 2):
        if a.dataset_id == b.dataset_id:
            continue
        near_a = near_count(a.points, b.points, options.geo_distance_km)
        near_b = near_count(b.points, a.points, options.geo_distance_km)
        share_a, share_b = near_a / len(a.points), near_b / len(b.points)
        if max(share_a, share_b) < options.geo_share or max(near_a, near_b) < options.min_hits:
            continue
        origin, destination, hits, share = (a, b, near_a, share_a) if share_a >= share_b else (b, a, near_b, share_b)
        found.append(
            Candidate.between(
                origin,
                destination,
                match_type=MatchType.GEO,
                hits=hits,
                score=round(share, 4),
                evidence=(
                    f"{hits} of {len(origin.points)} distinct points of {origin.key} lie within "
                    f"{options.geo_distance_km:g} km of a point of {destination.key}"
                ),
                samples=tuple(f"({y:.5f}, {x:.5f})" for y, x in origin.points[:2].tolist()),
            )
        )
    return found
