"""One model call's span and metric, wherever the call happens: in a run's graph (the run
recorder also writes it into the run's record) or in an ingestion (`observability.ingestion`).

Both hear the call as LangChain callbacks: `described(...)` reads the stage and the model from
the callback's arguments, `ModelCall` opens the span at the start and, at the end, sets the
token counts the provider reported and counts the call."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import AIMessage
from langchain_core.outputs import ChatGeneration, LLMResult
from opentelemetry import trace
from opentelemetry.trace import Span, Status, StatusCode

from datawell.llm.models import STAGE_TAG
from datawell.observability import metrics, tracing


def described(
    serialized: dict[str, Any] | None, tags: list[str] | None, metadata: dict[str, Any] | None, fallback: str
) -> tuple[str, str]:
    """A call's stage (its `stage:` tag, else `fallback`) and model name."""
    metadata = metadata or {}
    stage = next((t[len(STAGE_TAG) :] for t in tags or [] if t.startswith(STAGE_TAG)), None)
    model = metadata.get("ls_model_name") or (serialized or {}).get("name") or "unknown"
    return stage or fallback, str(model)


def reply_message(response: LLMResult | None) -> AIMessage | None:
    if response is None or not response.generations or not response.generations[0]:
        return None
    generation = response.generations[0][0]
    if isinstance(generation, ChatGeneration) and isinstance(generation.message, AIMessage):
        return generation.message
    return None


@dataclass
class Usage:
    prompt: int = 0
    output: int = 0
    cached: int = 0

    @classmethod
    def of(cls, message: AIMessage | None) -> Usage:
        usage: dict[str, Any] = dict((message.usage_metadata if message is not None else None) or {})
        cached = (usage.get("input_token_details") or {}).get("cache_read", 0) or 0
        return cls(int(usage.get("input_tokens", 0)), int(usage.get("output_tokens", 0)), int(cached))


class ModelCall:
    """A model call under way: its span (a child of `parent`) and its start."""

    def __init__(self, stage: str, model: str, parent: Span) -> None:
        self.stage, self.model = stage, model
        self.started = time.perf_counter()
        self.span = tracing.tracer().start_span(
            f"chat {model}",
            trace.set_span_in_context(parent),
            attributes={
                tracing.GEN_AI_OPERATION_NAME: "chat",
                tracing.GEN_AI_REQUEST_MODEL: model,
                tracing.GEN_AI_PROVIDER_NAME: model.split("/", 1)[0] if "/" in model else model,
                "datawell.stage": stage,
            },
        )

    def end(self, message: AIMessage | None, error: BaseException | None = None) -> tuple[float, Usage]:
        """Close the span and count the call; its seconds and the tokens the provider reported."""
        seconds = time.perf_counter() - self.started
        usage = Usage.of(message)
        self.span.set_attributes(
            {
                tracing.GEN_AI_USAGE_INPUT_TOKENS: usage.prompt,
                tracing.GEN_AI_USAGE_OUTPUT_TOKENS: usage.output,
                tracing.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS: usage.cached,
            }
        )
        if error is not None:
            self.span.set_attribute(tracing.ERROR_TYPE, type(error).__name__)
            self.span.set_status(Status(StatusCode.ERROR, type(error).__name__))
        self.span.end()
        metrics.model_called(self.stage, self.model, error is None, seconds, usage.prompt, usage.cached, usage.output)
        return seconds, usage
