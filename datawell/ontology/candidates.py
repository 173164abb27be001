"""Link candidates computed from the data, never from a model: `find_candidates` runs every
kind over the datasets of one namespace and merges them (`ontology.candidate.merge`).

- Value overlap (ExactMatch, NormalizedMatch): `ontology.overlap`, MinHash LSH containment.
- Near-identical spellings (FuzzyMatch): `ontology.fuzzy`.
- Coordinate pairs within a distance (GeoMatch): `ontology.geo`.
- Field names and descriptions that mean the same (SemanticMatch): `ontology.semantic`."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from datawell.ontology.candidate import Candidate, CandidateOptions, merge
from datawell.ontology.fuzzy import fuzzy_candidates
from datawell.ontology.geo import geo_candidates, read_coordinates
from datawell.ontology.overlap import Affinity, value_candidates
from datawell.ontology.profiles import read_profiles
from datawell.ontology.semantic import Embedder, field_texts, semantic_candidates, similarities
from datawell.storage.datasets import DatasetRef
from datawell.storage.rows import RowStore
from datawell.storage.vectors import VectorStore


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
