"""A scripted chat model for tests and plumbing runs: it answers from a script and
records every conversation it was given, and never reaches the network.

A script item is one of:
- a string: a plain text answer;
- a pydantic model instance: answered as the tool call that `with_structured_output`
  of that model's class parses (the call is named after the class);
- a callable taking the messages and returning either of the above: for answers that
  depend on the question (used by the eval plumbing run).
Answers are consumed in order; running past the end is an error that names the prompt."""

from __future__ import annotations

import json
import uuid
from abc import abstractmethod
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel, LangSmithParams, LanguageModelInput
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_core.messages.ai import InputTokenDetails, UsageMetadata
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.runnables import Runnable
from pydantic import BaseModel, PrivateAttr

ScriptItem = str | BaseModel | Callable[[list[BaseMessage]], "str | BaseModel"]


class ScriptExhausted(AssertionError):
    pass


def as_message(answer: str | BaseModel) -> AIMessage:
    if isinstance(answer, BaseModel):
        call = {
            "name": type(answer).__name__,
            "args": json.loads(answer.model_dump_json()),
            "id": f"call_{uuid.uuid4().hex[:8]}",
        }
        return AIMessage(content="", tool_calls=[call])
    return AIMessage(content=answer)


def usage(messages: list[BaseMessage], reply: AIMessage) -> UsageMetadata:
    """Token counts as a provider reports them, counting words: the run recorder's tests
    read them back. The system message counts as taken from the prompt cache."""
    cached = sum(len(str(m.content).split()) for m in messages if m.type == "system")
    prompt = sum(len(str(m.content).split()) for m in messages)
    output = len(str(reply.content).split()) + sum(len(json.dumps(c["args"]).split()) for c in reply.tool_calls)
    return UsageMetadata(
        input_tokens=prompt,
        output_tokens=output,
        total_tokens=prompt + output,
        input_token_details=InputTokenDetails(cache_read=cached),
    )


class ReplyingChatModel(BaseChatModel):
    """A chat model whose reply Python computes from the messages: a script
    (`ScriptedChatModel`), an eval suite's gold answers (`evals.oracle`)."""

    @abstractmethod
    def reply(self, messages: list[BaseMessage]) -> AIMessage: ...

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=self.reply(messages))])


class ScriptedChatModel(ReplyingChatModel):
    script: list[Any]
    name_: str = "scripted"
    _position: int = PrivateAttr(default=0)
    _calls: list[list[BaseMessage]] = PrivateAttr(default_factory=list)

    def __init__(self, script: Sequence[ScriptItem], **kwargs: Any) -> None:
        # `script` is this class's field, which BaseChatModel's typed __init__ cannot name.
        super().__init__(script=list(script), **kwargs)  # type: ignore[call-arg]

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def _get_ls_params(self, stop: list[str] | None = None, **kwargs: Any) -> LangSmithParams:
        # The model's name in the callbacks' metadata, where the run recorder reads it.
        return {**super()._get_ls_params(stop=stop, **kwargs), "ls_model_name": self.name_}

    @property
    def calls(self) -> list[list[BaseMessage]]:
        """Every conversation the model was given, in order."""
        return self._calls

    def prompts(self) -> list[str]:
        """Each call's messages joined as text, for assertions on what the model saw."""
        return ["\n".join(str(m.content) for m in call) for call in self._calls]

    def reply(self, messages: list[BaseMessage]) -> AIMessage:
        self._calls.append(list(messages))
        if self._position >= len(self.script):
            last = str(messages[-1].content)[:300] if messages else ""
            raise ScriptExhausted(f"the script has no answer #{self._position + 1}; the prompt ended with: {last}")
        item = self.script[self._position]
        self._position += 1
        answer = item(messages) if callable(item) and not isinstance(item, BaseModel) else item
        message = as_message(answer)
        message.usage_metadata = usage(messages, message)
        return message

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        message = self.reply(messages)
        if message.tool_calls:
            yield ChatGenerationChunk(
                message=AIMessageChunk(
                    content="",
                    tool_call_chunks=[
                        {"name": c["name"], "args": json.dumps(c["args"]), "id": c["id"], "index": 0}
                        for c in message.tool_calls
                    ],
                    usage_metadata=message.usage_metadata,
                )
            )
            return
        words = str(message.content).split(" ")
        for i, word in enumerate(words):
            chunk = AIMessageChunk(
                content=word if i == 0 else " " + word, usage_metadata=message.usage_metadata if i == 0 else None
            )
            if run_manager:
                run_manager.on_llm_new_token(str(chunk.content), chunk=ChatGenerationChunk(message=chunk))
            yield ChatGenerationChunk(message=chunk)

    def bind_tools(
        self, tools: Sequence[Any], *, tool_choice: Any = None, **kwargs: Any
    ) -> Runnable[LanguageModelInput, AIMessage]:
        # The script already holds the tool calls to answer with.
        return self  # type: ignore[return-value]
