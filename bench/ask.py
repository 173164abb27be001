"""How fast the assistant answers on the embedded model, through the real REST SSE path.

    .venv/bin/python -m bench.ask [--threads N] [--json FILE]

Loads the bundled demo (customers, orders) into a fresh data folder, starts the service on a
loopback port (the model preloads in the background, as `datawell serve` does), then asks
five questions of different shapes: the demo question first (cold: the first question after
start, in this fresh process), then a count, a filter, a join and a top-N, then the demo
question again (warm: the namespace's prompt prefix is cached by then).

Per question it prints the seconds to `run-started`, to the first `answer-delta` and in
all; per model call the server's own counters: prompt tokens, tokens taken from its prompt
cache, prefill seconds, output tokens, decode seconds, the call's wall time, and the floor
for that call, computed from the prefill and decode rates measured in this same run:
uncached prompt tokens / prefill rate + output tokens / decode rate. Row embeddings are
off (they would load a second model and compete for the cores); everything else is the
default configuration."""

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
from dataclasses import asdict, dataclass, field
from datetime import timedelta
from pathlib import Path

import uvicorn

from datawell import demo
from datawell.app import create_app
from datawell.client import Client
from datawell.config import Settings
from datawell.llm import embedded, embedded_runtime
from datawell.services import build_services

QUESTIONS = [
    ("demo (join, top 1)", demo.NAMESPACE, "Which customer spent the most in total, and how much?"),
    ("count", demo.NAMESPACE, "How many customers live in the United States?"),
    ("filter", demo.NAMESPACE, "Which orders were for more than 2 units? Give order id, product and quantity."),
    ("join", demo.NAMESPACE, "Which products did Ada Lovelace order?"),
    ("top-N", demo.NAMESPACE, "What are the three products with the most units ordered?"),
    ("demo again (warm)", demo.NAMESPACE, "Which customer spent the most in total, and how much?"),
]

MODELS_CACHE = Path(tempfile.gettempdir()) / "datawell-bench-models"


@dataclass
class Asked:
    label: str
    question: str
    to_run_started: float = 0.0
    to_first_delta: float = 0.0
    total: float = 0.0
    answer: str = ""
    error: str = ""
    calls: list[embedded_runtime.CallStats] = field(default_factory=list)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def load_demo(settings: Settings) -> str:
    """The demo data through the real ingestion path, and an hour's token for its owner."""
    services = await build_services(settings)
    try:
        user, _, _ = await demo.load(services, "bench")
        _, token = await services.tokens.issue(user.username, timedelta(hours=1), "bench.ask")
        return token
    finally:
        await services.close()


def ask(client: Client, label: str, namespace: str, question: str) -> Asked:
    asked = Asked(label, question)
    seen = len(embedded.runtime().calls)
    started = time.monotonic()
    try:
        for event in client.ask(namespace, question):
            now = time.monotonic() - started
            if event.event == "run-started":
                asked.to_run_started = now
            elif event.event == "answer-delta" and not asked.to_first_delta:
                asked.to_first_delta = now
            elif event.event == "answer":
                asked.answer = str(event.data.get("text") or event.data)
    except Exception as error:  # a failed run is a result of the bench, not its end
        asked.error = str(error)
    asked.total = time.monotonic() - started
    asked.calls = list(embedded.runtime().calls)[seen:]
    return asked


def rates(asked: list[Asked]) -> tuple[float, float]:
    """Prefill and decode tokens per second over every call of the run. Prefills of a few
    tokens (a cached prefix) are left out: their fixed cost is not a rate."""
    calls = [c for a in asked for c in a.calls]
    filled = [c for c in calls if c.prompt_tokens - c.cached_tokens >= 32]
    prefill = sum(c.prompt_tokens - c.cached_tokens for c in filled) / max(sum(c.prefill_seconds for c in filled), 1e-9)
    decode = sum(c.output_tokens for c in calls) / max(sum(c.decode_seconds for c in calls), 1e-9)
    return prefill, decode


def floor(call: embedded_runtime.CallStats, prefill: float, decode: float) -> float:
    return (call.prompt_tokens - call.cached_tokens) / prefill + call.output_tokens / decode


