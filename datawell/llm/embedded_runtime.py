"""The embedded model's runtime: xllamacpp's server in this process, loaded once behind a lock,
its parallel sequences and threads, and one call's streamed reply and timings (`CallStats`)."""

from __future__ import annotations

import logging
import os
import secrets
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import litellm

from datawell.errors import ModelError
from datawell.llm.models import EMBEDDED_PROVIDER
from datawell.llm.weights import INSTALL_HINT, ensure_model_file

log = logging.getLogger(__name__)
PROVIDER = EMBEDDED_PROVIDER
MODEL_ID = "qwen2.5-coder-1.5b"
EMBEDDED_MODEL = f"{PROVIDER}/{MODEL_ID}"
# Context per parallel sequence: the sequences decode together and share one KV cache of
# this many tokens each (four sequences: 16,384 tokens, about 460 MB).
CONTEXT_TOKENS_PER_SEQUENCE = 4096
# Four, measured with bench/load.py on the idle 2-core machine: four askers of four namespaces
# finished in 2.5x one question's time against 2.8x with two sequences (docs/decisions.md,
# issue 29); the prompt cache's size in tokens is the context's, so it holds more prefixes too.
PARALLEL_SEQUENCES = 4
# The share of a request's prompt an idle sequence must hold to be chosen by likeness rather
# than as the least recently used: any common start (the chat template's first tokens) will
# do. llama.cpp's own default (0.1) sends a request with nothing in common to the least
# recently used sequence, whose prompt the cache did not restore when measured
# (docs/decisions.md, issue 29).
SAME_PREFIX_SHARE = 0.001
# Without a limit a model that never emits its end token would run to the context size.
DEFAULT_MAX_TOKENS = 1024
# About the smallest request there is (a system message of its own keeps the chat template's
# default one out: some 12 tokens): its start makes llama.cpp save the idle sequences' prompts.
SAVE_PROMPTS_REQUEST = {
    "messages": [{"role": "system", "content": "."}, {"role": "user", "content": "."}],
    "max_tokens": 1,
    "stream": True,
}


