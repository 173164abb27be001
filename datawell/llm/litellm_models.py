"""Chat models by litellm name (`provider/model`), as langchain-core chat models.

The langchain side is `langchain_litellm.ChatLiteLLM` (langchain-ai's integration package):
it converts messages, streams tokens and tool-call chunks, and puts the provider's token
counts on every AIMessage's `usage_metadata`. `LiteLLMChatModel` adds Datawell's policies
on top: one bounded retry loop on transient provider errors, every provider error turned
into a `ModelError` that says what to do, structured output by JSON schema where the
model supports it (tool calling otherwise), and the embedded model loaded before its
first call."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Iterator
from operator import itemgetter
from typing import Any, Literal

import litellm
import openai
from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import BaseMessage
from langchain_core.output_parsers import JsonOutputParser, PydanticOutputParser
from langchain_core.outputs import ChatGenerationChunk
from langchain_core.runnables import Runnable, RunnableMap, RunnablePassthrough
from langchain_core.utils.function_calling import convert_to_openai_tool
from langchain_litellm import ChatLiteLLM
from pydantic import BaseModel

from datawell.config import Settings
from datawell.errors import ModelError
from datawell.llm import embedded, embedded_runtime
from datawell.llm.models import STAGE_TAG, Stage, StageChoices

log = logging.getLogger(__name__)

litellm.suppress_debug_info = True

# Worth another try: the provider was slow, busy or briefly unreachable.
TRANSIENT_ERRORS: tuple[type[Exception], ...] = (
    litellm.Timeout,
    litellm.APIConnectionError,
    litellm.RateLimitError,
    litellm.ServiceUnavailableError,
    litellm.BadGatewayError,
    litellm.InternalServerError,
)
MAX_BACKOFF_SECONDS = 20.0


def model_error(model: str, error: Exception, attempts: int, timeout: float | None) -> ModelError:
    """A provider error as the user should read it; the provider's own text goes in `detail`."""
    detail = str(error)
    tries = f" ({attempts} attempts)" if attempts > 1 else ""
    if isinstance(error, litellm.Timeout):
        limit = f" within {timeout:g} s" if timeout else ""
        return ModelError(f"the model {model} did not answer{limit}{tries}", detail=detail)
    if isinstance(error, litellm.AuthenticationError | litellm.PermissionDeniedError):
        return ModelError(
            f"the provider of {model} refused its API key: check the key in the environment", detail=detail
        )
    if isinstance(error, litellm.NotFoundError):
        return ModelError(f"the provider does not know the model {model}", detail=detail)
    if isinstance(error, litellm.RateLimitError):
        return ModelError(f"the provider of {model} is rate-limiting requests{tries}", detail=detail)
    if isinstance(error, litellm.ContextWindowExceededError):
        return ModelError(f"the prompt is too long for {model}", detail=detail)
    if isinstance(error, litellm.APIConnectionError):
        return ModelError(f"cannot reach the provider of {model}{tries}", detail=detail)
    return ModelError(f"the model {model} failed{tries}", detail=detail)


