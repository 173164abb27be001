"""Many askers against one real server, two workloads: askers of ONE namespace (a team asking
about the same data: every question shares one prompt prefix) and askers of their OWN
namespaces (no two share a prefix). Each at every level of `--askers` (1, 4, 8), asked in
sequence (one question after another) and at once (every asker together), in one run.

    .venv/bin/python -m bench.load                                    # the embedded model (the lead's run)
    .venv/bin/python -m bench.load --askers 1,4,8 --questions 1 --json docs/bench/load-DATE.json
    .venv/bin/python -m bench.load --share-prompts                    # each call's prompt saved for every sequence
    .venv/bin/python -m tests.fake_openai 18701 --delay 0.2 &         # a fake model, to check the bench
    .venv/bin/python -m bench.load --model openai/fake --api-base http://127.0.0.1:18701/v1 --askers 1,2

Every asker is its own user with the demo in their own namespace `shop`; in the ONE workload
each reads asker1's (granted to read it). Questions go over REST (SSE, as `datawell ask` does).
Before a workload each namespace it uses gets one uncounted question, so its prefix is read
once (`--cold`: none). The server runs in this process on a loopback port with the settings
given here (`--parallel`, `--threads`, `--batch`: the embedded model's parallel sequences, CPU
threads and prompt batch; `--share-prompts`: DATAWELL_EMBEDDED_MODEL_SHARE_PROMPTS; `--slots`,
`--queue`, `--per-user`: the scheduler).

Per workload, level and way it prints: wall time, p50/p95 latency, first-token p95, errors,
time-outs, the most runs of one other user that started while a question waited ("behind"),
`/health` p99 (polled every 50 ms), the share of prompt tokens the model's cache served (the
embedded model's counters), and the scheduler's prefix decisions (hit + restored of all
placed runs, from `/metrics`). Then the ratios: at once / in sequence, and at once / one
question (the median of the one-asker sequence of that workload). The issue-52 targets: ONE,
4 at once <= 0.625x in sequence and never above 1.0x; 8 at once p95 <= 3x one question; OWN,
4 at once <= 2.42x one question.

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
from datawell.observability import metrics
from datawell.services import build_services
from datawell.slots import DECISIONS
from datawell.storage import access

QUESTIONS = [
    "How many orders are there?",
    "Which product sold the most units?",
    "What is the total revenue of all orders?",
    "How many distinct customers placed orders?",
]
MODELS_CACHE = Path(tempfile.gettempdir()) / "datawell-bench-models"
SHARED_OWNER = "asker1"  # whose namespace every asker of the ONE workload reads


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
    """`count` users, each with the demo in their own namespace, and a token each; every one
    may read asker1's namespace (the ONE workload)."""
    services = await build_services(settings)
    try:
        tokens = {}
        for number in range(1, count + 1):
            user, _, _ = await demo.load(services, f"asker{number}")
            _, tokens[user.username] = await services.tokens.issue(user.username, timedelta(hours=2), "bench.load")
        async with services.db.session() as session:
            for number in range(2, count + 1):
                await access.set_grant(session, SHARED_OWNER, demo.NAMESPACE, f"asker{number}", access.Permission.READ)
        return tokens
    finally:
        await services.close()


def ask(base: str, user: str, token: str, owner: str, question: str, origin: float, timeout: float) -> Asked:
    asked = Asked(user, question, sent=time.monotonic() - origin)
    body = {"username": owner, "namespace": demo.NAMESPACE, "query": question}
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


@dataclass(frozen=True)
class Workload:
    name: str  # "one" or "own"
    base: str
    tokens: dict[str, str]
    questions: int  # each asker's
    timeout: float

    def owner(self, user: str) -> str:
        return SHARED_OWNER if self.name == "one" else user

    def picked(self, user: str) -> list[str]:
        offset = int(user.removeprefix("asker"))
        return [QUESTIONS[(offset + i) % len(QUESTIONS)] for i in range(self.questions)]

    def asker(self, user: str, origin: float) -> list[Asked]:
        return [
            ask(self.base, user, self.tokens[user], self.owner(user), q, origin, self.timeout)
            for q in self.picked(user)
        ]


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