def default_threads() -> int:
    """Every core this process may run on. On an idle 2-core machine two threads answer a
    cold question in 57 s where one took 78 s (docs/models.md). llama.cpp's threads wait
    for each other at every layer, so on cores busy with other work fewer threads can be
    faster: `DATAWELL_EMBEDDED_MODEL_THREADS` overrides this."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


@dataclass(frozen=True)
class CallStats:
    """One completion as the model's server counted it: prompt tokens evaluated and taken
    from its prompt cache, and the seconds spent reading the prompt and writing the reply."""

    prompt_tokens: int
    cached_tokens: int
    prefill_seconds: float
    output_tokens: int
    decode_seconds: float
    wall_seconds: float

    @classmethod
    def of(cls, timings: dict[str, Any], wall_seconds: float) -> CallStats:
        return cls(
            prompt_tokens=int(timings.get("prompt_n", 0)) + int(timings.get("cache_n", 0)),
            cached_tokens=int(timings.get("cache_n", 0)),
            prefill_seconds=float(timings.get("prompt_ms", 0.0)) / 1000,
            output_tokens=int(timings.get("predicted_n", 0)),
            decode_seconds=float(timings.get("predicted_ms", 0.0)) / 1000,
            wall_seconds=wall_seconds,
        )


@dataclass(frozen=True)
class RuntimeOptions:
    """How the model's server runs: CPU threads (0: `default_threads()`), sequences decoded at
    once, prompt tokens per batch (0: llama.cpp's default), the KV cache shared by every
    sequence (`unified_kv`) or one of `context` tokens per sequence, and whether each call's
    prompt is saved to the host-RAM cache when it ends (`share_prompts`, see `save_prompts`)."""

    threads: int = 0
    parallel: int = PARALLEL_SEQUENCES
    batch: int = 0
    unified_kv: bool = True
    context: int = CONTEXT_TOKENS_PER_SEQUENCE
    share_prompts: bool = False


class ReaderGone(Exception):
    """Raised by a chunk handler whose reader stopped listening; ends the decode."""


@dataclass
class Reply:
    """One answer gathered from a stream of chunks."""

    text: str = ""
    finish_reason: str = "stop"
    usage: dict[str, int] | None = None
    tool_calls: dict[int, dict[str, Any]] = field(default_factory=dict)

    def add(self, chunk: dict[str, Any]) -> None:
        if chunk.get("usage"):
            self.usage = {**chunk["usage"], "cached_tokens": cached_tokens(chunk)}
        for choice in chunk.get("choices") or []:
            delta = choice.get("delta") or {}
            self.text += delta.get("content") or ""
            for call in delta.get("tool_calls") or []:
                slot = self.tool_calls.setdefault(
                    call.get("index", 0), {"id": "", "type": "function", "function": {"name": "", "arguments": ""}}
                )
                slot["id"] = call.get("id") or slot["id"]
                function = call.get("function") or {}
                slot["function"]["name"] += function.get("name") or ""
                slot["function"]["arguments"] += function.get("arguments") or ""
            if choice.get("finish_reason"):
                self.finish_reason = choice["finish_reason"]


def cached_tokens(chunk: dict[str, Any]) -> int:
    """Prompt tokens the server took from its cache: llama.cpp counts them in the timings
    that ride with the usage chunk, not in the usage."""
    return int((chunk.get("timings") or {}).get("cache_n", 0))


def _server_error(chunk: dict[str, Any]) -> str | None:
    """llama.cpp reports a failed request as a body with an error instead of choices."""
    if "choices" in chunk:
        return None
    error = chunk.get("error", chunk)
    if isinstance(error, dict) and ("message" in error or "code" in error):
        return str(error.get("message") or error)
    return None


class EmbeddedRuntime:
    """The in-process model server, created on first use and kept for the process."""

    def __init__(self, models_dir: Path, options: RuntimeOptions | None = None) -> None:
        self.models_dir = models_dir
        self.options = options or RuntimeOptions()
        self._server: Any = None
        self._lock = threading.Lock()
        self.load_seconds: float | None = None
        # The latest calls' counters, for bench/ask.py and the log.
        self.calls: deque[CallStats] = deque(maxlen=256)

    @property
    def loaded(self) -> bool:
        return self._server is not None

    def load(self) -> Any:
        """Join and verify the weights if needed, then load them (blocking; call from a thread)."""
        with self._lock:
            if self._server is None:
                started = time.monotonic()
                try:
                    import xllamacpp
                except ImportError:
                    raise ModelError(
                        f"the embedded model's runtime (xllamacpp) is not installed: {INSTALL_HINT}"
                    ) from None
                path = ensure_model_file(self.models_dir)
                params = xllamacpp.CommonParams()
                params.model.path = str(path)
                options = self.options
                params.n_ctx = options.context * options.parallel
                params.n_parallel = options.parallel
                if options.batch:
                    params.n_batch = options.batch
                params.kv_unified = options.unified_kv
                params.warmup = False
                params.verbosity = -1
                # Host-RAM copies of evaluated prompts: a namespace's prefix (rules + catalog,
                # about 1,000 tokens, 28 KB of KV cache a token) is restored from here when
                # another namespace's question used the slot in between.
                params.cache_ram_mib = 1024
                # A request goes to the idle sequence whose prompt shares the longest start with
                # its own. Every prefix names its namespace in its first words (graphs/prefix.py),
                # so a sequence holding another namespace's prompt would keep almost nothing of
                # it: llama.cpp then saves that prompt to this cache and restores the best cached
                # one for the request. With the rules first (60% of a prompt, shared by every
                # namespace) it kept over half and never looked in the cache, so each change of
                # namespace read the rest of the prefix again (docs/decisions.md, issue 29).
                params.slot_prompt_similarity = SAME_PREFIX_SHARE
                # The server also listens on a loopback port of its own choosing; a random
                # key keeps anything else on the machine from using that listener.
                params.api_keys = [secrets.token_urlsafe(24)]
                params.cpuparams.n_threads = params.cpuparams_batch.n_threads = options.threads or default_threads()
                try:
                    self._server = xllamacpp.Server(params)
                except RuntimeError as error:
                    raise ModelError("the embedded model failed to load", detail=str(error)) from error
                self.load_seconds = time.monotonic() - started
                log.info("embedded model loaded in %.1f s", self.load_seconds)
            return self._server

    def stream(
        self, request: dict[str, Any], on_chunk: Callable[[dict[str, Any]], None], deadline: float | None = None
    ) -> None:
        """Run one chat completion, handing each chunk to `on_chunk`; blocking.

        Always streamed, because only the stream callback can stop a decode: past the
        deadline, or when `on_chunk` raises ReaderGone."""
        server = self.load()
        failure: str | None = None
        timed_out = False
        timings: dict[str, Any] = {}
        started = time.monotonic()

        def callback(chunk: dict[str, Any]) -> bool:
            nonlocal failure, timed_out
            failure = _server_error(chunk)
            if failure is not None:
                return True
            timings.update(chunk.get("timings") or {})
            try:
                on_chunk(chunk)
            except ReaderGone:
                return True
            if deadline is not None and time.monotonic() > deadline:
                timed_out = True
                return True
            return False

        body = {**request, "stream": True, "stream_options": {"include_usage": True}}
        body.setdefault("max_tokens", DEFAULT_MAX_TOKENS)
        server.handle_chat_completions(body, callback)
        if self.options.share_prompts and failure is None:
            self.save_prompts(server)
        if timings:
            stats = CallStats.of(timings, time.monotonic() - started)
            self.calls.append(stats)
            log.info(
                "embedded call: %d prompt tokens (%d cached) in %.1f s, %d output tokens in %.1f s, %.1f s in all",
                stats.prompt_tokens,
                stats.cached_tokens,
                stats.prefill_seconds,
                stats.output_tokens,
                stats.decode_seconds,
                stats.wall_seconds,
            )
        if failure is not None:
            raise litellm.BadRequestError(
                message=f"the embedded model refused the request: {failure}",
                model=EMBEDDED_MODEL,
                llm_provider=PROVIDER,
            )
        if timed_out:
            raise litellm.Timeout(
                message="the embedded model did not finish in time", model=EMBEDDED_MODEL, llm_provider=PROVIDER
            )

    @staticmethod
    def save_prompts(server: Any) -> None:
        """Have llama.cpp save the prompt of the sequence that just answered to its host-RAM
        cache: as any task starts, it saves every idle sequence's prompt there
        (`cache_idle_slots`, on by default), and a task that finds its prompt's start on no
        idle sequence restores the best cached prompt instead of reading it again. So once a
        namespace's prefix has been read, every sequence can answer that namespace at the cost
        of a copy, not a prefill (docs/decisions.md, issue 52). Not in `calls`: it is no call."""
        failures: list[str] = []

        def callback(chunk: dict[str, Any]) -> bool:
            failure = _server_error(chunk)
            if failure is not None:
                failures.append(failure)
            return False

        server.handle_chat_completions(dict(SAVE_PROMPTS_REQUEST), callback)
        if failures:
            log.warning("the prompt-saving request failed, prompts are not shared: %s", failures[0])

    def complete(self, request: dict[str, Any], deadline: float | None = None) -> Reply:
        reply = Reply()
        self.stream(request, reply.add, deadline)
        return reply
