"""Value-overlap candidates (ExactMatch, NormalizedMatch): every field's normalised values are
sketched once (MinHash) and indexed in a MinHash LSH Ensemble, which answers containment
queries ("which fields hold most of this field's values?"), so a namespace of F fields costs F
sketches and F queries instead of F*(F-1)/2 comparisons. Only the pairs the index returns are
counted exactly: `hits` is the number of distinct values the two fields share (ExactMatch as
written, NormalizedMatch after normalising case, accents, Unicode forms, punctuation and zero
padding, a prefixed code against a plain number, or a country name against its ISO code).

Whole numbers are weak evidence (any counter column contains 1..n, years overlap years), so an
overlap of plain numbers is kept only when the two fields' names are related (`Affinity`) and
one of them is a key (nearly one distinct value per row), as in a foreign key and its key."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import cache
from itertools import combinations

import numpy as np
from datasketch import LeanMinHash, MinHash, MinHashLSHEnsemble

from datawell.ontology.candidate import Candidate, CandidateOptions, keep_best, orient
from datawell.ontology.links import MatchType
from datawell.ontology.profiles import FieldKey, FieldProfile
from datawell.ontology.values import overlap

# Name parts that say nothing about what a field holds.
GENERIC_TOKENS = frozenset({"id", "ids", "code", "key", "no", "nr", "num", "number", "ref", "the", "of"})


def name_tokens(key: FieldKey) -> set[str]:
    """Content words of a field's name and of its dataset's name (plural s dropped)."""
    words = re.split(r"[^a-z0-9]+", re.sub(r"([a-z])([A-Z])", r"\1_\2", f"{key.dataset}_{key.field}").lower())
    return {w.removesuffix("s") if len(w) > 3 else w for w in words if w} - GENERIC_TOKENS


@dataclass
class Affinity:
    """Whether two fields' names are related: a content word in common (`orders.customer` and
    `customers.customer_id` share "customer"), or a cosine similarity of at least `similarity`
    between the embeddings of their names and descriptions."""

    similarities: dict[frozenset[FieldKey], float] = field(default_factory=dict)
    similarity: float = 0.75

    def related(self, a: FieldKey, b: FieldKey) -> bool:
        if name_tokens(a) & name_tokens(b):
            return True
        return self.similarities.get(frozenset((a, b)), 0.0) >= self.similarity


# ---- sketches


def _fmix64(values: np.ndarray) -> np.ndarray:
    """MurmurHash3's 64-bit finaliser: value hashes of small integers are the integers themselves."""
    values = values ^ (values >> np.uint64(33))
    values = values * np.uint64(0xFF51AFD7ED558CCD)
    values = values ^ (values >> np.uint64(33))
    values = values * np.uint64(0xC4CEB9FE1A85EC53)
    return values ^ (values >> np.uint64(33))


