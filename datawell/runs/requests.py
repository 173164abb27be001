"""What a surface asks `Runs` for (`AskRequest`, `CurateRequest`) and the `Run` it gets back."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import aclosing
from dataclasses import dataclass, field

from datawell.graphs.assistant.state import CallerContext
from datawell.graphs.events import GraphEvent, RunResult
from datawell.llm.models import StageChoices
from datawell.storage.access import NamespaceRef
from datawell.storage.tables import User

Events = AsyncGenerator[GraphEvent, None]


@dataclass(frozen=True)
class AskRequest:
    """A question for nl2ql or the assistant."""

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


@dataclass(frozen=True)
class CurateRequest:
    """Link curation for a namespace, or for the links from and to one of its datasets."""

    user: User
    namespace: NamespaceRef
    dataset: str | None = None
    activate: bool = False  # the selected links join the ontology; else they are suggestions
    choices: StageChoices = field(default_factory=StageChoices)


@dataclass(frozen=True)
class Run:
    """A run whose checks passed. `events()` streams it once (an async generator; closing it
    stops the graph)."""

    stream: Events
    conversation_id: str | None = None  # the assistant's conversation
    # Its record in the run viewer (`GET /api/v1/runs/{id}`); the assistant's is also its
    # DataLinks SDK run (`storage.agent_runs`), under the same id.
    run_id: str | None = None

    def events(self) -> Events:
        return self.stream

    async def result(self) -> RunResult:
        """The whole run, folded (for answers that are not streamed)."""
        result = RunResult()
        async with aclosing(self.events()) as events:
            async for event in events:
                result.add(event)
        return result
