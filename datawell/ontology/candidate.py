"""A link candidate, the options that qualify one, and how candidates of several kinds are
merged: one per field pair, the strongest kind of evidence first."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol

from datawell.ontology.links import MatchType
from datawell.ontology.profiles import FieldKey, FieldProfile

PRIORITY = {
    MatchType.EXACT: 0,
    MatchType.NORMALIZED: 1,
    MatchType.GEO: 2,
    MatchType.FUZZY: 3,
    MatchType.SEMANTIC: 4,
}


@dataclass(frozen=True)
class CandidateOptions:
    containment: float = 0.5  # share of the smaller field's distinct values found in the other
    min_hits: int = 3  # fewest shared distinct values for a value match
    min_distinct: int = 3  # fields with fewer distinct values (flags, booleans) are not compared
    num_perm: int = 128  # MinHash size
    key_uniqueness: float = 0.9  # distinct values per row for a field to count as a key
    exact_share: float = 0.9  # an overlap is ExactMatch when exact hits are this share of normalised hits
    fuzzy_score: float = 90.0  # rapidfuzz ratio for near-identical values
    fuzzy_share: float = 0.5  # share of checked values that must match (identically or nearly)
    fuzzy_check: int = 500  # values checked per fuzzy pair
    semantic_similarity: float = 0.75  # cosine of field name/description embeddings
    semantic_neighbours: int = 5  # nearest fields looked up per field
    geo_distance_km: float = 1.0
    geo_share: float = 0.5  # share of one side's points with a point of the other side nearby


class Side(Protocol):
    """One end of a candidate: a field (profiled, embedded, or a coordinate pair) of a dataset."""

    @property
    def key(self) -> FieldKey: ...

    @property
    def dataset_id(self) -> str: ...


@dataclass(frozen=True)
class Candidate:
    origin: FieldKey  # the referencing side: the field whose values are found in the other
    destination: FieldKey
    origin_dataset_id: str
    destination_dataset_id: str
    match_type: MatchType
    hits: int
    score: float  # 0..1: the containment, share or similarity that qualified the pair
    evidence: str  # one sentence for the curator model
    samples: tuple[str, ...] = ()
    # The data alone shows a reference: every distinct text value of the origin is a value of
    # a destination key (one row per value). Selected without asking the curator model.
    evident: bool = False

    @property
    def pair(self) -> frozenset[FieldKey]:
        return frozenset((self.origin, self.destination))

    @classmethod
    def between(
        cls,
        origin: Side,
        destination: Side,
        match_type: MatchType,
        hits: int,
        score: float,
        evidence: str,
        samples: tuple[str, ...] = (),
        evident: bool = False,
    ) -> Candidate:
        return cls(
            origin=origin.key,
            destination=destination.key,
            origin_dataset_id=origin.dataset_id,
            destination_dataset_id=destination.dataset_id,
            match_type=match_type,
            hits=hits,
            score=score,
            evidence=evidence,
            samples=samples,
            evident=evident,
        )


def orient(a: FieldProfile, b: FieldProfile, share_a: float, share_b: float) -> tuple[FieldProfile, FieldProfile]:
    """Origin is the referencing side: the one whose values are contained in the other; on a
    tie, the less unique one (a foreign key points at a key)."""
    if abs(share_a - share_b) > 0.05:
        return (a, b) if share_a > share_b else (b, a)
    if abs(a.uniqueness - b.uniqueness) > 0.05:
        return (a, b) if a.uniqueness < b.uniqueness else (b, a)
    return (a, b) if str(a.key) <= str(b.key) else (b, a)


def keep_best(best: dict[frozenset[FieldKey], Candidate], candidate: Candidate) -> None:
    current = best.get(candidate.pair)
    if current is None or (PRIORITY[candidate.match_type], -candidate.score) < (
        PRIORITY[current.match_type],
        -current.score,
    ):
        best[candidate.pair] = candidate


def merge(*groups: Iterable[Candidate]) -> list[Candidate]:
    """One candidate per field pair (the strongest kind of evidence wins), best first."""
    best: dict[frozenset[FieldKey], Candidate] = {}
    for group in groups:
        for candidate in group:
            keep_best(best, candidate)
    return sorted(best.values(), key=lambda c: (PRIORITY[c.match_type], -c.score, -c.hits, str(c.origin)))
