"""Which chat model serves which stage of a graph.

A request may name a model (`model` + `provider`) for every stage, or per stage
(`models.plan|query|answer`); otherwise the settings' per-stage model, then the settings'
model, then the embedded default. Graphs ask a `ChatModels` for a stage's model and never
build clients themselves."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal, Protocol

from langchain_core.language_models import BaseChatModel

Stage = Literal["plan", "query", "answer", "curate", "extract", "judge"]
STAGES: tuple[Stage, ...] = ("plan", "query", "answer", "curate", "extract", "judge")
# A chat model tagged `stage:<stage>` (LangChain's run tags) has its calls counted under that
# stage by the run recorder (`datawell.observability.recorder`).
STAGE_TAG = "stage:"
EMBEDDED_PROVIDER = "embedded"  # the in-process model's litellm provider (`llm.embedded`)


@dataclass(frozen=True)
class ModelChoice:
    """A request's choice of model; both parts optional."""

    model: str | None = None
    provider: str | None = None

    def litellm_name(self) -> str | None:
        """`provider/model` as litellm names it (a model that already names its provider is kept)."""
        if not self.model:
            return None
        if self.provider and not self.model.startswith(f"{self.provider}/"):
            return f"{self.provider}/{self.model}"
        return self.model

    def is_hosted(self) -> bool:
        """A model named, and not the embedded one."""
        name = self.litellm_name()
        return name is not None and not name.startswith(f"{EMBEDDED_PROVIDER}/")

    def __bool__(self) -> bool:
        return bool(self.model)


@dataclass(frozen=True)
class StageChoices:
    """The choices a request made: one for every stage, and per-stage overrides that win."""

    default: ModelChoice = field(default_factory=ModelChoice)
    per_stage: Mapping[str, ModelChoice] = field(default_factory=dict)

    @classmethod
    def named(
        cls,
        model: str | None = None,
        provider: str | None = None,
        per_stage: Mapping[str, tuple[str | None, str | None]] | None = None,
    ) -> StageChoices:
        """What a request named: `model` and `provider` for every stage, and per stage
        `(model, provider)` overrides. Every surface builds its choices here."""
        overrides = {stage: ModelChoice(*named) for stage, named in (per_stage or {}).items()}
        return cls(default=ModelChoice(model, provider), per_stage=overrides)

    def for_stage(self, stage: Stage) -> ModelChoice:
        chosen = self.per_stage.get(stage)
        return chosen if chosen else self.default


class ChatModels(Protocol):
    def for_stage(self, stage: Stage, choices: StageChoices | None = None) -> BaseChatModel: ...

    def check(self, stage: Stage, choices: StageChoices | None = None) -> None:
        """Raise `ModelError` now, before a run starts, when `stage` has no usable model."""


class FixedChatModels:
    """Every stage gets the same model, or the model given for that stage; records what was
    asked, so tests can check that a request's choices reach the right stage."""

    def __init__(self, model: BaseChatModel, per_stage: Mapping[str, BaseChatModel] | None = None) -> None:
        self.model = model
        self.per_stage = dict(per_stage or {})
        self.requests: list[tuple[Stage, ModelChoice]] = []

    def for_stage(self, stage: Stage, choices: StageChoices | None = None) -> BaseChatModel:
        self.requests.append((stage, (choices or StageChoices()).for_stage(stage)))
        return self.per_stage.get(stage, self.model)

    def check(self, stage: Stage, choices: StageChoices | None = None) -> None:
        """Every stage has a model."""
