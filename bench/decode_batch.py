"""What the embedded model's parallel sequences buy on this machine: the decode rate of one
sequence against that of 2 and 4 decoding at once, without the service around them.

    .venv/bin/python -m bench.decode_batch [--tokens 64] [--threads 0] [--repeats 3]

Each sequence gets its own short prompt (a few dozen tokens, so prefill is small beside the
decode) and must write exactly `--tokens` tokens (`ignore_eos`). Per level it prints the wall
seconds, the tokens written by all sequences together and their aggregate rate, and that
rate over one sequence's: 1.0 means the sequences only took turns, 4.0 that four decoded in
the time of one. issue 29's "4 askers within 2.5x one question" needs well above 1.6 at four
sequences, since four questions write about three times the tokens of one.

Uses the model file of `DATAWELL_DATA_DIR` (models/), like the service. Never run on a busy
machine: print and keep `uptime`'s load beside the figures."""

from __future__ import annotations

import argparse
import os
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from datawell.config import Settings
from datawell.llm.embedded_runtime import EmbeddedRuntime, RuntimeOptions

TOPICS = ["rivers of Europe", "prime numbers", "the history of tea", "how bridges carry loads"]


def prompt(topic: str, context: int) -> str:
    """A request about `topic`, after about `context` tokens of numbered notes of its own (a
    question's prompt is about 1,100 tokens of rules and catalog)."""
    notes = "".join(f"Note {i} on {topic}: keep it in mind.\n" for i in range(context // 12))
    return f"{notes}Write a long essay about {topic}."


def one(runtime: EmbeddedRuntime, topic: str, tokens: int, context: int = 0) -> int:
    reply = runtime.complete(
        {
            "messages": [{"role": "user", "content": prompt(topic, context)}],
            "max_tokens": tokens,
            "temperature": 0,
            "ignore_eos": True,
        }
    )
    return int((reply.usage or {}).get("completion_tokens", 0))


def level(runtime: EmbeddedRuntime, width: int, tokens: int, context: int = 0) -> tuple[float, int]:
    """Seconds for `width` sequences to write `tokens` tokens each, all at once, and the
    tokens they wrote (as the model's server counted them)."""
    calls = len(runtime.calls)
    started = time.perf_counter()
    with ThreadPoolExecutor(width) as pool:
        written = sum(pool.map(lambda t: one(runtime, t, tokens, context), TOPICS[:width]))
    seconds = time.perf_counter() - started
    new = list(runtime.calls)[calls:]
    # A level whose prompts were not found in the prompt cache measures prefill, not decode.
    uncached = sum(c.prompt_tokens - c.cached_tokens for c in new)
    if uncached > 16 * width:
        print(
            f"  ({width} sequences: {uncached} prompt tokens read again, {sum(c.prefill_seconds for c in new):.1f} s)"
        )
    return seconds, written


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tokens", type=int, default=64, help="tokens each sequence writes")
    parser.add_argument("--threads", type=int, default=0, help="the model's CPU threads (0: every core)")
    parser.add_argument("--repeats", type=int, default=3, help="runs per level; the median is printed")
    parser.add_argument("--context", type=int, default=0, help="tokens of prompt before each request (about)")
    parser.add_argument("--split-kv", action="store_true", help="a KV cache of its own per sequence (not unified)")
    parser.add_argument("--kv-context", type=int, default=4096, help="context tokens per sequence")
    args = parser.parse_args()
    settings = Settings()
    options = RuntimeOptions(threads=args.threads, parallel=4, unified_kv=not args.split_kv, context=args.kv_context)
    runtime = EmbeddedRuntime(Path(settings.data_dir) / "models", options)
    runtime.load()
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} CPUs")
    print(f"context {args.context} tokens, KV cache {'split' if args.split_kv else 'unified'}")
    # Warm the weights into the page cache and the threads up, and read each sequence's prompt
    # once, so that the timed runs find it in the prompt cache as a question finds its prefix.
    for topic in TOPICS:
        one(runtime, topic, 1, args.context)
    base = 0.0
    print(f"{'sequences':>9} {'seconds':>8} {'tokens':>7} {'tokens/s':>9} {'x one':>6}")
    for width in (1, 2, 4):
        runs = [level(runtime, width, args.tokens, args.context) for _ in range(args.repeats)]
        seconds, written = sorted(runs)[len(runs) // 2]  # the median run
        rate = written / seconds
        base = base or rate
        print(f"{width:>9} {seconds:>8.2f} {written:>7} {rate:>9.2f} {rate / base:>6.2f}")
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