def placed(model: str) -> dict[str, float]:
    """The scheduler's placements so far, by how the prefix was found (this process's /metrics)."""
    return {
        decision: sum(
            metrics.REGISTRY.get_sample_value(
                "datawell_model_slot_runs_total", {"model": model, "slot": str(slot), "prefix": decision}
            )
            or 0.0
            for slot in range(64)
        )
        for decision in DECISIONS
    }


def level(work: Workload, model: str, askers: int, at_once: bool) -> dict[str, object]:
    users = sorted(work.tokens, key=lambda u: int(u.removeprefix("asker")))[:askers]
    calls_before = len(embedded.runtime().calls) if embedded.is_registered() else 0
    placed_before = placed(model)
    health: list[float] = []
    stop = threading.Event()
    poller = threading.Thread(target=poll_health, args=(work.base, stop, health), daemon=True)
    poller.start()
    origin = time.monotonic()
    if at_once:
        with ThreadPoolExecutor(askers) as pool:
            futures = [pool.submit(work.asker, u, origin) for u in users]
            asked = [a for future in futures for a in future.result()]
    else:
        asked = [a for u in users for a in work.asker(u, origin)]
    wall = time.monotonic() - origin
    stop.set()
    poller.join()
    answered = [a for a in asked if not a.error and not a.timed_out]
    calls = list(embedded.runtime().calls)[calls_before:] if embedded.is_registered() else []
    decisions = {k: v - placed_before[k] for k, v in placed(model).items()}
    tokens_out = sum(c.output_tokens for c in calls) if calls else sum(a.deltas for a in answered)
    prefixed = sum(v for k, v in decisions.items() if k != "none")
    return {
        "workload": work.name,
        "askers": askers,
        "way": "at once" if at_once else "in turn",
        "questions": len(asked),
        "wall_seconds": round(wall, 2),
        "latency_p50": round(statistics.median([a.latency for a in answered]), 2) if answered else None,
        "latency_p95": round(percentile([a.latency for a in answered], 0.95), 2),
        "first_token_p95": round(percentile([a.first_token - a.sent for a in answered], 0.95), 2),
        "tokens_per_second": round(tokens_out / wall, 2),
        "errors": sum(1 for a in asked if a.error),
        "timeouts": sum(1 for a in asked if a.timed_out),
        "behind": behind(asked),
        "health_p99_ms": round(1000 * percentile(health, 0.99), 1),
        # The embedded model's prompt cache: the share of the level's prompt tokens it served.
        "cached_share": round(sum(c.cached_tokens for c in calls) / max(1, sum(c.prompt_tokens for c in calls)), 2),
        # The scheduler's decisions: runs placed where their prefix was (a slot or the model's cache).
        # (none when no run had a prefix to place: a hosted model, no cost model)
        "prefix_hits": round((decisions["hit"] + decisions["restored"]) / prefixed, 2) if prefixed else None,
        "decisions": decisions,
        "prefill_seconds": round(sum(c.prefill_seconds for c in calls), 1),
        "calls": [asdict(c) for c in calls],
        "load_average": os.getloadavg(),
        "asked": [asdict(a) for a in asked],
    }


def with_ratios(results: list[dict[str, object]]) -> None:
    """Each level's wall time over the same level in turn, and its wall time and p95 over one
    question (the median latency of the workload's one-asker level in turn)."""

    def number(result: dict[str, object], key: str) -> float:
        value = result[key]
        return float(value) if isinstance(value, int | float) else 0.0

    def find(workload: object, askers: object) -> dict[str, object] | None:
        wanted = (workload, askers, "in turn")
        return next((r for r in results if (r["workload"], r["askers"], r["way"]) == wanted), None)

    for result in results:
        turn, one = find(result["workload"], result["askers"]), find(result["workload"], 1)
        single = number(one, "latency_p50") if one else 0.0
        result["x_in_turn"] = round(number(result, "wall_seconds") / number(turn, "wall_seconds"), 2) if turn else None
        result["wall_x_one"] = round(number(result, "wall_seconds") / single, 2) if single else None
        result["p95_x_one"] = round(number(result, "latency_p95") / single, 2) if single else None


