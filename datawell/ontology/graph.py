"""The ontology as a graph: one networkx multigraph per namespace, datasets as nodes and
active links as edges, used by the assistant's planner to propose joins.

Graphs are built from the database when asked. A process keeps the graphs it built together
with the namespace's link version stamp (`links.links_version`) and rebuilds as soon as the
stamp read from the database differs, so several API processes and workers agree without
sharing memory.

For the planner: `join_paths(session, namespace_id, "orders", "customers")` returns the ways
to join two datasets, shortest first, each a chain of `JoinStep`s (field pairs)."""

from __future__ import annotations

from dataclasses import dataclass
from itertools import islice, pairwise

import networkx as nx
from sqlalchemy.ext.asyncio import AsyncSession

from datawell.ontology.links import FieldRef, links_version
from datawell.storage.links import active_links

_cache: dict[str, tuple[tuple[int, int], nx.MultiGraph]] = {}


@dataclass(frozen=True)
class JoinStep:
    """One hop: `left_dataset.left_fields` matches `right_dataset.right_fields` (two fields each
    for a GeoMatch: latitude, longitude)."""

    left_dataset: str
    left_fields: tuple[str, ...]
    right_dataset: str
    right_fields: tuple[str, ...]
    match_type: str
    hits: int
    link_id: str

    def render(self) -> str:
        left = ", ".join(f"{self.left_dataset}.{f}" for f in self.left_fields)
        right = ", ".join(f"{self.right_dataset}.{f}" for f in self.right_fields)
        return f"{left} = {right} ({self.match_type}, {self.hits} shared values)"


@dataclass(frozen=True)
class JoinPath:
    steps: tuple[JoinStep, ...]

    @property
    def datasets(self) -> list[str]:
        return [self.steps[0].left_dataset, *(s.right_dataset for s in self.steps)] if self.steps else []

    def render(self) -> str:
        return " -> ".join(self.datasets) + ": " + "; ".join(s.render() for s in self.steps)


async def namespace_graph(session: AsyncSession, namespace_id: str) -> nx.MultiGraph:
    """The namespace's active links as a graph: nodes are dataset names, one edge per link
    with attributes `origin`, `destination` (FieldRef), `match_type`, `hits`, `score`, `link_id`.
    Treat it as read-only: it may be shared with other callers of this process."""
    stamp = await links_version(session, namespace_id)
    cached = _cache.get(namespace_id)
    if cached is not None and cached[0] == stamp:
        return cached[1]
    graph = nx.MultiGraph()
    for link in await active_links(session, namespace_id):
        origin, destination = FieldRef.parse(link.origin), FieldRef.parse(link.destination)
        graph.add_edge(
            origin.dataset,
            destination.dataset,
            key=link.id,
            origin=origin,
            destination=destination,
            match_type=link.match_type,
            hits=link.hits,
            score=link.score,
            link_id=link.id,
        )
    _cache[namespace_id] = (stamp, graph)
    return graph


def _steps(graph: nx.MultiGraph, path: list[str]) -> tuple[JoinStep, ...]:
    """The best link (most hits) for each hop of a path of dataset names."""
    steps = []
    for left, right in pairwise(path):
        edge = max(graph.get_edge_data(left, right).values(), key=lambda e: (e["hits"], e["score"]))
        near, far = (
            (edge["origin"], edge["destination"])
            if edge["origin"].dataset == left
            else (
                edge["destination"],
                edge["origin"],
            )
        )
        steps.append(JoinStep(left, near.fields, right, far.fields, edge["match_type"], edge["hits"], edge["link_id"]))
    return tuple(steps)


async def join_paths(
    session: AsyncSession, namespace_id: str, source: str, target: str, *, max_hops: int = 3, limit: int = 3
) -> list[JoinPath]:
    """Ways to join dataset `source` to dataset `target` through active links, fewest hops
    first, at most `limit` of them and none longer than `max_hops`. Empty when either dataset
    has no active link or no path connects them."""
    graph = await namespace_graph(session, namespace_id)
    if source == target or source not in graph or target not in graph or not nx.has_path(graph, source, target):
        return []
    simple = nx.Graph(graph)  # one edge per dataset pair for path enumeration; _steps picks the link
    paths = islice(nx.shortest_simple_paths(simple, source, target), limit)
    return [JoinPath(_steps(graph, path)) for path in paths if len(path) - 1 <= max_hops]
