"""Field names and descriptions as vectors: each field's text is embedded and stored in the
vector store's `fields` collection (payload: namespace, dataset, field), and each field's
nearest fields of other datasets of the same namespace are looked up there."""

from __future__ import annotations

import re
import uuid
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol

from datawell.ontology.candidate import Candidate, CandidateOptions, orient
from datawell.ontology.links import MatchType
from datawell.ontology.profiles import FieldKey, FieldProfile
from datawell.ontology.values import overlap
from datawell.storage.datasets import DatasetRef
from datawell.storage.vectors import FIELDS, Point, VectorStore

POINT_NAMESPACE = uuid.UUID("6f1c2a4e-93d1-4b4e-9a51-0d6f0c7d2b11")


class Embedder(Protocol):
    """What the ontology needs of an embedder (`datawell.llm.embeddings` has them)."""

    async def embed(self, texts: list[str]) -> list[list[float]]: ...


@dataclass(frozen=True)
class FieldText:
    key: FieldKey
    dataset_id: str
    namespace_id: str
    kind: str
    text: str  # what is embedded: the name in words and the description


def words(name: str) -> str:
    """`customerID` and `customer_id` both read "customer id"."""
    return " ".join(re.split(r"[^A-Za-z0-9]+", re.sub(r"([a-z])([A-Z])", r"\1 \2", name))).strip().lower()


def field_texts(datasets: Iterable[DatasetRef]) -> list[FieldText]:
    texts = []
    for dataset in datasets:
        for name, description in dataset.record.schema_definition.items():
            texts.append(
                FieldText(
                    key=FieldKey(dataset.namespace.name, dataset.name, name),
                    dataset_id=dataset.record.id,
                    namespace_id=dataset.namespace.id,
                    kind=dataset.record.field_types.get(name, "text"),
                    text=f"{words(name)}: {description}".strip(),
                )
            )
    return texts


def point_id(dataset_id: str, field: str) -> str:
    return str(uuid.uuid5(POINT_NAMESPACE, f"{dataset_id}/{field}"))


async def similarities(
    embedder: Embedder, vectors: VectorStore, fields: Sequence[FieldText], neighbours: int
) -> dict[frozenset[FieldKey], float]:
    """Cosine similarity of each field to its nearest fields in other datasets of its namespace."""
    if not fields:
        return {}
    embedded = await embedder.embed([f.text for f in fields])
    by_dataset: dict[str, list[Point]] = defaultdict(list)
    for text, vector in zip(fields, embedded, strict=True):
        payload = {
            "namespace_id": text.namespace_id,
            "dataset": text.key.dataset,
            "field": text.key.field,
            "text": text.text,
        }
        by_dataset[text.dataset_id].append(Point(point_id(text.dataset_id, text.key.field), vector, payload))
    for dataset_id, points in by_dataset.items():
        await vectors.upsert(FIELDS, dataset_id, points)
    known = {(f.dataset_id, f.key.field): f.key for f in fields}
    found: dict[frozenset[FieldKey], float] = {}
    for text, vector in zip(fields, embedded, strict=True):
        hits = await vectors.nearest(
            FIELDS,
            vector,
            neighbours,
            match={"namespace_id": text.namespace_id},
            exclude={"dataset_id": text.dataset_id},
        )
        for hit in hits:
            other = known.get((str(hit.payload.get("dataset_id")), str(hit.payload.get("field"))))
            if other is not None:
                pair = frozenset((text.key, other))
                found[pair] = max(found.get(pair, 0.0), round(hit.score, 4))
    return found


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
            first, second = orient(pa, pb, hits / max(len(pa.normalized), 1), hits / max(len(pb.normalized), 1))
            origin, destination = by_key[first.key], by_key[second.key]
        else:
            origin, destination = a, b
        found.append(
            Candidate.between(
                origin,
                destination,
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
