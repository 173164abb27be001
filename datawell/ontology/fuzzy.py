"""Fuzzy candidates (FuzzyMatch): text values are indexed by their one-deletion forms, so
fields holding spellings one edit apart meet without pairwise comparison; those pairs are
checked value by value with rapidfuzz for near-identical spellings."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from itertools import combinations

import numpy as np
from rapidfuzz import fuzz, process
from rapidfuzz.distance import OSA

from datawell.ontology.candidate import Candidate, CandidateOptions
from datawell.ontology.links import MatchType
from datawell.ontology.profiles import FieldKey, FieldProfile


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
    return Candidate.between(
        origin,
        destination,
        match_type=MatchType.FUZZY,
        hits=matched,
        score=round(share, 4),
        evidence=evidence,
        samples=tuple(examples),
    )
