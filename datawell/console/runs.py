"""Runs: the recorded runs the user may see (theirs, and those in namespaces they own), with
filters, and one run's timeline: its stages, model calls (tokens, seconds; prompts and
replies for the user who asked) and queries, drawn against the run's own clock. Both pages
read the API (`GET /api/v1/runs`, `GET /api/v1/runs/{id}`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from datawell.console.pages import api, render, signed_in
from datawell.console.session import Session

FILTERS = ("user", "namespaceId", "outcome", "order")


@signed_in
async def runs_page(request: Request, session: Session) -> Response:
    chosen = {name: request.query_params.get(name) or None for name in FILTERS}
    listed = await api(request, session).get("/runs", **chosen)
    return render(request, "runs.html", {"runs": listed["data"], "chosen": chosen}, session=session)


@dataclass(frozen=True)
class Bar:
    """One line of the timeline: what ran, where it sits (percent of the run) and its details."""

    kind: str  # stage, model or query
    label: str
    depth: int
    left: float
    width: float
    seconds: float
    detail: str
    error: str | None
    call: dict[str, Any] | None = None  # a model call, for its prompt


def timeline(run: dict[str, Any]) -> list[Bar]:
    """Stages in order, each followed by the model calls and queries it made."""
    total = max(run["seconds"], 1e-6)
    depths: list[int] = []
    for stage in run["stages"]:
        depths.append(0 if stage["parent"] is None else depths[stage["parent"]] + 1)

    def place(item: dict[str, Any]) -> tuple[float, float]:
        left = min(100 * item["start"] / total, 100.0)
        return left, max(min(100 * item["seconds"] / total, 100 - left), 0.3)

    children: dict[int | None, list[Bar]] = {}
    for call in run["modelCalls"]:
        left, width = place(call)
        tokens = f"{call['promptTokens']} prompt ({call['cachedTokens']} cached), {call['outputTokens']} output tokens"
        depth = 0 if call["parent"] is None else depths[call["parent"]] + 1
        bar = Bar(
            "model",
            f"{call['stage']}: {call['model']}",
            depth,
            left,
            width,
            call["seconds"],
            tokens,
            call["error"],
            call,
        )
        children.setdefault(call["parent"], []).append(bar)
    for query in run["queries"]:
        left, width = place(query)
        rows = "" if query["rows"] is None else f"{query['rows']} rows" + (" (cut)" if query["truncated"] else "")
        depth = 0 if query["parent"] is None else depths[query["parent"]] + 1
        bar = Bar("query", query["text"], depth, left, width, query["seconds"], rows, query["error"])
        children.setdefault(query["parent"], []).append(bar)
    bars: list[Bar] = []
    for index, stage in enumerate(run["stages"]):
        left, width = place(stage)
        bars.append(Bar("stage", stage["name"], depths[index], left, width, stage["seconds"], "", stage["error"]))
        bars.extend(sorted(children.get(index, []), key=lambda b: b.left))
    bars.extend(children.get(None, []))
    return bars


@signed_in
async def run_page(request: Request, session: Session) -> Response:
    run = await api(request, session).get(f"/runs/{request.path_params['runId']}")
    tokens = {kind: sum(c[f"{kind}Tokens"] for c in run["modelCalls"]) for kind in ("prompt", "cached", "output")}
    context = {"run": run, "bars": timeline(run), "tokens": tokens, "own": run["username"] == session.user.username}
    return render(request, "run.html", context, session=session)