def report(asked: list[Asked], load_seconds: float | None, threads: int) -> dict[str, object]:
    prefill, decode = rates(asked)
    print(f"threads {threads} of {os.cpu_count()} cores; model load {load_seconds or 0:.1f} s")
    print(f"rates measured in this run: prefill {prefill:.1f} tokens/s, decode {decode:.1f} tokens/s\n")
    print(f"{'question':<20} {'started':>8} {'1st delta':>9} {'total':>7}  calls (prompt/cached tokens, out)")
    worst = 0.0
    for a in asked:
        shapes = ", ".join(f"{c.prompt_tokens}/{c.cached_tokens}+{c.output_tokens}" for c in a.calls)
        print(f"{a.label:<20} {a.to_run_started:8.2f} {a.to_first_delta:9.2f} {a.total:7.2f}  {shapes}")
    print(
        f"\n{'call':<24} {'prompt':>6} {'cached':>6} {'prefill s':>9} {'out':>4} {'decode s':>8} {'wall s':>7} {'floor s':>7} {'x floor':>7}"
    )
    for a in asked:
        for number, c in enumerate(a.calls, 1):
            least = floor(c, prefill, decode)
            worst = max(worst, c.wall_seconds / least if least else 0)
            print(
                f"{a.label[:20] + ' #' + str(number):<24} {c.prompt_tokens:6d} {c.cached_tokens:6d} "
                f"{c.prefill_seconds:9.2f} {c.output_tokens:4d} {c.decode_seconds:8.2f} {c.wall_seconds:7.2f} "
                f"{least:7.2f} {c.wall_seconds / least if least else 0:7.2f}"
            )
    warm = [a for a in asked[1:] if not a.error]
    summary = {
        "cold_total": asked[0].total,
        "cold_first_delta": asked[0].to_first_delta,
        "warm_median_total": statistics.median(a.total for a in warm) if warm else None,
        "warm_median_first_delta": statistics.median(a.to_first_delta for a in warm) if warm else None,
        "worst_call_vs_floor": worst,
        "prefill_tokens_per_second": prefill,
        "decode_tokens_per_second": decode,
        "threads": threads,
        "model_load_seconds": load_seconds,
        "load_average": os.getloadavg(),
    }
    print()
    for key, value in summary.items():
        print(f"{key:<26} {value}")
    print("\nanswers:")
    for a in asked:
        print(f"- {a.question}\n  {a.error or a.answer}")
    return {"summary": summary, "questions": [asdict(a) for a in asked]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--threads", type=int, default=0, help="model threads (0: the service's default)")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    args = parser.parse_args()
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} CPUs")
    with tempfile.TemporaryDirectory(prefix="datawell-bench-ask-") as folder:
        # The joined weights are kept between runs (a restart, not a first install, is
        # measured): the first run joins them into the cache folder.
        MODELS_CACHE.mkdir(parents=True, exist_ok=True)
        (Path(folder) / "models").symlink_to(MODELS_CACHE)
        settings = Settings(
            _env_file=None,  # type: ignore[call-arg]
            data_dir=Path(folder),
            model=None,
            plan_model=None,
            query_model=None,
            answer_model=None,
            embeddings_enabled=False,
            embedded_model_threads=args.threads,
            llm_timeout_seconds=600,
        )
        token = asyncio.run(load_demo(settings))
        port = free_port()
        server = uvicorn.Server(uvicorn.Config(create_app(settings), host="127.0.0.1", port=port, log_level="warning"))
        thread = threading.Thread(target=server.run, daemon=True)
        thread.start()
        while not server.started:
            time.sleep(0.05)
        asked = []
        with Client(f"http://127.0.0.1:{port}", token, timeout=600) as client:
            for label, namespace, question in QUESTIONS:
                asked.append(ask(client, label, namespace, question))
        server.should_exit = True
        thread.join()
        runtime = embedded.runtime()
        figures = report(asked, runtime.load_seconds, runtime.options.threads or embedded_runtime.default_threads())
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2, default=str) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
