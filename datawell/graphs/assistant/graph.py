"""The assistant graph in one line: plan → step (the plan's query as one nl2ql run, then its web
search if it has one) → answer."""

from __future__ import annotations

from functools import partial

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import START, StateGraph
from langgraph.graph.state import CompiledStateGraph

from datawell.graphs.assistant import nodes
from datawell.graphs.assistant.nodes import AssistantDeps
from datawell.graphs.assistant.state import AssistantContext, AssistantInput, AssistantState
from datawell.graphs.nl2ql.graph import build_graph as build_query_graph


def build_graph(
    deps: AssistantDeps, checkpointer: BaseCheckpointSaver[str] | None = None
) -> CompiledStateGraph[AssistantState, AssistantContext, AssistantInput, AssistantState]:
    """With a checkpointer, runs with the same thread id are one conversation."""
    query_graph = build_query_graph(deps.query)
    builder = StateGraph(AssistantState, context_schema=AssistantContext, input_schema=AssistantInput)
    builder.add_node("plan", partial(nodes.plan, deps=deps))
    builder.add_node("step", partial(nodes.steps, deps=deps, nl2ql=query_graph))
    builder.add_node("answer", partial(nodes.answer, deps=deps))
    builder.add_edge(START, "plan")
    builder.add_edge("plan", "step")
    builder.add_edge("step", "answer")
    return builder.compile(checkpointer=checkpointer, name="assistant")
