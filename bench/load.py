"""Many askers at once against one real server: what the model scheduler gives each of them.

    .venv/bin/python -m bench.load                                    # the embedded model: 1, 2, 4, 8 askers
    .venv/bin/python -m bench.load --parallel 4 --threads 2 --batch 256 --askers 4,8
    .venv/bin/python -m tests.fake_openai 18701 --delay 0.5 &         # a fake model, to check the bench
    .venv/bin/python -m bench.load --model openai/fake --api-base http://127.0.0.1:18701/v1

Each asker is its own user with its own copy of the demo (its own namespace `shop`), and
asks `--questions` questions one after another over REST (SSE, as `datawell ask` does); all
askers of a level start together, after one uncounted warm-up question per asker (`--cold`:
the first asker's only). The server runs in this process on a loopback port, with the
settings given here (`--parallel`, `--threads`, `--batch`: the embedded model's parallel
sequences, CPU threads and prompt batch; `--slots`, `--queue`, `--per-user`: the scheduler).
Per level it prints: p50/p95 of a question's latency and of its first-token time (the first
`answer-delta`, else the `answer`), aggregate output tokens/s (the embedded model's own
counters; with a hosted model the number of `answer-delta` chunks), errors, time-outs, the
longest wait, the most runs of any one other user that started while a question waited
("behind"), the p99 latency of `GET /health` polled every 50 ms meanwhile, and the embedded
model's prompt tokens, the share of them its prompt cache served, and its prefill seconds.

Never run by the test suite, and never on a busy machine for the embedded model's figures:
print and keep `uptime`'s load beside them."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from datetime import timedelta
from pathlib import Path

import httpx
import uvicorn

from datawell import demo
from datawell.app import create_app
from datawell.config import Settings
from datawell.llm import embedded
from datawell.services import build_services

QUESTIONS = [
    "How many orders are there?",
    "Which product sold the most units?",
    "What is the total revenue of all orders?",
    "How many distinct customers placed orders?",
]
MODELS_CACHE = Path(tempfile.gettempdir()) / "datawell-bench-models"


@dataclass
class Asked:
    user: str
    question: str
    sent: float = 0.0  # seconds since the level started
    started: float = 0.0  # the run had its slot: `run-started`
    first_token: float = 0.0
    done: float = 0.0
    queued: bool = False
    deltas: int = 0
    error: str = ""
    timed_out: bool = False

    @property
    def latency(self) -> float:
        return self.done - self.sent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def load_users(settings: Settings, count: int) -> dict[str, str]:
    """`count` users, each with the demo in their own namespace, and a token each."""
    services = await build_services(settings)
    try:
        tokens = {}
        for number in range(1, count + 1):
            user, _, _ = await demo.load(services, f"asker{number}")
            _, tokens[user.username] = await services.tokens.issue(user.username, timedelta(hours=2), "bench.load")
        return tokens
    finally:
        await services.close()


def ask(base: str, user: str, token: str, question: str, origin: float, timeout: float) -> Asked:
    asked = Asked(user, question, sent=time.monotonic() - origin)
    body = {"namespace": demo.NAMESPACE, "query": question}
    headers = {"Authorization": f"Bearer {token}", "Accept": "text/event-stream"}
    event = ""
    try:
        with (
            httpx.Client(base_url=base, timeout=httpx.Timeout(timeout, connect=10)) as http,
            http.stream("POST", "/api/v1/query/autorag", json=body, headers=headers) as response,
        ):
            if response.status_code != 200:
                response.read()
                asked.error = f"{response.status_code}: {response.text[:200]}"
            for line in response.iter_lines() if not asked.error else ():
                now = time.monotonic() - origin
                if line.startswith("event:"):
                    event = line[6:].strip()
                    asked.queued |= event == "queued"
                    if event == "run-started":
                        asked.started = now
                    elif event in ("answer-delta", "answer") and not asked.first_token:
                        asked.first_token = now
                    asked.deltas += event == "answer-delta"
                elif line.startswith("data:") and event == "error":
                    asked.error = line[5:].strip()[:200]
            if time.monotonic() - origin - asked.sent > timeout:
                asked.timed_out = True
    except httpx.TimeoutException:
        asked.timed_out = True
    except httpx.HTTPError as error:
        asked.error = f"{type(error).__name__}: {error}"
    asked.done = time.monotonic() - origin
    return asked


def asker(base: str, user: str, token: str, questions: int, origin: float, timeout: float) -> list[Asked]:
    offset = int(user.removeprefix("asker"))
    picked = [QUESTIONS[(offset + i) % len(QUESTIONS)] for i in range(questions)]
    return [ask(base, user, token, question, origin, timeout) for question in picked]


def behind(asked: list[Asked]) -> int:
    """The most runs of any one other user that got a slot while one question waited (a
    question that was never queued waited behind nobody)."""
    worst = 0
    for mine in asked:
        if mine.error or mine.timed_out or not mine.queued:
            continue
        for other in {a.user for a in asked} - {mine.user}:
            passed = sum(1 for a in asked if a.user == other and mine.sent < a.started < mine.started)
            worst = max(worst, passed)
    return worst


def percentile(values: list[float], share: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


def poll_health(base: str, stop: threading.Event, into: list[float]) -> None:
    with httpx.Client(base_url=base, timeout=10) as http:
        while not stop.is_set():
            started = time.perf_counter()
            http.get("/health").raise_for_status()
            into.append(time.perf_counter() - started)
            stop.wait(0.05)


def level(base: str, tokens: dict[str, str], askers: int, questions: int, timeout: float) -> dict[str, object]:
    users = sorted(tokens, key=lambda u: int(u.removeprefix("asker")))[:askers]
    calls_before = len(embedded.runtime().calls) if embedded.is_registered() else 0
    health: list[float] = []
    stop = threading.Event()
    poller = threading.Thread(target=poll_health, args=(base, stop, health), daemon=True)
    poller.start()
    origin = time.monotonic()
    with ThreadPoolExecutor(askers) as pool:
        futures = [pool.submit(asker, base, u, tokens[u], questions, origin, timeout) for u in users]
        asked = [a for future in futures for a in future.result()]
    wall = time.monotonic() - origin
    stop.set()
    poller.join()
    answered = [a for a in asked if not a.error and not a.timed_out]
    calls = list(embedded.runtime().calls)[calls_before:] if embedded.is_registered() else []
    tokens_out = sum(c.output_tokens for c in calls) if calls else sum(a.deltas for a in answered)
    return {
        "askers": askers,
        "questions": len(asked),
        "wall_seconds": round(wall, 2),
        "latency_p50": round(statistics.median([a.latency for a in answered]), 2) if answered else None,
        "latency_p95": round(percentile([a.latency for a in answered], 0.95), 2),
        "first_token_p50": round(statistics.median([a.first_token - a.sent for a in answered]), 2)
        if answered
        else None,
        "first_token_p95": round(percentile([a.first_token - a.sent for a in answered], 0.95), 2),
        "tokens_per_second": round(tokens_out / wall, 2),
        "errors": sum(1 for a in asked if a.error),
        "timeouts": sum(1 for a in asked if a.timed_out),
        "queued": sum(1 for a in asked if a.queued),
        "longest_wait": round(max((a.started - a.sent for a in answered if a.queued), default=0.0), 2),
        "behind": behind(asked),
        "health_p99_ms": round(1000 * percentile(health, 0.99), 1),
        # The embedded model's prompt cache: prompt tokens of the level's calls, and the share
        # of them taken from the cache instead of prefilled again.
        "prompt_tokens": sum(c.prompt_tokens for c in calls),
        "cached_share": round(sum(c.cached_tokens for c in calls) / max(1, sum(c.prompt_tokens for c in calls)), 2),
        "prefill_seconds": round(sum(c.prefill_seconds for c in calls), 1),
        "calls": [asdict(c) for c in calls],
        "health_reads": len(health),
        "load_average": os.getloadavg(),
        "asked": [asdict(a) for a in asked],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--askers", default="1,2,4,8", help="concurrent askers per level (comma-separated)")
    parser.add_argument("--questions", type=int, default=2, help="questions each asker asks, one after another")
    parser.add_argument("--parallel", type=int, default=4, help="the embedded model's parallel sequences")
    parser.add_argument("--threads", type=int, default=0, help="the embedded model's threads (0: every core)")
    parser.add_argument("--batch", type=int, default=0, help="the embedded model's prompt batch (0: llama.cpp's)")
    parser.add_argument("--split-kv", action="store_true", help="a KV cache per sequence instead of one for all")
    parser.add_argument("--kv-context", type=int, default=4096, help="the embedded model's tokens per sequence")
    parser.add_argument("--slots", type=int, default=0, help="scheduler slots (0: --parallel)")
    parser.add_argument("--queue", type=int, default=16, help="questions that may wait for a slot")
    parser.add_argument("--per-user", type=int, default=2, help="runs of one user holding a slot at once")
    parser.add_argument("--model", default=None, help="a litellm model name instead of the embedded model")
    parser.add_argument("--api-base", default=None, help="OPENAI_API_BASE for --model (e.g. tests/fake_openai.py)")
    parser.add_argument("--port", type=int, default=0, help="the server's loopback port (0: any free one)")
    parser.add_argument("--timeout", type=float, default=600, help="seconds before a question counts as timed out")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    parser.add_argument("--cold", action="store_true", help="warm only the first asker's namespace, not each one's")
    args = parser.parse_args()
    if args.api_base:
        os.environ["OPENAI_API_BASE"] = args.api_base
        os.environ.setdefault("OPENAI_API_KEY", "bench")
    levels = [int(n) for n in args.askers.split(",")]
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} CPUs")
    with tempfile.TemporaryDirectory(prefix="datawell-bench-load-") as folder:
        MODELS_CACHE.mkdir(parents=True, exist_ok=True)
        (Path(folder) / "models").symlink_to(MODELS_CACHE)
        settings = Settings(
            _env_file=None,  # type: ignore[call-arg]
            data_dir=Path(folder),
            model=args.model,
            embeddings_enabled=False,
            embedded_model_enabled=args.model is None,
            embedded_model_parallel=args.parallel,
            embedded_model_threads=args.threads,
            embedded_model_batch=args.batch,
            embedded_model_unified_kv=not args.split_kv,
            embedded_model_context=args.kv_context,
            model_slots=args.slots,
            model_queue=args.queue,
            model_runs_per_user=args.per_user,
            llm_timeout_seconds=args.timeout,
        )
        tokens = asyncio.run(load_users(settings, max(levels)))
        port = args.port or free_port()
        server = uvicorn.Server(uvicorn.Config(create_app(settings), host="127.0.0.1", port=port, log_level="warning"))
        thread = threading.Thread(target=server.run, daemon=True)
        thread.start()
        while not server.started:
            time.sleep(0.05)
        base = f"http://127.0.0.1:{port}"
        if embedded.is_registered():
            embedded.runtime().load()  # the load is not a question's time
        # One question per asker first, one after another, not counted: the first question of
        # a process imports and builds what later ones reuse (seconds of a blocked event
        # loop, once), and a namespace's first question prefills its prompt prefix, which the
        # model then keeps in its prompt cache (`--cold` leaves the others' prefixes cold).
        for user in sorted(tokens, key=lambda u: int(u.removeprefix("asker")))[: 1 if args.cold else None]:
            first = ask(base, user, tokens[user], QUESTIONS[0], time.monotonic(), args.timeout)
            print(f"warm-up question of {user}: {first.latency:.2f} s {first.error}")
        results = [level(base, tokens, n, args.questions, args.timeout) for n in levels]
        server.should_exit = True
        thread.join()
    print(f"\nparallel {args.parallel}, threads {args.threads or 'all'}, batch {args.batch or 'default'}, "
          f"KV {'split' if args.split_kv else 'unified'}, {args.kv_context} tokens a sequence, "
          f"slots {args.slots or args.parallel}, queue {args.queue}, per user {args.per_user}, model {args.model or 'embedded'}")  # fmt: skip
    columns = ["askers", "questions", "wall_seconds", "latency_p50", "latency_p95", "first_token_p50",
               "first_token_p95", "tokens_per_second", "errors", "timeouts", "queued", "longest_wait", "behind",
               "health_p99_ms", "prompt_tokens", "cached_share", "prefill_seconds"]  # fmt: skip
    print(" ".join(f"{c:>15}" for c in columns))
    for result in results:
        print(" ".join(f"{result[c]!s:>15}" for c in columns))
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2, default=str) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
