"""Prediction: run every case of a suite against a fresh store and save what came out.

Each case's output, events, latency and token use are appended to `predictions.jsonl` as
the case finishes, with the results of its gold queries run on the same store, so scoring
never needs the model or the store again. What the runner calls is a `Targets`: the graph
runs of `datawell.runs` by default, fakes in tests."""

from __future__ import annotations

import asyncio
import logging
import shutil
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import aclosing, asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Protocol

from langchain_core.callbacks import get_usage_metadata_callback

from datawell.config import Settings
from datawell.errors import DatawellError, InternalError
from datawell.evals.extraction import predict_extraction
from datawell.evals.fixtures import FixtureStore, load_fixtures
from datawell.evals.records import (
    PREDICTIONS_FILE,
    ErrorInfo,
    GoldResult,
    PredictedLink,
    Prediction,
    RunInfo,
    append_prediction,
    token_usage,
    write_run,
)
from datawell.evals.scoring import gold_queries
from datawell.evals.suites import Case, Suite
from datawell.graphs.events import AnswerDelta, RunResult
from datawell.llm.models import StageChoices
from datawell.runs import AskRequest, CurateRequest, Run, Runs
from datawell.services import Overrides, Services, build_services
from datawell.storage.access import NamespaceRef
from datawell.storage.tables import User
from datawell.tools.ql import QueryResult

log = logging.getLogger(__name__)


class QueryRunner(Protocol):
    async def run(self, user: User, namespace: NamespaceRef, query: str) -> QueryResult: ...


@dataclass(frozen=True)
class Targets:
    """What an eval run calls: the graph runs, and the query tools that run gold queries."""

    runs: Callable[[Services], Runs]
    query_tools: Callable[[Services], QueryRunner]


def default_targets() -> Targets:
    return Targets(runs=Runs, query_tools=lambda services: services.query_tools)


@asynccontextmanager
async def eval_services(
    overrides: Overrides,
    folder: Path | None = None,
    rules_off: list[str] | None = None,
    database_url: str | None = None,
) -> AsyncIterator[Services]:
    """Services over a fresh, empty store in a temporary folder (never the user's data);
    models, keys and limits come from the environment as usual, but the rewrite rules
    `rules_off` names when it does. `database_url`: an empty database to use instead of the
    folder's SQLite (its vectors then go where a deployment's would: pgvector beside PostgreSQL
    rows when the server has it)."""
    own = folder is None
    folder = folder or Path(tempfile.mkdtemp(prefix="datawell-eval-"))
    share_models(folder)
    settings = Settings(
        data_dir=folder,
        database_url=database_url,
        rows_database_url=None,
        qdrant_url=None,
        run_worker_in_process=False,
        retrieved_examples_leave_own_out=True,  # a fixture is named after its database: never its own pairs
    )
    if rules_off:
        settings = settings.model_copy(update={"query_rules_disabled": ",".join(rules_off)})
    services = await build_services(settings, overrides)
    try:
        yield services
    finally:
        await services.close()
        if own:
            shutil.rmtree(folder, ignore_errors=True)


def share_models(folder: Path) -> None:
    """The fresh store uses the models folder of the configured data folder (the joined
    embedded weights and the distilled embedder are caches, not data): otherwise every eval
    run joins the weights and distils the embedder again, two minutes before its first case."""
    models = folder / "models"
    if models.exists():
        return
    shared = Settings().data_dir.resolve() / "models"
    shared.mkdir(parents=True, exist_ok=True)
    models.symlink_to(shared, target_is_directory=True)


def fill(prediction: Prediction, result: RunResult) -> None:
    """What the run produced, as the prediction records it."""
    if result.query is not None:
        prediction.query = result.query.query
        prediction.repairs = max(0, result.query.attempts - 1)
    if result.rows is not None:
        prediction.query = result.rows.query
        prediction.rows = result.rows.rows
    prediction.answer = result.answer_text()
    if result.links is not None:
        prediction.links = [
            PredictedLink(origin=link.origin, destination=link.destination, match_type=link.match_type, hits=link.hits)
            for link in result.links.links
        ]
    if result.failure is not None:
        prediction.error = error_info(result.failure.error)


def error_info(error: DatawellError) -> ErrorInfo:
    """What a case's failure records; for an unexpected exception, the exception itself (a
    client is only told the run failed, but the eval report is for whoever changes the code)."""
    cause = error.__cause__
    if isinstance(error, InternalError) and cause is not None:
        return ErrorInfo(code="EXCEPTION", message=f"{type(cause).__name__}: {cause}")
    return ErrorInfo(code=error.error_code, message=error.message)


