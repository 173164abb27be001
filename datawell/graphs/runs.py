"""Entry points that run a graph for one request and yield its progress events. The REST
API (`/query/autorag`), the A2A agents, the CLI (`datawell ask`) and evals all run graphs
through these, and only through these.

CONTRACT (filled in by the graphs work): names and signatures here are what the surfaces
build against. Event order:
- nl2ql: QueryGenerated, RowsReady; or RunFailed.
- assistant: RunStarted(conversation_id), PlanReady, then per step StepStarted and
  StepFinished, then AnswerDelta* (when the model streams), AnswerReady, RunFinished; or
  RunFailed at any point after RunStarted.
A new conversation gets `request.new_conversation_id` when given, else a generated id; either
way RunStarted carries it. Errors found before the run starts are raised, not yielded: `errors.NotFound` for a
conversation that does not exist or belongs to another user, `errors.Forbidden` for a
namespace the caller may not read."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from datawell.graphs.events import GraphEvent
from datawell.llm.models import StageChoices
from datawell.services import Services
from datawell.storage.access import NamespaceRef
from datawell.storage.tables import User


class _Wire(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")


class CallerTurn(_Wire):
    text: str
    agent_name: str = ""


class CallerFact(_Wire):
    label: str
    value: str
    source: str = ""


class CallerContext(_Wire):
    """Background a caller established elsewhere; rendered into prompts, never widens access."""

    turns: list[CallerTurn] = Field(default_factory=list)
    facts: list[CallerFact] = Field(default_factory=list)


@dataclass(frozen=True)
class AskRequest:
    user: User
    namespace: NamespaceRef
    question: str
    choices: StageChoices = field(default_factory=StageChoices)
    conversation_id: str | None = None  # assistant only: continue this conversation
    # assistant only, when conversation_id is None: start the new conversation under this id
    # instead of a generated one (A2A: the task's contextId is the conversation id).
    new_conversation_id: str | None = None
    helper_prompt: str | None = None
    web_search: bool | None = None  # None: the deployment default
    caller_context: CallerContext | None = None


async def run_nl2ql(services: Services, request: AskRequest) -> AsyncIterator[GraphEvent]:
    raise NotImplementedError
    yield  # pragma: no cover


async def run_assistant(services: Services, request: AskRequest) -> AsyncIterator[GraphEvent]:
    raise NotImplementedError
    yield  # pragma: no cover
