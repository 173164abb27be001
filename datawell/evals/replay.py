"""Replays the queries that saved eval runs ended with through today's query pipeline, offline:
no model, the fixtures loaded into a fresh store, each case scored against its suite's gold.

    python -m datawell.evals.replay docs/evals/dev docs/evals/nl2ql docs/evals/erp \\
        [--history 12] [--save results.json] [--against earlier.json]

Each distinct final query a case of a run folder ended with (with `--history N`, also in the
last N committed versions of the folder's predictions.jsonl) is the query model's reply, given
by the scripted oracle, so every rule that fits, mends or matches a written query before it
runs (graphs/nl2ql/mending.py) applies to it as it would to the model's. A rule's reach and
its harm are measured this way before any model runs: `--against` the results of a replay of
the code before the change lists the queries whose outcome changed.

What it cannot show: a repair the model would write after a rule changed a query's result, and
the first drafts of cases that ended with no query."""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import tempfile
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from datawell.evals import records, runner, scoring
from datawell.evals.oracle import Gold, OracleChatModel
from datawell.evals.suites import Case, Suite, load_suite


@dataclass(frozen=True)
class Replayed:
    """One replayed query of a case: what ran after the pipeline's rules, and its score."""

    suite: str
    case_id: str
    written: str  # the query a run ended with, given as the model's reply
    ran: str | None  # what the pipeline ran of it (None: it gave no rows)
    passed: bool


def saved_queries(folder: Path, history: int = 0) -> list[records.Prediction]:
    """The predictions of the run folder, then those of its last `history` committed versions."""
    found = records.read_predictions(folder / records.PREDICTIONS_FILE)
    if history:
        path = (folder / records.PREDICTIONS_FILE).resolve()
        top = Path(_git(path.parent, "rev-parse", "--show-toplevel").strip())
        inside = path.relative_to(top).as_posix()
        for commit in _git(top, "log", f"-{history}", "--format=%H", "--", inside).split():
            text = _git(top, "show", f"{commit}:{inside}")
            with tempfile.NamedTemporaryFile("w", suffix=".jsonl") as saved:
                saved.write(text)
                saved.flush()
                found += records.read_predictions(Path(saved.name))
    return found


def _git(where: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(where), *args], check=True, capture_output=True, text=True).stdout


def rounds(suite: Suite, predictions: list[records.Prediction]) -> list[list[tuple[Case, str]]]:
    """The distinct queries of each answerable case, as rounds in which each case appears once
    (the oracle finds a case by its question, so a round asks each question once)."""
    cases = {case.id: case for case in suite.cases if not case.expected.refuse}
    queries: dict[str, list[str]] = defaultdict(list)
    for prediction in predictions:
        query = (prediction.query or "").strip()
        if prediction.case_id in cases and query and query not in queries[prediction.case_id]:
            queries[prediction.case_id].append(query)
    deepest = max((len(q) for q in queries.values()), default=0)
    return [[(cases[c], q[i]) for c, q in queries.items() if len(q) > i] for i in range(deepest)]


async def replay_round(suite: Suite, chosen: list[tuple[Case, str]], out: Path) -> list[Replayed]:
    from datawell.llm.embeddings import HashingEmbedder
    from datawell.llm.models import FixedChatModels
    from datawell.services import Overrides

    oracle = OracleChatModel(answers=[Gold(question=case.vars.question, query=query) for case, query in chosen])
    overrides = Overrides(models=FixedChatModels(oracle), embedder=HashingEmbedder())
    subset = suite.model_copy(update={"cases": [case for case, _ in chosen]})
    predictions = await runner.predict(subset, out, targets=runner.default_targets(), overrides=overrides)
    results = await scoring.score_all(subset, predictions)
    ran = {p.case_id: p.query for p in predictions}
    return [
        Replayed(suite.name, result.case_id, query, ran.get(result.case_id), result.passed)
        for (_, query), result in zip(chosen, results, strict=True)
    ]


async def replay(folders: list[Path], history: int, out: Path) -> list[Replayed]:
    found: list[Replayed] = []
    for folder in folders:
        info = records.read_run(folder)
        suite = load_suite(info.suite_path)
        if suite.kind != "nl2ql":
            continue  # only nl2ql runs end with one query a case
        for number, chosen in enumerate(rounds(suite, saved_queries(folder, history))):
            found += await replay_round(suite, chosen, out / f"{suite.name}-{number}")
    return found


def changes(now: list[Replayed], earlier: list[dict[str, object]]) -> list[str]:
    """Lines for the replayed queries whose outcome differs from an earlier replay's."""
    before = {(r["suite"], r["case_id"], r["written"]): r["passed"] for r in earlier}
    lines = []
    for r in now:
        was = before.get((r.suite, r.case_id, r.written))
        if was is not None and was != r.passed:
            lines.append(f"{r.suite} {r.case_id}: {'FAIL -> pass' if r.passed else 'pass -> FAIL'}: {r.written}")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folders", nargs="+", type=Path, help="eval run folders (run.json + predictions.jsonl)")
    parser.add_argument("--history", type=int, default=0, help="also the last N committed versions of each")
    parser.add_argument("--save", type=Path, help="write the results here, as JSON")
    parser.add_argument("--against", type=Path, help="an earlier --save file: print what changed")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        found = asyncio.run(replay(args.folders, args.history, Path(scratch)))
    for name in dict.fromkeys(r.suite for r in found):
        mine = [r for r in found if r.suite == name]
        rewritten = sum(1 for r in mine if r.ran is not None and r.ran != r.written)
        print(
            f"{name}: {sum(r.passed for r in mine)} of {len(mine)} queries pass "
            f"({len({r.case_id for r in mine if r.passed})} of {len({r.case_id for r in mine})} cases); "
            f"{rewritten} changed by the pipeline before they ran"
        )
    if args.save:
        args.save.write_text(json.dumps([r.__dict__ for r in found], indent=1), encoding="utf-8")
    if args.against:
        print("\n".join(changes(found, json.loads(args.against.read_text(encoding="utf-8")))) or "no outcome changed")


if __name__ == "__main__":
    main()