def warm(work: Workload, users: list[str]) -> None:
    """One uncounted question for each namespace the workload reads: a process's first
    question builds what later ones reuse, and a namespace's first reads its prefix."""
    owners = sorted({work.owner(u) for u in users}, key=lambda u: int(u.removeprefix("asker")))
    for owner in owners:
        first = ask(work.base, owner, work.tokens[owner], owner, QUESTIONS[0], time.monotonic(), work.timeout)
        print(f"warm-up question of {owner}'s namespace ({work.name}): {first.latency:.2f} s {first.error}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--askers", default="1,4,8", help="askers per level (comma-separated)")
    parser.add_argument("--questions", type=int, default=1, help="questions each asker asks, one after another")
    parser.add_argument("--workloads", default="one,own", help="one (a shared namespace), own (one each), or both")
    parser.add_argument("--parallel", type=int, default=4, help="the embedded model's parallel sequences")
    parser.add_argument("--threads", type=int, default=0, help="the embedded model's threads (0: every core)")
    parser.add_argument("--batch", type=int, default=0, help="the embedded model's prompt batch (0: llama.cpp's)")
    parser.add_argument("--split-kv", action="store_true", help="a KV cache per sequence instead of one for all")
    parser.add_argument("--kv-context", type=int, default=4096, help="the embedded model's tokens per sequence")
    parser.add_argument(
        "--share-prompts", action="store_true", help="the embedded model saves each call's prompt for every sequence"
    )
    parser.add_argument("--slots", type=int, default=0, help="scheduler slots (0: --parallel)")
    parser.add_argument("--queue", type=int, default=16, help="questions that may wait for a slot")
    parser.add_argument("--per-user", type=int, default=2, help="runs of one user holding a slot at once")
    parser.add_argument("--model", default=None, help="a litellm model name instead of the embedded model")
    parser.add_argument("--api-base", default=None, help="OPENAI_API_BASE for --model (e.g. tests/fake_openai.py)")
    parser.add_argument("--port", type=int, default=0, help="the server's loopback port (0: any free one)")
    parser.add_argument("--timeout", type=float, default=600, help="seconds before a question counts as timed out")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    parser.add_argument("--cold", action="store_true", help="no warm-up question before a workload")
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
            embedded_model_share_prompts=args.share_prompts,
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
        results = []
        for name in args.workloads.split(","):
            work = Workload(name, base, tokens, args.questions, args.timeout)
            if not args.cold:
                warm(work, sorted(tokens)[: max(levels)])
            for n in levels:
                results += [level(work, args.model or "embedded", n, at_once) for at_once in (False, True)]
        server.should_exit = True
        thread.join()
    with_ratios(results)
    print(f"\nparallel {args.parallel}, threads {args.threads or 'all'}, batch {args.batch or 'default'}, "
          f"KV {'split' if args.split_kv else 'unified'}, {args.kv_context} tokens a sequence, "
          f"prompts {'shared' if args.share_prompts else 'kept per sequence'}, "
          f"slots {args.slots or args.parallel}, queue {args.queue}, per user {args.per_user}, model {args.model or 'embedded'}")  # fmt: skip
    columns = ["workload", "askers", "way", "questions", "wall_seconds", "x_in_turn", "wall_x_one", "latency_p50",
               "latency_p95", "p95_x_one", "first_token_p95", "errors", "timeouts", "behind", "health_p99_ms",
               "cached_share", "prefix_hits"]  # fmt: skip
    print(" ".join(f"{c:>15}" for c in columns))
    for result in results:
        print(" ".join(f"{result[c]!s:>15}" for c in columns))
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2, default=str) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