class LiteLLMChatModel(ChatLiteLLM):
    """A chat model by litellm name, with bounded retries and errors as `ModelError`.

    `max_retries` counts retries after the first attempt, on transient errors only (timeout,
    connection, rate limit, 5xx), waiting `retry_backoff_seconds` doubled each time."""

    max_retries: int = 2
    retry_backoff_seconds: float = 1.0

    @property
    def is_embedded(self) -> bool:
        return self.model.startswith(f"{embedded_runtime.PROVIDER}/")

    def _call_params(self, kwargs: dict[str, Any]) -> dict[str, Any]:
        # This loop is the only retry: the provider SDKs' own retries would multiply it.
        return {**kwargs, "max_retries": 0}

    def _backoff(self, attempt: int) -> float:
        return min(self.retry_backoff_seconds * 2 ** (attempt - 1), MAX_BACKOFF_SECONDS)

    def _error(self, error: Exception, attempts: int) -> ModelError:
        timeout = self.request_timeout if isinstance(self.request_timeout, int | float) else None
        return model_error(self.model, error, attempts, timeout)

    def completion_with_retry(self, run_manager: CallbackManagerForLLMRun | None = None, **kwargs: Any) -> Any:
        if self.is_embedded:
            embedded.runtime().load()
        attempt = 1
        while True:
            try:
                return self.client.completion(**self._call_params(kwargs))
            except TRANSIENT_ERRORS as error:
                if attempt > self.max_retries:
                    raise self._error(error, attempt) from error
                time.sleep(self._backoff(attempt))
            except openai.OpenAIError as error:
                raise self._error(error, attempt) from error
            attempt += 1

    async def acompletion_with_retry(
        self, run_manager: AsyncCallbackManagerForLLMRun | None = None, **kwargs: Any
    ) -> Any:
        if self.is_embedded:
            # Joining, verifying and loading the weights blocks for seconds, once.
            await asyncio.to_thread(embedded.runtime().load)
        attempt = 1
        while True:
            try:
                return await self.client.acompletion(**self._call_params(kwargs))
            except TRANSIENT_ERRORS as error:
                if attempt > self.max_retries:
                    raise self._error(error, attempt) from error
                await asyncio.sleep(self._backoff(attempt))
            except openai.OpenAIError as error:
                raise self._error(error, attempt) from error
            attempt += 1

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        try:
            yield from super()._stream(messages, stop=stop, run_manager=run_manager, **kwargs)
        except openai.OpenAIError as error:
            # A stream that breaks after its first token cannot be retried: the reader has it.
            raise self._error(error, 1) from error

    async def _astream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[ChatGenerationChunk]:
        try:
            async for chunk in super()._astream(messages, stop=stop, run_manager=run_manager, **kwargs):
                yield chunk
        except openai.OpenAIError as error:
            raise self._error(error, 1) from error

    @property
    def takes_grammar(self) -> bool:
        """Whether the model decodes under a GBNF grammar sent with the request (llama.cpp's
        `grammar` field): the embedded model only; a hosted one is never sent it."""
        return self.is_embedded

    def supports_json_schema(self) -> bool:
        """Whether the model takes `response_format` with a JSON schema (constrained output)."""
        if self.is_embedded:
            return True
        try:
            return bool(litellm.supports_response_schema(model=self.model))
        except Exception:
            # litellm raises for models missing from its local list: assume the common case.
            return False

    def with_structured_output(  # type: ignore[override]
        self,
        schema: dict[str, Any] | type,
        *,
        method: Literal["json_schema", "function_calling", "json_mode"] | None = None,
        include_raw: bool = False,
        strict: bool | None = None,
        grammar: str = "",
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, dict[str, Any] | BaseModel]:
        """Constrained JSON output where the model supports it, a forced tool call otherwise.

        Small local models write tool calls as text but follow a JSON schema reliably, so the
        schema wins whenever both work. A `grammar` (GBNF of the whole JSON reply) replaces the
        schema for the embedded model, since llama.cpp refuses both at once; other models
        ignore it (issue 50)."""
        if grammar and self.takes_grammar:
            method = "json_schema"
        if method is None:
            method = "json_schema" if self.supports_json_schema() else "function_calling"
        if method != "json_schema":
            return super().with_structured_output(
                schema, method=method, include_raw=include_raw, strict=strict, **kwargs
            )
        tool = convert_to_openai_tool(schema)
        parameters = tool["function"]["parameters"]
        # llama.cpp turns any schema into a grammar, so the embedded model gets pydantic's own:
        # fields with defaults stay optional and the small model skips them when empty
        # (nl2ql's draft: 88 tokens instead of 135, with an invented "refusal" beside the query).
        strict = not self.is_embedded
        model = (
            self.bind(grammar=grammar)
            if grammar and self.takes_grammar
            else self.bind(
                response_format={
                    "type": "json_schema",
                    "json_schema": {
                        "name": tool["function"]["name"],
                        "schema": strict_schema(parameters) if strict else parameters,
                        "strict": strict,
                    },
                }
            )
        )
        parser: Runnable[Any, Any] = (
            PydanticOutputParser(pydantic_object=schema)
            if isinstance(schema, type) and issubclass(schema, BaseModel)
            else JsonOutputParser()
        )
        if not include_raw:
            return model | parser
        parsed = RunnablePassthrough.assign(
            parsed=itemgetter("raw") | parser, parsing_error=lambda _: None
        ).with_fallbacks([RunnablePassthrough.assign(parsed=lambda _: None)], exception_key="parsing_error")
        return RunnableMap(raw=model) | parsed