async def run_gold(tools: QueryRunner, store: FixtureStore, namespace: str, query: str) -> GoldResult:
    try:
        result = await tools.run(store.user, store.namespace(namespace), query)
    except DatawellError as exc:
        details = "; ".join(s.message for s in exc.sub_errors)
        return GoldResult(query=query, error=f"{exc.message}{': ' + details if details else ''}")
    return GoldResult(query=query, rows=result.rows)


async def start(
    runs: Runs, suite: Suite, case: Case, user: User, namespace: NamespaceRef, choices: StageChoices
) -> Run:
    if suite.kind == "curator":
        return await runs.start_curator(CurateRequest(user, namespace, case.vars.dataset, choices=choices))
    ask = AskRequest(
        user=user,
        namespace=namespace,
        question=case.vars.question,
        choices=choices,
        helper_prompt=case.vars.helper_prompt,
    )
    return await (runs.start_nl2ql if suite.kind == "nl2ql" else runs.start_assistant)(ask)


async def predict_case(
    suite: Suite,
    case: Case,
    services: Services,
    store: FixtureStore,
    targets: Targets,
    tools: QueryRunner,
    choices: StageChoices,
    timeout: float,
) -> Prediction:
    if suite.kind == "extract":
        return await predict_extraction(suite, case, services, store, timeout)
    namespace_name = case.vars.namespace or suite.fixtures[0]
    namespace = store.namespace(namespace_name)
    prediction = Prediction(case_id=case.id, kind=suite.kind, question=case.vars.question, namespace=str(namespace))
    result = RunResult()
    started = time.perf_counter()
    with get_usage_metadata_callback() as usage:
        try:
            async with asyncio.timeout(timeout):
                run = await start(targets.runs(services), suite, case, store.user, namespace, choices)
                prediction.run_id = run.run_id
                async with aclosing(run.events()) as events:
                    async for event in events:
                        result.add(event)
                        if not isinstance(event, AnswerDelta):  # the answer holds them; they would dominate the file
                            prediction.events.append(event.model_dump(mode="json"))
        except DatawellError as exc:
            prediction.error = ErrorInfo(code=exc.error_code, message=exc.message)
        except TimeoutError:
            prediction.error = ErrorInfo(code="TIMEOUT", message=f"no result within {timeout:g} s")
        except Exception as exc:  # one broken case must not lose the others' predictions
            log.exception("case %s failed", case.id)
            prediction.error = ErrorInfo(code="EXCEPTION", message=f"{type(exc).__name__}: {exc}")
    prediction.latency_ms = (time.perf_counter() - started) * 1000
    prediction.tokens = token_usage(dict(usage.usage_metadata))
    fill(prediction, result)  # also what a run cut short by the timeout produced
    for query in gold_queries(suite, case):
        prediction.gold.append(await run_gold(tools, store, namespace_name, query))
    return prediction


async def predict(
    suite: Suite,
    out_dir: Path,
    *,
    targets: Targets,
    overrides: Overrides,
    choices: StageChoices | None = None,
    info: RunInfo | None = None,
    on_case: Callable[[Case, Prediction], None] | None = None,
    timeout: float = 600.0,
    cases: list[Case] | None = None,
    database_url: str | None = None,
) -> list[Prediction]:
    """Load the suite's fixtures into a fresh store and predict every case into `out_dir`
    (`cases`: only these; `database_url`: an empty database for the store, `eval_services`)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / PREDICTIONS_FILE).write_text("", encoding="utf-8")
    info = info or RunInfo(
        suite=suite.name,
        suite_path=str(suite.path or ""),
        kind=suite.kind,
        threshold=suite.threshold,
        started_at=datetime.now(UTC),
    )
    chosen = cases if cases is not None else suite.cases
    info.cases = len(chosen)
    write_run(out_dir, info)
    predictions = []
    async with eval_services(overrides, rules_off=info.rules_off, database_url=database_url) as services:
        store = await load_fixtures(services, suite)
        tools = targets.query_tools(services)
        for case in chosen:
            prediction = await predict_case(
                suite, case, services, store, targets, tools, choices or StageChoices(), timeout
            )
            append_prediction(out_dir, prediction)
            predictions.append(prediction)
            if on_case is not None:
                on_case(case, prediction)
    info.finished_at = datetime.now(UTC)
    write_run(out_dir, info)
    return predictions


@asynccontextmanager
async def gold_store(
    suite: Suite, targets: Targets, overrides: Overrides
) -> AsyncIterator[Callable[[Case, str], Awaitable[GoldResult]]]:
    """Runs gold queries on a freshly loaded fixture store, for re-scoring after a suite's gold
    query changed. No model is called."""
    async with eval_services(overrides) as services:
        store = await load_fixtures(services, suite)
        tools = targets.query_tools(services)

        async def run(case: Case, query: str) -> GoldResult:
            return await run_gold(tools, store, case.vars.namespace or suite.fixtures[0], query)

        yield run
