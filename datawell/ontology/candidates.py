"""Link candidates computed from the data, never from a model.

- Value overlap: every field's normalised values are sketched once (MinHash) and indexed in a
  MinHash LSH Ensemble, which answers containment queries ("which fields hold most of this
  field's values?"), so a namespace of F fields costs F sketches and F queries instead of
  F*(F-1)/2 comparisons. Only the pairs the index returns are counted exactly: `hits` is the
  number of distinct values the two fields share (ExactMatch as written, NormalizedMatch
  after normalising case, accents, Unicode forms, punctuation and zero padding, a prefixed
  code against a plain number, or a country name against its ISO code).
- Fuzzy: text values are indexed by their one-deletion forms, so fields holding spellings one
  edit apart meet without pairwise comparison; those pairs are checked value by value with
  rapidfuzz for near-identical spellings (FuzzyMatch).
- GeoMatch (coordinate pairs read by `ontology.geo`) and SemanticMatch (field names and
  descriptions embedded by `ontology.semantic`); `find_candidates` runs every kind.

Whole numbers are weak evidence (any counter column contains 1..n, years overlap years), so an
overlap of plain numbers is kept only when the two fields' names are related (`Affinity`) and
one of them is a key (nearly one distinct value per row), as in a foreign key and its key."""

from __future__ import annotations

import asyncio
import re
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import cache
from itertools import combinations

import numpy as np
from datasketch import LeanMinHash, MinHash, MinHashLSHEnsemble
from rapidfuzz import fuzz, process
from rapidfuzz.distance import OSA

from datawell.ontology.geo import Coordinates, near_count, read_coordinates
from datawell.ontology.links import MatchType
from datawell.ontology.profiles import FieldKey, FieldProfile, read_profiles
from datawell.ontology.semantic import Embedder, FieldText, field_texts, similarities
from datawell.ontology.values import overlap
from datawell.storage.datasets import DatasetRef
from datawell.storage.rows import RowStore
from datawell.storage.vectors import VectorStore

# Name parts that say nothing about what a field holds.
GENERIC_TOKENS = frozenset({"id", "ids", "code", "key", "no", "nr", "num", "number", "ref", "the", "of"})
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

    @property
    def pair(self) -> frozenset[FieldKey]:
        return frozenset((self.origin, self.destination))


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
            _keep_best(best, candidate)
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
    origin, destination = _orient(a, b, share_a, share_b)
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
    return Candidate(
        origin=origin.key,
        destination=destination.key,
        origin_dataset_id=origin.dataset_id,
        destination_dataset_id=destination.dataset_id,
        match_type=match_type,
        hits=hits,
        score=round(score, 4),
        evidence=evidence,
        samples=tuple(origin.samples[:3]) + tuple(destination.samples[:3]),
    )


def _orient(a: FieldProfile, b: FieldProfile, share_a: float, share_b: float) -> tuple[FieldProfile, FieldProfile]:
    """Origin is the referencing side: the one whose values are contained in the other; on a
    tie, the less unique one (a foreign key points at a key)."""
    if abs(share_a - share_b) > 0.05:
        return (a, b) if share_a > share_b else (b, a)
    if abs(a.uniqueness - b.uniqueness) > 0.05:
        return (a, b) if a.uniqueness < b.uniqueness else (b, a)
    return (a, b) if str(a.key) <= str(b.key) else (b, a)


def _keep_best(best: dict[frozenset[FieldKey], Candidate], candidate: Candidate) -> None:
    current = best.get(candidate.pair)
    if current is None or (PRIORITY[candidate.match_type], -candidate.score) < (
        PRIORITY[current.match_type],
        -current.score,
    ):
        best[candidate.pair] = candidate


# ---- fuzzy


def deletions(text: str) -> Iterable[str]:
    """The text and every form of it with one character deleted: two values within one edit
    (a letter dropped, added, changed or swapped with its neighbour) share at least one."""
    yield text
    for i in range(len(text)):
        yield text[:i] + text[i + 1 :]


def fuzzy_candidates(
    profiles: Sequence[FieldProfile], options: CandidateOptions, taken: set[frozenset[FieldKey]]
) -> list[Candidate]:
    """Text fields whose values are near-identical spellings of each other's (typos, variants).
    Pairs are blocked without comparing fields pairwise: every text value is indexed under its
    one-deletion forms, and only fields that share at least `min_hits` forms are checked with
    rapidfuzz."""
    keys, owners = [], []
    for i, profile in enumerate(profiles):
        if len(profile.texts) >= options.min_distinct:
            forms = np.unique(np.fromiter((hash(f) for text in profile.texts for f in deletions(text)), dtype=np.int64))
            keys.append(forms)
            owners.append(np.full(len(forms), i, dtype=np.int64))
    if len(keys) < 2:
        return []
    key, owner = np.concatenate(keys), np.concatenate(owners)
    order = np.argsort(key, kind="stable")
    key, owner = key[order], owner[order]
    # Keep only forms that more than one field holds, then count field pairs per form.
    repeated = np.zeros(len(key), dtype=bool)
    same = key[1:] == key[:-1]
    repeated[1:] |= same
    repeated[:-1] |= same
    key, owner = key[repeated], owner[repeated]
    starts = np.flatnonzero(np.concatenate(([True], key[1:] != key[:-1])))
    shared: Counter[tuple[int, int]] = Counter()
    for group in np.split(owner, starts[1:]):
        shared.update(combinations(group.tolist(), 2))
    found: list[Candidate] = []
    for (a, b), count in shared.items():
        left, right = profiles[a], profiles[b]
        if count < options.min_hits or left.dataset_id == right.dataset_id:
            continue
        if frozenset((left.key, right.key)) in taken:
            continue
        candidate = _fuzzy(left, right, options)
        if candidate is not None:
            found.append(candidate)
    return found


