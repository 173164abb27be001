"""The curator graph: find -> select -> store (select is skipped when nothing was found)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Any

from langgraph.graph import END, START, StateGraph

from datawell.graphs.curator import nodes
from datawell.graphs.curator.state import CuratorDeps, CuratorState, Selection


def build_graph(deps: CuratorDeps) -> Any:
    graph = StateGraph(CuratorState)
    graph.add_node("find", partial(nodes.find, deps=deps))
    graph.add_node("select", partial(nodes.select, deps=deps))
    graph.add_node("store", partial(nodes.store, deps=deps))
    graph.add_edge(START, "find")
    graph.add_conditional_edges("find", nodes.after_find)
    graph.add_edge("select", "store")
    graph.add_edge("store", END)
    return graph.compile(name="curator")


@dataclass(frozen=True)
class Curation:
    datasets_processed: int
    selected: list[Selection]
    candidates: int  # how many candidates the data gave


async def curate(deps: CuratorDeps, state: CuratorState) -> Curation:
    """Run the curator once for one request."""
    result = await build_graph(deps).ainvoke(state)
    return Curation(
        datasets_processed=len(state.curated),
        selected=list(result["selected"]),
        candidates=len(result["candidates"]),
    )