def strict_schema(schema: Any) -> Any:
    """A JSON schema in the strict form: every property required, no others allowed, no defaults.

    OpenAI's strict mode refuses any other schema (a pydantic field with a default is not
    `required`), and pydantic accepts answers to either form."""
    if isinstance(schema, list):
        return [strict_schema(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    result: dict[str, Any] = {key: strict_schema(value) for key, value in schema.items() if key != "default"}
    if "properties" in schema and isinstance(schema["properties"], dict):
        result["properties"] = {name: strict_schema(value) for name, value in schema["properties"].items()}
        result["required"] = list(schema["properties"])
        result["additionalProperties"] = False
    return result


class LiteLLMChatModels:
    """`ChatModels` over litellm: picks each stage's model by the documented precedence.

    request per-stage choice > request choice > settings' per-stage model > settings' model
    > the embedded default. Models are built once per name and stage (the stage is their tag)."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._models: dict[tuple[str, Stage], LiteLLMChatModel] = {}
        if settings.embedded_model_enabled:
            embedded.register(
                settings.data_dir / "models",
                embedded_runtime.RuntimeOptions(
                    threads=settings.embedded_model_threads,
                    parallel=settings.embedded_model_parallel,
                    batch=settings.embedded_model_batch,
                    unified_kv=settings.embedded_model_unified_kv,
                    context=settings.embedded_model_context,
                    share_prompts=settings.embedded_model_share_prompts,
                ),
            )

    def model_name(self, stage: Stage, choices: StageChoices | None = None) -> str:
        """The litellm name that serves `stage`; a `ModelError` when nothing can."""
        requested = (choices or StageChoices()).for_stage(stage).litellm_name()
        if requested:
            return requested
        per_stage = {
            "plan": self.settings.plan_model,
            "query": self.settings.query_model,
            "answer": self.settings.answer_model,
        }.get(stage)
        configured = per_stage or self.settings.model
        if configured:
            return configured
        if self.settings.embedded_model_enabled:
            return embedded_runtime.EMBEDDED_MODEL
        raise ModelError(
            "no chat model is configured: set DATAWELL_MODEL to a litellm model name "
            "(for example openai/gpt-4o-mini, with its key such as OPENAI_API_KEY), "
            "name one in the request, or turn the embedded model on (DATAWELL_EMBEDDED_MODEL_ENABLED=true)"
        )

    def check(self, stage: Stage, choices: StageChoices | None = None) -> None:
        self.for_stage(stage, choices)

    async def preload(self) -> None:
        """Load the embedded model now when a question's stage would use it, so the first
        question does not wait for it. A model that cannot load is logged here and
        reported to the first question that needs it."""
        stages: tuple[Stage, ...] = ("plan", "query", "answer")
        if not self.settings.embedded_model_enabled or all(
            self.model_name(stage) != embedded_runtime.EMBEDDED_MODEL for stage in stages
        ):
            return
        try:
            await asyncio.to_thread(embedded.runtime().load)
        except ModelError as error:
            log.warning("the embedded model was not preloaded: %s", error.message)

    def refuse_unusable(self, name: str) -> None:
        """Refuse, before any call, a model that cannot work: unknown, disabled or keyless."""
        if name.startswith(f"{embedded_runtime.PROVIDER}/"):
            if not self.settings.embedded_model_enabled:
                raise ModelError(
                    f"the embedded model is turned off (DATAWELL_EMBEDDED_MODEL_ENABLED=false): choose another model than {name}"
                )
            if name != embedded_runtime.EMBEDDED_MODEL:
                raise ModelError(
                    f"unknown model {name!r}: the embedded provider serves {embedded_runtime.EMBEDDED_MODEL}"
                )
            return
        try:
            litellm.get_llm_provider(model=name)
        except litellm.BadRequestError:
            raise ModelError(
                f"unknown model {name!r}: name it as provider/model as litellm does, for example openai/gpt-4o-mini"
            ) from None
        missing = [key for key in litellm.validate_environment(model=name)["missing_keys"] if key.endswith("API_KEY")]
        if missing:
            raise ModelError(f"no API key is configured for {name}: set {' or '.join(missing)} in the environment")

    def for_stage(self, stage: Stage, choices: StageChoices | None = None) -> BaseChatModel:
        name = self.model_name(stage, choices)
        model = self._models.get((name, stage))
        if model is None:
            self.refuse_unusable(name)
            model = LiteLLMChatModel(
                model=name,
                request_timeout=self.settings.llm_timeout_seconds,
                max_retries=self.settings.llm_max_retries,
                # Deterministic SQL from the small local model; hosted models keep their default.
                temperature=0.0 if name == embedded_runtime.EMBEDDED_MODEL else None,
                tags=[f"{STAGE_TAG}{stage}"],
            )
            self._models[(name, stage)] = model
        return model
