"""Runs: the recorded runs the user may see (theirs, and those in namespaces they own), with
filters, and one run's timeline: its stages, model calls (tokens, seconds; prompts and
replies for the user who asked) and queries, drawn against the run's own clock, and the
rewrite rules that changed a query, each as a before/after diff. Both pages
read the API (`GET /api/v1/runs`, `GET /api/v1/runs/{id}`)."""

from __future__ import annotations

import difflib
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


@dataclass(frozen=True)
class Rewrite:
    """A rewrite rule that changed a query (issue 47), with the stage it ran in and the query
    before and after it as runs of words kept, taken out ("del") and put in ("ins")."""

    rule: str
    stage: str
    reason: str
    before: list[tuple[str, str]]
    after: list[tuple[str, str]]


def word_diff(before: str, after: str) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """The two queries as (kind, text) runs: "same" in both, "del" only before, "ins" only after."""
    old, new = before.split(), after.split()
    left: list[tuple[str, str]] = []
    right: list[tuple[str, str]] = []
    for tag, i, j, k, m in difflib.SequenceMatcher(a=old, b=new, autojunk=False).get_opcodes():
        if tag == "equal":
            left.append(("same", " ".join(old[i:j])))
            right.append(("same", " ".join(new[k:m])))
            continue
        if i < j:
            left.append(("del", " ".join(old[i:j])))
        if k < m:
            right.append(("ins", " ".join(new[k:m])))
    return left, right


def rewrites(run: dict[str, Any]) -> list[Rewrite]:
    stages = run["stages"]
    found = []
    for change in run.get("rewrites", []):
        stage = "" if change["parent"] is None else stages[change["parent"]]["name"]
        before, after = word_diff(change["before"], change["after"])
        found.append(Rewrite(change["rule"], stage, change["reason"], before, after))
    return found


@signed_in
async def run_page(request: Request, session: Session) -> Response:
    run = await api(request, session).get(f"/runs/{request.path_params['runId']}")
    tokens = {kind: sum(c[f"{kind}Tokens"] for c in run["modelCalls"]) for kind in ("prompt", "cached", "output")}
    context = {"run": run, "bars": timeline(run), "tokens": tokens, "own": run["username"] == session.user.username}
    context["rewrites"] = rewrites(run)
    return render(request, "run.html", context, session=session)
