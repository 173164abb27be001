"""Chat models by litellm name. Placeholder until the models work lands: it refuses with
a clear error, so nothing silently runs without a model."""

from __future__ import annotations

from langchain_core.language_models import BaseChatModel

from datawell.config import Settings
from datawell.errors import ModelError
from datawell.llm.models import Stage, StageChoices


class LiteLLMChatModels:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    def for_stage(self, stage: Stage, choices: StageChoices | None = None) -> BaseChatModel:
        raise ModelError("no chat model is available yet in this build")