class Sketcher:
    """MinHash signatures by one-permutation hashing: each value hash falls into one of
    `num_perm` bins and each bin keeps its minimum, one pass over the values instead of one per
    permutation. Empty bins (small sets) borrow the value of the first non-empty bin in a
    fixed probe order, the same for every set ("optimal densification", Shrivastava 2017), so
    two signatures still agree in a bin with probability equal to the sets' Jaccard similarity
    and datasketch's LSH indexes can use them as MinHashes."""

    EMPTY = np.uint32(0xFFFFFFFF)

    def __init__(self, num_perm: int) -> None:
        self.num_perm = num_perm
        rng = np.random.default_rng(1)
        self.probes = np.array([rng.permutation(num_perm) for _ in range(num_perm)])
        self.permutations = MinHash(num_perm=num_perm, seed=1).permutations

    def sketch(self, hashes: np.ndarray) -> LeanMinHash:
        with np.errstate(over="ignore"):
            mixed = _fmix64(hashes.astype(np.uint64, copy=False))
        bins = (mixed % np.uint64(self.num_perm)).astype(np.intp)
        values = ((mixed // np.uint64(self.num_perm)) & np.uint64(0xFFFFFFFE)).astype(np.uint32)
        signature = np.full(self.num_perm, self.EMPTY, dtype=np.uint32)
        np.minimum.at(signature, bins, values)
        empty = signature == self.EMPTY
        if empty.all():
            raise ValueError("cannot sketch an empty set")
        if empty.any():
            probes = self.probes[empty]
            first = np.argmax(~empty[probes], axis=1)
            signature[empty] = signature[probes[np.arange(len(probes)), first]]
        minhash = MinHash(hashvalues=signature, permutations=self.permutations, scheme="affine32")
        return LeanMinHash(minhash)


Sketched = tuple[int, LeanMinHash, int]  # (profile index, signature, set size)


@cache
def _tuned_parameters(threshold: float, num_perm: int, m: int) -> tuple[np.ndarray, np.ndarray]:
    tuned = MinHashLSHEnsemble(threshold=threshold, num_perm=num_perm, num_part=1, m=m)
    return tuned.xqs, tuned.params


class _Ensemble(MinHashLSHEnsemble):
    """An LSH Ensemble whose parameters are tuned once per process: tuning integrates the
    false positive and negative rates numerically, about a second each time."""

    def _init_optimal_params(self, weights: tuple[float, float]) -> set[int]:
        self.xqs, self.params = _tuned_parameters(self.threshold, self.h, self.m)
        return {int(r) for _, r in self.params}


def containment_pairs(
    indexed: Sequence[Sketched], queries: Sequence[Sketched], threshold: float
) -> set[tuple[int, int]]:
    """(query, indexed) pairs whose containment |Q ∩ X| / |Q| probably reaches `threshold`:
    an LSH Ensemble over the indexed sets, queried with each query set."""
    if not indexed or not queries:
        return set()
    # A lower index threshold than the verified one: LSH misses some pairs just above it.
    ensemble = _Ensemble(threshold=max(threshold - 0.2, 0.1), num_perm=len(indexed[0][1]), num_part=8)
    ensemble.index(list(indexed))
    pairs: set[tuple[int, int]] = set()
    for q, sketch, size in queries:
        pairs.update((q, x) for x in ensemble.query(sketch, size) if x != q)
    return pairs


# ---- value overlap

PairSource = Callable[[Sequence[FieldProfile], CandidateOptions], Iterable[tuple[int, int, str]]]


def lsh_pairs(profiles: Sequence[FieldProfile], options: CandidateOptions) -> set[tuple[int, int, str]]:
    """Field pairs worth counting, from MinHash LSH Ensemble containment queries. Views:
    `normalized` (every field), `code` (a prefixed code's number against plain numbers) and
    `country` (country names and codes as ISO alpha-2)."""
    sketcher = Sketcher(options.num_perm)

    def sketched(view: Callable[[FieldProfile], np.ndarray], keep: Callable[[FieldProfile], bool]) -> list[Sketched]:
        return [
            (i, sketcher.sketch(view(p)), len(view(p)))
            for i, p in enumerate(profiles)
            if keep(p) and len(view(p)) >= options.min_distinct
        ]

    normalized = sketched(lambda p: p.normalized, lambda p: True)
    numbers = [entry for entry in normalized if profiles[entry[0]].numeric]
    codes = sketched(lambda p: p.code_numbers, lambda p: p.coded)
    countries = sketched(lambda p: p.countries, lambda p: True)
    threshold = options.containment
    found = {(a, b, "normalized") for a, b in containment_pairs(normalized, normalized, threshold)}
    found |= {(a, b, "code") for a, b in containment_pairs(numbers, codes, threshold)}
    found |= {(a, b, "code") for a, b in containment_pairs(codes, numbers, threshold)}
    found |= {(a, b, "country") for a, b in containment_pairs(countries, countries, threshold)}
    return found


def all_pairs(profiles: Sequence[FieldProfile], options: CandidateOptions) -> list[tuple[int, int, str]]:
    """Every pair of fields in every view: the exhaustive baseline `bench/curate.py` compares against."""
    pairs = []
    for a, b in combinations(range(len(profiles)), 2):
        pairs.append((a, b, "normalized"))
        if profiles[a].coded != profiles[b].coded:
            pairs.append((a, b, "code"))
        if len(profiles[a].countries) and len(profiles[b].countries):
            pairs.append((a, b, "country"))
    return pairs


def value_candidates(
    profiles: Sequence[FieldProfile],
    options: CandidateOptions,
    affinity: Affinity,
    pairs: PairSource = lsh_pairs,
) -> list[Candidate]:
    """Value-overlap candidates between fields of different datasets, counted exactly."""
    best: dict[frozenset[FieldKey], Candidate] = {}
    seen: set[tuple[int, int, str]] = set()
    for a, b, view in pairs(profiles, options):
        a, b = min(a, b), max(a, b)
        if (a, b, view) in seen:
            continue
        seen.add((a, b, view))
        left, right = profiles[a], profiles[b]
        if left.dataset_id == right.dataset_id:
            continue
        candidate = _count(left, right, view, options, affinity)
        if candidate is not None:
            keep_best(best, candidate)
    return list(best.values())


def _count(
    a: FieldProfile, b: FieldProfile, view: str, options: CandidateOptions, affinity: Affinity
) -> Candidate | None:
    if min(a.distinct, b.distinct) < options.min_distinct:
        return None
    if view == "normalized":
        left, right = a.normalized, b.normalized
        weak = a.numeric and b.numeric
        how = "after normalising case, accents, punctuation and zero padding"
    elif view == "code":
        if a.coded == b.coded or not (a.numeric or b.numeric):
            return None
        left, right = (a.code_numbers, b.normalized) if a.coded else (a.normalized, b.code_numbers)
        weak = True
        how = "comparing the number inside the codes with plain numbers"
    else:
        left, right = a.countries, b.countries
        weak = False
        how = "reading country names and codes as ISO 3166 countries"
    # Decided before counting: plain-number columns from one range all overlap each other.
    if weak and not (affinity.related(a.key, b.key) and max(a.uniqueness, b.uniqueness) >= options.key_uniqueness):
        return None
    hits = overlap(left, right)
    if hits < options.min_hits:
        return None
    share_a, share_b = hits / len(left), hits / len(right)
    score = max(share_a, share_b)
    if score < options.containment:
        return None
    origin, destination = orient(a, b, share_a, share_b)
    match_type = MatchType.NORMALIZED
    if view == "normalized":
        exact = overlap(a.exact, b.exact)
        if exact >= options.exact_share * hits:
            match_type, hits, how = MatchType.EXACT, exact, "as written"
    contained = max(share_a, share_b)
    evidence = (
        f"{hits} distinct values shared {how}: {contained:.0%} of {origin.key}'s values "
        f"({origin.distinct} distinct) appear in {destination.key} ({destination.distinct} distinct, "
        f"{destination.uniqueness:.0%} unique per row)"
    )
    return Candidate.between(
        origin,
        destination,
        match_type=match_type,
        hits=hits,
        score=round(score, 4),
        evidence=evidence,
        samples=tuple(origin.samples[:3]) + tuple(destination.samples[:3]),
        # Plain numbers are never evident: counters of one range contain each other by chance.
        evident=not weak and contained == 1.0 and destination.uniqueness >= options.key_uniqueness,
    )