def _fuzzy(a: FieldProfile, b: FieldProfile, options: CandidateOptions) -> Candidate | None:
    """Near-identical: a rapidfuzz ratio of at least `fuzzy_score` (long values), or one edit
    apart counting a swap of neighbours as one (short values, where one slip costs more)."""
    origin, destination = (a, b) if len(a.texts) <= len(b.texts) else (b, a)
    queries = origin.texts[: options.fuzzy_check]
    ratios = process.cdist(
        queries, destination.texts, scorer=fuzz.ratio, score_cutoff=options.fuzzy_score, dtype=np.uint8
    )
    edits = process.cdist(queries, destination.texts, scorer=OSA.distance, score_cutoff=1, dtype=np.uint8)
    close = (ratios > 0) | (edits <= 1)
    matched_rows = close.any(axis=1)
    identical_rows = (edits == 0).any(axis=1)
    matched, identical = int(matched_rows.sum()), int(identical_rows.sum())
    near = matched - identical
    share = matched / len(queries)
    if near < options.min_hits or share < options.fuzzy_share:
        return None
    examples = [
        f"{queries[row]} ~ {destination.texts[int(np.argmax(close[row]))]}"
        for row in np.flatnonzero(matched_rows & ~identical_rows)[:3]
    ]
    evidence = (
        f"{matched} of {len(queries)} checked values of {origin.key} have an identical or near-identical value "
        f"(one edit apart, or rapidfuzz ratio >= {options.fuzzy_score:g}) in {destination.key}, "
        f"{near} of them only nearly"
    )
    return Candidate(
        origin=origin.key,
        destination=destination.key,
        origin_dataset_id=origin.dataset_id,
        destination_dataset_id=destination.dataset_id,
        match_type=MatchType.FUZZY,
        hits=matched,
        score=round(share, 4),
        evidence=evidence,
        samples=tuple(examples),
    )


# ---- coordinates


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
            Candidate(
                origin=origin.key,
                destination=destination.key,
                origin_dataset_id=origin.dataset_id,
                destination_dataset_id=destination.dataset_id,
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


# ---- names and descriptions

# Kinds that can hold the same values: identifiers are often numbers in one dataset and text in another.
_COMPATIBLE = ({"integer", "text"}, {"real", "text"}, {"integer", "real"})


def semantic_candidates(
    fields: Sequence[FieldText],
    similarities: dict[frozenset[FieldKey], float],
    profiles: Sequence[FieldProfile],
    options: CandidateOptions,
) -> list[Candidate]:
    """Fields of different datasets whose names and descriptions mean the same; `hits` is their
    normalised value overlap (0 when their values differ or there are none yet)."""
    by_key = {f.key: f for f in fields}
    profiled = {p.key: p for p in profiles}
    found: list[Candidate] = []
    for pair, similarity in similarities.items():
        if similarity < options.semantic_similarity or len(pair) != 2:
            continue
        a, b = sorted((by_key[k] for k in pair), key=lambda f: str(f.key))
        if a.kind != b.kind and {a.kind, b.kind} not in _COMPATIBLE:
            continue
        pa, pb = profiled.get(a.key), profiled.get(b.key)
        hits = overlap(pa.normalized, pb.normalized) if pa is not None and pb is not None else 0
        if pa is not None and pb is not None:
            first, second = _orient(pa, pb, hits / max(len(pa.normalized), 1), hits / max(len(pb.normalized), 1))
            origin, destination = by_key[first.key], by_key[second.key]
        else:
            origin, destination = a, b
        found.append(
            Candidate(
                origin=origin.key,
                destination=destination.key,
                origin_dataset_id=origin.dataset_id,
                destination_dataset_id=destination.dataset_id,
                match_type=MatchType.SEMANTIC,
                hits=hits,
                score=similarity,
                evidence=(
                    f"names and descriptions are similar (cosine {similarity:.2f}): "
                    f"{origin.text!r} and {destination.text!r}; {hits} distinct values shared"
                ),
            )
        )
    return found


async def find_candidates(
    rows: RowStore,
    vectors: VectorStore,
    embedder: Embedder,
    datasets: Sequence[DatasetRef],
    *,
    focus: str | None = None,
    options: CandidateOptions | None = None,
) -> list[Candidate]:
    """Every candidate link between fields of the given datasets (one namespace), strongest
    evidence first; with `focus` (a dataset id), only links from or to that dataset."""
    options = options or CandidateOptions()
    texts = field_texts(datasets)
    similar = await similarities(embedder, vectors, texts, options.semantic_neighbours)
    affinity = Affinity(similar, options.semantic_similarity)
    profiles = await read_profiles(rows, datasets)
    # The counting is CPU work: off the event loop, so the service keeps answering meanwhile.
    values = await asyncio.to_thread(value_candidates, profiles, options, affinity)
    fuzzy = await asyncio.to_thread(fuzzy_candidates, profiles, options, {c.pair for c in values})
    geo = await asyncio.to_thread(geo_candidates, await read_coordinates(rows, datasets), options)
    semantic = semantic_candidates(texts, similar, profiles, options)
    found = merge(values, geo, fuzzy, semantic)
    if focus is not None:
        found = [c for c in found if focus in (c.origin_dataset_id, c.destination_dataset_id)]
    return found


def merge(*groups: Iterable[Candidate]) -> list[Candidate]:
    """One candidate per field pair (the strongest kind of evidence wins), best first."""
    best: dict[frozenset[FieldKey], Candidate] = {}
    for group in groups:
        for candidate in group:
            _keep_best(best, candidate)
    return sorted(best.values(), key=lambda c: (PRIORITY[c.match_type], -c.score, -c.hits, str(c.origin)))
