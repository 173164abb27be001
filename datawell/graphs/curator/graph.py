"""The curator graph: find -> select -> store (select is skipped when nothing was found).
It emits CandidatesFound, then LinksCurated."""

from __future__ import annotations

from functools import partial

from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph

from datawell.graphs.curator import nodes
from datawell.graphs.curator.state import CuratorContext, CuratorDeps, CuratorState


def build_graph(deps: CuratorDeps) -> CompiledStateGraph[CuratorState, CuratorContext, CuratorState, CuratorState]:
    graph = StateGraph(CuratorState, context_schema=CuratorContext)
    graph.add_node("find", partial(nodes.find, deps=deps))
    graph.add_node("select", partial(nodes.select, deps=deps))
    graph.add_node("store", partial(nodes.store, deps=deps))
    graph.add_edge(START, "find")
    graph.add_conditional_edges("find", nodes.after_find)
    graph.add_edge("select", "store")
    graph.add_edge("store", END)
    return graph.compile(checkpointer=False, name="curator")
