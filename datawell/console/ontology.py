"""The ontology of a namespace: its links as a picture (an SVG drawn here, datasets on a circle,
links as labelled edges) and as Active / Suggested lists; curating, activating, suspending and
deleting links."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from starlette.requests import Request
from starlette.responses import Response

from datawell.console.pages import api, form, redirect, render, signed_in
from datawell.console.session import Session

WIDTH, HEIGHT = 760, 440
NODE_W, NODE_H = 150, 36
ACTIONS = {"activate": ("PATCH", {"status": "Active"}), "suspend": ("PATCH", {"status": "Suggested"})}


@dataclass(frozen=True)
class Node:
    name: str
    x: float
    y: float


@dataclass(frozen=True)
class Edge:
    source: Node
    target: Node
    label: str
    detail: str
    active: bool
    bend: float  # offset of the curve's middle, so several links between two datasets stay apart

    @property
    def path(self) -> str:
        mx, my = (self.source.x + self.target.x) / 2, (self.source.y + self.target.y) / 2
        dx, dy = self.target.x - self.source.x, self.target.y - self.source.y
        length = math.hypot(dx, dy) or 1.0
        cx, cy = mx - dy / length * self.bend, my + dx / length * self.bend
        return f"M{self.source.x:.0f},{self.source.y:.0f} Q{cx:.0f},{cy:.0f} {self.target.x:.0f},{self.target.y:.0f}"

    @property
    def label_at(self) -> tuple[float, float]:
        mx, my = (self.source.x + self.target.x) / 2, (self.source.y + self.target.y) / 2
        dx, dy = self.target.x - self.source.x, self.target.y - self.source.y
        length = math.hypot(dx, dy) or 1.0
        return mx - dy / length * self.bend / 2, my + dx / length * self.bend / 2


def split_field(reference: str) -> tuple[str, str]:
    """`namespace/dataset.field` -> (dataset, field)."""
    _, _, rest = reference.partition("/")
    dataset, _, field = rest.partition(".")
    return dataset, field


def layout(datasets: list[str], links: list[dict[str, Any]]) -> tuple[list[Node], list[Edge]]:
    radius_x, radius_y = WIDTH / 2 - NODE_W / 2 - 10, HEIGHT / 2 - NODE_H / 2 - 10
    count = max(len(datasets), 1)
    nodes = {
        name: Node(
            name,
            WIDTH / 2 + (radius_x * math.cos(2 * math.pi * i / count - math.pi / 2) if count > 1 else 0),
            HEIGHT / 2 + (radius_y * math.sin(2 * math.pi * i / count - math.pi / 2) if count > 1 else 0),
        )
        for i, name in enumerate(datasets)
    }
    edges = []
    seen: dict[frozenset[str], int] = {}
    for link in links:
        (a, field_a), (b, field_b) = split_field(link["origin"]), split_field(link["destination"])
        if a not in nodes or b not in nodes:
            continue
        pair = frozenset((a, b))
        nth = seen.get(pair, 0)
        seen[pair] = nth + 1
        bend = 0.0 if nth == 0 else 40.0 * ((nth + 1) // 2) * (1 if nth % 2 else -1)
        edges.append(
            Edge(
                nodes[a],
                nodes[b],
                f"{field_a} ↔ {field_b}",
                f"{link['matchType']} · {link['hits']} hits",
                link["status"] == "Active",
                bend,
            )
        )
    return list(nodes.values()), edges


def _base(owner: str, namespace: str) -> str:
    return f"{quote(owner, safe='')}/{quote(namespace, safe='')}"


@signed_in
async def ontology_page(request: Request, session: Session) -> Response:
    owner, namespace = request.path_params["owner"], request.path_params["namespace"]
    calls = api(request, session)
    datasets = [d["datasetName"] for d in (await calls.get(f"/datasets/{_base(owner, namespace)}"))["data"]]
    links = (await calls.get(f"/ontology/{_base(owner, namespace)}/links"))["data"]
    nodes, edges = layout(datasets, links)
    context = {
        "owner": owner,
        "namespace": namespace,
        "base": _base(owner, namespace),
        "datasets": datasets,
        "active": [link for link in links if link["status"] == "Active"],
        "suggested": [link for link in links if link["status"] != "Active"],
        "nodes": nodes,
        "edges": edges,
        "size": (WIDTH, HEIGHT, NODE_W, NODE_H),
    }
    return render(request, "ontology.html", context, session=session)


@signed_in
async def curate(request: Request, session: Session) -> Response:
    owner, namespace = request.path_params["owner"], request.path_params["namespace"]
    values = await form(request)
    body: dict[str, Any] = {"namespace": f"{owner}/{namespace}", "activate": values.get("activate") == "on"}
    if values.get("dataset"):
        body["dataset"] = values["dataset"]
    done = await api(request, session).post("/ontology/curate-links", body)
    kept = "activated" if body["activate"] else "suggested"
    notice = f"Curated {done['datasetsProcessed']} datasets: {done['totalSelected']} links {kept}."
    return redirect(f"/ontology/{_base(owner, namespace)}", notice)


@signed_in
async def change_link(request: Request, session: Session) -> Response:
    link_id = quote(request.path_params["linkId"], safe="")
    values = await form(request)
    action = values.get("action", "")
    calls = api(request, session)
    if action == "delete":
        await calls.call("DELETE", f"/ontology/links/{link_id}")
        notice = "Link deleted."
    elif action in ACTIONS:
        method, body = ACTIONS[action]
        link = await calls.call(method, f"/ontology/links/{link_id}", json=body)
        notice = f"Link {link['origin']} ↔ {link['destination']} is now {link['status']}."
    else:
        notice = "Nothing changed: unknown action."
    back = values.get("back", "/")
    return redirect(back if back.startswith("/ontology/") else "/", notice)
