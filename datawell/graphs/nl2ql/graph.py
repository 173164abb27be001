"""The nl2ql graph: recall → catalog → generate → check → (repair, bounded) → run → rows.

A proposed query (from the assistant's plan, or the verified example `recall` found for the
question) replaces the first generate: catalog → adopt → check."""

from __future__ import annotations

from functools import partial

from langgraph.graph import START, StateGraph
from langgraph.graph.state import CompiledStateGraph

from datawell.graphs.nl2ql import nodes
from datawell.graphs.nl2ql.deps import QueryDeps
from datawell.graphs.nl2ql.state import QueryContext, QueryInput, QueryState


def build_graph(deps: QueryDeps) -> CompiledStateGraph[QueryState, QueryContext, QueryInput, QueryState]:
    builder = StateGraph(QueryState, context_schema=QueryContext, input_schema=QueryInput)
    builder.add_node("recall", partial(nodes.recall, deps=deps))
    builder.add_node("catalog", partial(nodes.catalog, deps=deps))
    builder.add_node("adopt", nodes.adopt)
    builder.add_node("generate", partial(nodes.generate, deps=deps))
    builder.add_node("check", partial(nodes.check, deps=deps))
    builder.add_node("run", partial(nodes.run, deps=deps))
    builder.add_edge(START, "recall")
    builder.add_edge("recall", "catalog")
    builder.add_conditional_edges("catalog", nodes.after_catalog)
    builder.add_edge("adopt", "check")
    builder.add_conditional_edges("generate", nodes.after_generate)
    builder.add_conditional_edges("check", nodes.after_check)
    builder.add_conditional_edges("run", nodes.after_run)
    # Never checkpointed, even as an assistant step: the assistant keeps what it needs.
    return builder.compile(checkpointer=False, name="nl2ql")
