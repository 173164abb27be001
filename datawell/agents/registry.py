"""The agents Datawell serves over A2A. The `/a2a` list, the cards and the JSON-RPC handlers are
all built from `AGENTS`, so adding an agent is one entry here and nothing else."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from a2a.server.tasks import TaskStore

from datawell.agents.assistant import AssistantExecutor
from datawell.agents.executor import GraphExecutor
from datawell.agents.nl2ql import Nl2qlExecutor
from datawell.errors import NotFound


@dataclass(frozen=True)
class AgentSpec:
    name: str
    description: str
    skill_name: str
    skill_description: str
    tags: tuple[str, ...]
    examples: tuple[str, ...]  # shown on the extended card only
    executor: Callable[[TaskStore], GraphExecutor]


AGENTS: tuple[AgentSpec, ...] = (
    AgentSpec(
        name="nl2ql",
        description=(
            "Translates a plain-language question into a structured query, runs it against the target "
            "namespace, and returns the generated query and the result rows."
        ),
        skill_name="Question to query",
        skill_description=(
            "Generates a read-only query over the datasets of a namespace from a plain-language question, "
            "runs it, and returns the query (text) and the rows (data, under `rows`)."
        ),
        tags=("nl2ql", "query", "sql"),
        examples=(
            "How many orders did each customer place in 2024?",
            "Which ten products have the highest revenue?",
        ),
        executor=Nl2qlExecutor,
    ),
    AgentSpec(
        name="assistant",
        description=(
            "Retrieval-augmented answering: plans a multi-step query strategy over the namespace, runs the "
            "queries, and synthesises an answer. Send `contextId` to continue a conversation."
        ),
        skill_name="Answer from data",
        skill_description=(
            "Answers a question from the datasets of a namespace: a plan of steps, one query per step "
            "(each step's query and rows as an artifact), then the answer."
        ),
        tags=("assistant", "rag", "query"),
        examples=(
            "Which customers ordered more this quarter than last, and by how much?",
            "Summarise the open support tickets by product and priority.",
        ),
        executor=AssistantExecutor,
    ),
)


def agent_named(name: str) -> AgentSpec:
    for spec in AGENTS:
        if spec.name == name:
            return spec
    raise NotFound(f"no agent named {name!r}; GET /api/v1/a2a lists the agents")
