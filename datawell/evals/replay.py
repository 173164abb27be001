"""Replays the queries that saved eval runs ended with through today's query pipeline, offline:
no model, the fixtures loaded into a fresh store, each case scored against its suite's gold.

    python -m datawell.evals.replay docs/evals/dev docs/evals/nl2ql docs/evals/erp \\
        [--history 12] [--save results.json] [--against earlier.json]

Each distinct query a case of a run folder ended with (with `--history N`, also in the last N
committed versions of the folder's predictions.jsonl), as its writer wrote it where the run
recorded that (`written`), is the query model's reply, given by a scripted oracle that knows
only it, so every rule that fits, mends or matches a written query before it runs
(graphs/nl2ql/mending.py) applies to it as it would to the model's; the rules that fired are
read from the run's record. A rule's reach and its harm are measured this way before any model
runs: `--against` the results of a replay of the code before the change lists the queries
whose outcome changed. The gate of the rules (`evals/gate.py`) replays under chosen rules.

What it cannot show: a repair the model would write after a rule changed a query's result, and
the first drafts of cases that ended with no query."""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, replace
from pathlib import Path

from datawell.evals import records, runner, scoring
from datawell.evals.fixtures import FixtureStore, load_fixtures
from datawell.evals.oracle import Gold, OracleChatModel
from datawell.evals.suites import Case, Suite, load_suite
from datawell.llm.embeddings import HashingEmbedder
from datawell.llm.models import FixedChatModels, StageChoices
from datawell.services import Overrides, Services
from datawell.storage import run_records
from datawell.tools.rewrite.registry import ALL

TIMEOUT = 120.0  # seconds one replayed query may take (no model: a stuck query, not a slow one)


@dataclass(frozen=True)
class Replayed:
    """One replayed query of a case: what ran after the pipeline's rules, its score, and the
    rules that changed it on the way (every one the run recorded, in the order they fired)."""

    suite: str
    case_id: str
    written: str  # the query a run ended with, given as the model's reply
    ran: str | None  # what the pipeline ran of it (None: it gave no rows)
    passed: bool
    fired: tuple[str, ...] = ()


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


def written(prediction: records.Prediction) -> str:
    """The query a case ended with as its writer wrote it: the last query event's `model_query`
    (runs since issue 47 record it), else the query that ran (older runs), which the rules of
    its day had already rewritten."""
    said = [e.get("model_query") for e in prediction.events if e.get("type") == "query"]
    return str((said[-1] if said else None) or prediction.query or "").strip()


def written_queries(suite: Suite, predictions: list[records.Prediction]) -> list[tuple[Case, str]]:
    """The distinct queries each answerable case of the suite ended with, as written."""
    cases = {case.id: case for case in suite.cases if not case.expected.refuse}
    found: dict[tuple[str, str], tuple[Case, str]] = {}
    for prediction in predictions:
        query = written(prediction)
        if prediction.case_id in cases and query:
            found.setdefault((prediction.case_id, query), (cases[prediction.case_id], query))
    return list(found.values())


@dataclass
class Replayer:
    """A suite's fixtures, loaded once in a fresh store, on which written queries replay one
    by one: each as the reply of an oracle that knows only it, under a chosen set of rules."""

    suite: Suite
    services: Services
    store: FixtureStore

    async def replay(self, case: Case, query: str, off: frozenset[str] | None = None) -> Replayed:
        """`query` as the model's reply to the case's question, scored on the suite's gold.
        `off`: the rules switched off, every other one on (even one off by default); None:
        the service's default rules."""
        oracle = OracleChatModel(answers=[Gold(question=case.vars.question, query=query)])
        settings = self.services.settings
        if off is not None:
            switches = {"query_rules_disabled": ",".join(sorted(off)), "query_rules_enabled": ALL}
            settings = settings.model_copy(update=switches)
        services = replace(self.services, models=FixedChatModels(oracle), settings=settings)
        targets = runner.default_targets()
        tools = targets.query_tools(services)
        prediction = await runner.predict_case(
            self.suite, case, services, self.store, targets, tools, StageChoices(), TIMEOUT
        )
        result = await scoring.score_case(self.suite, case, prediction, scoring.saved_gold(case, prediction, None))
        fired = await self._fired(prediction.run_id)
        return Replayed(self.suite.name, case.id, query, prediction.query, result.passed, fired)

    async def _fired(self, run_id: str | None) -> tuple[str, ...]:
        if run_id is None:
            return ()
        async with self.services.db.session() as session:
            view = await run_records.get(session, self.store.user, run_id)
        rewrites = view.row.record.get("rewrites", []) if view is not None else []
        return tuple(dict.fromkeys(str(r["rule"]) for r in rewrites))


@asynccontextmanager
async def replayer(suite: Suite, refuse_first: bool = True) -> AsyncIterator[Replayer]:
    """A `Replayer` over the suite's fixtures in a fresh, temporary store. Without
    `refuse_first`, no question is refused before its query is written (the refusal of a
    subject no dataset holds, `query_refuse_unheld_subject`): every query reaches the rules."""
    idle = FixedChatModels(OracleChatModel(answers=[]))  # each query brings its own oracle
    async with runner.eval_services(Overrides(models=idle, embedder=HashingEmbedder())) as services:
        store = await load_fixtures(services, suite)
        if not refuse_first:
            services = replace(
                services, settings=services.settings.model_copy(update={"query_refuse_unheld_subject": False})
            )
        yield Replayer(suite, services, store)


async def replay(folders: list[Path], history: int) -> list[Replayed]:
    found: list[Replayed] = []
    for folder in folders:
        info = records.read_run(folder)
        suite = load_suite(info.suite_path)
        if suite.kind != "nl2ql":
            continue  # only nl2ql runs end with one query a case
        async with replayer(suite) as on:
            for case, query in written_queries(suite, saved_queries(folder, history)):
                found.append(await on.replay(case, query))
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
    found = asyncio.run(replay(args.folders, args.history))
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
