"""`datawell eval`: run a suite, re-score saved predictions, compare two reports.

Exit codes: 0 the pass rate reached the suite's threshold (or compare found nothing to
fail on), 1 it did not, 2 the suite or an argument is invalid."""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from datawell.config import Settings
from datawell.errors import DatawellError, ModelError
from datawell.evals import records, report, scoring, suites
from datawell.evals.suites import Case, Suite, SuiteError

if TYPE_CHECKING:
    from datawell.evals.judge import ModelJudge
    from datawell.llm.models import StageChoices

# Graphs and model clients are imported by the commands that run them: list, compare, summary answer at once.

eval_app = typer.Typer(help="Prompt evals: run suites, re-score predictions, compare reports.", no_args_is_help=True)
console = Console(stderr=True)

EXIT_BELOW_THRESHOLD = 1
EXIT_INVALID = 2


def _fail(message: str) -> typer.Exit:
    typer.echo(f"error: {message}", err=True)
    return typer.Exit(EXIT_INVALID)


def _load(name: str | Path) -> Suite:
    try:
        return suites.load_suite(name)
    except SuiteError as exc:
        raise _fail(str(exc)) from None


def _judge(judge_model: str | None, prompt_dir: Path | None) -> ModelJudge | None:
    if not judge_model:
        return None
    from datawell.evals.judge import ModelJudge
    from datawell.llm.models import StageChoices
    from datawell.prompts import PromptLibrary
    from datawell.services import default_models

    choices = StageChoices.named(judge_model)
    return ModelJudge(default_models(Settings()).for_stage("judge", choices), PromptLibrary(prompt_dir))


def _select(suite: Suite, case_ids: list[str], tags: list[str]) -> list[Case]:
    chosen = [
        c for c in suite.cases if (not case_ids or c.id in case_ids) and (not tags or set(tags) & set(suite.tags(c)))
    ]
    unknown = set(case_ids) - {c.id for c in suite.cases}
    if unknown:
        raise _fail(f"no cases {sorted(unknown)} in suite {suite.name}")
    if not chosen:
        raise _fail("no case matches the given --case/--tag")
    return chosen


def _write(result: report.Report, out: Path) -> None:
    json_path, md_path = report.write_report(out, result)
    for line in report.summary_lines(result):
        typer.echo(line)
    typer.echo(f"report: {md_path} and {json_path}")


def _finish(result: report.Report, out: Path) -> None:
    _write(result, out)
    if not result.passed:
        raise typer.Exit(EXIT_BELOW_THRESHOLD)


def _default_out(name: str) -> Path:
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    return Path("eval-results") / f"{name}-{stamp}"


def _resolved_model(choices: StageChoices) -> str | None:
    """The model the run's queries go to, as the report should name it (None if none can)."""
    from datawell.llm.litellm_models import LiteLLMChatModels

    try:
        return LiteLLMChatModels(Settings()).model_name("query", choices)
    except ModelError:
        return None


@dataclass(frozen=True)
class RunOptions:
    """What `run` and `all` take from the command line for every suite they run."""

    choices: StageChoices
    prompt_dir: Path | None = None
    scripted: bool = False
    judge_model: str | None = None
    timeout: float = 600.0
    rules_off: tuple[str, ...] = ()  # query rewrite rules switched off (issue 47)


def run_suite(
    suite: Suite, out: Path, options: RunOptions, *, cases: list[Case] | None = None, suite_ref: str | None = None
) -> report.Report:
    """Predict `cases` (default all) of `suite`, save them in `out` and score them; the
    caller writes the report. Raises `SuiteError`/`DatawellError`."""
    from datawell.evals import runner
    from datawell.evals.oracle import oracle_for
    from datawell.llm.embeddings import HashingEmbedder
    from datawell.llm.models import FixedChatModels
    from datawell.prompts import PromptLibrary
    from datawell.services import Overrides

    choices, prompt_dir, scripted = options.choices, options.prompt_dir, options.scripted
    chosen = cases or suite.cases
    overrides = Overrides(
        models=FixedChatModels(oracle_for(suite)) if scripted else None,
        embedder=HashingEmbedder() if scripted else None,
        prompts=PromptLibrary(prompt_dir.resolve()) if prompt_dir else None,
    )
    settings = Settings()
    info = records.RunInfo(
        suite=suite.name,
        suite_path=suite_ref or str(suite.path or suite.name),
        kind=suite.kind,
        model=None if scripted else _resolved_model(choices),
        prompt_dir=str(prompt_dir) if prompt_dir else None,
        scripted=scripted,
        rules_off=_in_effect(options.rules_off),
        **settings.model_dump(include=set(records.SETTINGS_RECORDED)),
        threshold=suite.threshold,
        held_out=suite.held_out,
        started_at=datetime.now(UTC),
    )
    judge = _judge(options.judge_model, prompt_dir)

    async def work() -> report.Report:
        with Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TextColumn("{task.fields[last]}"),
            console=console,
        ) as progress:
            task = progress.add_task(f"{suite.name}: loading fixtures", total=len(chosen), last="")

            def done(case: Case, prediction: records.Prediction) -> None:
                status = prediction.error.code if prediction.error else "ok"
                label = "a case" if suite.held_out else case.id  # a held-out suite's cases are not read
                progress.update(task, advance=1, description=suite.name, last=f"{label}: {status}")
                if not console.is_terminal:  # a log file or CI: no live bar, so one line per case
                    finished = int(progress.tasks[0].completed)
                    seconds = prediction.latency_ms / 1000
                    console.print(f"{suite.name} {finished}/{len(chosen)} {label}: {status} ({seconds:.0f} s)")

            predictions = await runner.predict(
                suite,
                out,
                targets=runner.default_targets(),
                overrides=overrides,
                choices=choices,
                info=info,
                on_case=done,
                timeout=options.timeout,
                cases=chosen,
            )
        results = await scoring.score_all(_subset(suite, chosen), predictions, judge)
        return report.build_report(records.read_run(out), suite.threshold, results)

    return asyncio.run(work())


def _suite_ref(name: str, suite: Suite) -> str:
    """How run.json names the suite: a bundled one by its name, so the saved run can be
    re-scored on another machine; a file by its path."""
    return name if suite.path in suites.bundled_suites() and not Path(name).exists() else str(suite.path or name)


_MODEL_OPTION = typer.Option(help="Model for every stage, as a litellm name (provider/model).")
_PROVIDER_OPTION = typer.Option(help="Provider, when --model does not name it.")
_PROMPT_DIR_OPTION = typer.Option(help="Load prompts from this folder (missing ones fall back to the bundled).")
_SCRIPTED_OPTION = typer.Option(help="Answer with the suite's gold values (a plumbing check; no model is called).")
_JUDGE_OPTION = typer.Option(help="Model for llm-judge assertions (off without it).")
_TIMEOUT_OPTION = typer.Option(help="Seconds one case may take.")
_RULES_OFF_OPTION = typer.Option(
    "--rules-off", help="Query rewrite rules to switch off, comma-separated ('all': every one; docs/query-rewrites.md)."
)


def _rules_off(names: str) -> tuple[str, ...]:
    from datawell.tools.rewrite.registry import RULES, disabled_rules

    try:
        off = disabled_rules(names)
    except ValueError as exc:
        raise _fail(f"--rules-off: {exc}") from None
    return tuple(name for name in RULES if name in off)  # in the order the rules run


def _in_effect(off: tuple[str, ...]) -> list[str]:
    """The rules a run leaves off: those named, and those off by default that the environment
    does not switch on (DATAWELL_QUERY_RULES_ENABLED), in the order the rules run."""
    from datawell.config import Settings
    from datawell.tools.rewrite.registry import RULES, rules_off

    names = rules_off(",".join(off), Settings().query_rules_enabled)
    return [name for name in RULES if name in names]


def _choices(model: str | None, provider: str | None) -> StageChoices:
    from datawell.llm.models import StageChoices

    return StageChoices.named(model, provider)


def _check_prompt_dir(prompt_dir: Path | None) -> None:
    if prompt_dir is not None and not prompt_dir.is_dir():
        raise _fail(f"--prompt-dir {prompt_dir} is not a folder")


@eval_app.command("run")
def run_command(
    suite_name: Annotated[str, typer.Argument(metavar="SUITE", help="A suite file, or the name of a bundled suite.")],
    model: Annotated[str | None, _MODEL_OPTION] = None,
    provider: Annotated[str | None, _PROVIDER_OPTION] = None,
    prompt_dir: Annotated[Path | None, _PROMPT_DIR_OPTION] = None,
    out: Annotated[Path | None, typer.Option(help="Folder for predictions and reports.")] = None,
    scripted: Annotated[bool, _SCRIPTED_OPTION] = False,
    judge_model: Annotated[str | None, _JUDGE_OPTION] = None,
    case: Annotated[list[str] | None, typer.Option("--case", help="Run only this case (repeatable).")] = None,
    tag: Annotated[list[str] | None, typer.Option("--tag", help="Run only cases with this tag (repeatable).")] = None,
    timeout: Annotated[float, _TIMEOUT_OPTION] = 600.0,
    rules_off: Annotated[str, _RULES_OFF_OPTION] = "",
) -> None:
    """Run SUITE: predict every case, save the predictions, score them and write a report."""
    suite = _load(suite_name)
    _check_prompt_dir(prompt_dir)
    chosen = _select(suite, case or [], tag or [])
    options = RunOptions(_choices(model, provider), prompt_dir, scripted, judge_model, timeout, _rules_off(rules_off))
    out = out or _default_out(_folder_name(suite))
    try:
        result = run_suite(suite, out, options, cases=chosen, suite_ref=_suite_ref(suite_name, suite))
    except (SuiteError, DatawellError) as exc:
        raise _fail(str(exc)) from None
    _finish(result, out)


@eval_app.command("all")
def all_command(
    suite_names: Annotated[
        list[str] | None,
        typer.Argument(metavar="[SUITE]...", help="Suite files or bundled names (default: every bundled suite)."),
    ] = None,
    model: Annotated[str | None, _MODEL_OPTION] = None,
    provider: Annotated[str | None, _PROVIDER_OPTION] = None,
    prompt_dir: Annotated[Path | None, _PROMPT_DIR_OPTION] = None,
    out: Annotated[Path | None, typer.Option(help="Folder for the runs: one sub-folder per suite.")] = None,
    scripted: Annotated[bool, _SCRIPTED_OPTION] = False,
    judge_model: Annotated[str | None, _JUDGE_OPTION] = None,
    timeout: Annotated[float, _TIMEOUT_OPTION] = 600.0,
) -> None:
    """Run several suites, each into OUT/<suite>/, and write OUT/README.md: their totals in one table.

    Every suite runs even when an earlier one fails; the exit code is 1 when any suite is
    below its threshold."""
    names = suite_names or [path.stem for path in suites.bundled_suites()]
    loaded = [(name, _load(name)) for name in names]
    _check_prompt_dir(prompt_dir)
    out = out or _default_out("all")
    options = RunOptions(_choices(model, provider), prompt_dir, scripted, judge_model, timeout)
    results: list[tuple[str, report.Report]] = []
    for name, suite in loaded:
        folder = out / _folder_name(suite)
        try:
            result = run_suite(suite, folder, options, suite_ref=_suite_ref(name, suite))
        except (SuiteError, DatawellError) as exc:
            typer.echo(f"error: {suite.name}: {exc}", err=True)
            continue
        _write(result, folder)
        results.append((folder.name, result))
    summary = _write_summary(out, results)
    typer.echo(f"summary: {summary}")
    if len(results) < len(loaded):
        raise typer.Exit(EXIT_INVALID)
    if not all(result.passed for _, result in results):
        raise typer.Exit(EXIT_BELOW_THRESHOLD)


@eval_app.command("summary")
def summary_command(
    folder: Annotated[Path, typer.Argument(help="A folder of run folders (as `datawell eval all` writes).")],
) -> None:
    """Write FOLDER/README.md again from the reports in FOLDER's sub-folders."""
    found = sorted(path.parent for path in folder.glob(f"*/{report.REPORT_JSON}"))
    if not found:
        raise _fail(f"{folder} has no run folders with a {report.REPORT_JSON}")
    try:
        results = [(path.name, report.read_report(path)) for path in found]
    except (OSError, ValueError) as exc:
        raise _fail(f"cannot read a report: {exc}") from None
    typer.echo(f"summary: {_write_summary(folder, results)}")


def _folder_name(suite: Suite) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "-", suite.name)


def _write_summary(folder: Path, results: list[tuple[str, report.Report]]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "README.md"
    path.write_text(report.render_summary(sorted(results, key=lambda run: run[0])), encoding="utf-8")
    return path


def _subset(suite: Suite, cases: list[Case]) -> Suite:
    return suite if len(cases) == len(suite.cases) else suite.model_copy(update={"cases": cases})


@eval_app.command("score")
def score_command(
    predictions: Annotated[Path, typer.Argument(help="A run folder (or its predictions.jsonl).")],
    suite_name: Annotated[
        str | None, typer.Option("--suite", help="Score against this suite (default: the one the run used).")
    ] = None,
    judge_model: Annotated[str | None, typer.Option(help="Model for llm-judge assertions (off without it).")] = None,
    out: Annotated[Path | None, typer.Option(help="Folder for the report (default: the run folder).")] = None,
) -> None:
    """Score saved predictions again, without calling the model.

    For after a change to assertions or gold values. Only a judge model (when given) is
    called; gold queries changed since the run are run on a freshly loaded fixture store."""
    folder = predictions if predictions.is_dir() else predictions.parent
    if not (folder / records.RUN_FILE).is_file():
        raise _fail(f"{folder} has no {records.RUN_FILE}: give a folder written by `datawell eval run`")
    info = records.read_run(folder)
    suite = _load(suite_name or info.suite_path)
    info = info.model_copy(update={"held_out": suite.held_out})  # runs recorded before the flag
    saved = records.read_predictions(predictions)
    ran = {p.case_id for p in saved}
    suite = _subset(suite, [c for c in suite.cases if c.id in ran])
    judge = _judge(judge_model, Path(info.prompt_dir) if info.prompt_dir else None)

    async def work() -> list[scoring.CaseResult]:
        if not scoring.missing_gold_queries(suite, saved):
            return await scoring.score_all(suite, saved, judge)
        from datawell.evals import runner
        from datawell.llm.embeddings import HashingEmbedder
        from datawell.services import Overrides

        overrides = Overrides(embedder=HashingEmbedder() if info.scripted else None)
        async with runner.gold_store(suite, runner.default_targets(), overrides) as fallback:
            return await scoring.score_all(suite, saved, judge, fallback)

    try:
        results = asyncio.run(work())
    except (SuiteError, DatawellError) as exc:
        raise _fail(str(exc)) from None
    _finish(report.build_report(info, suite.threshold, results), out or folder)


@eval_app.command("compare")
def compare_command(
    a: Annotated[Path, typer.Argument(help="The earlier report (run folder or report.json).")],
    b: Annotated[Path, typer.Argument(help="The later report.")],
    fail_on_regression: Annotated[bool, typer.Option(help="Exit 1 when a case that passed in A fails in B.")] = False,
) -> None:
    """Show per-case differences between two reports of the same suite."""
    try:
        first, second = report.read_report(a), report.read_report(b)
    except (OSError, ValueError) as exc:
        raise _fail(f"cannot read a report: {exc}") from None
    if first.run.suite != second.run.suite:
        typer.echo(f"note: comparing different suites ({first.run.suite} and {second.run.suite})", err=True)
    comparison = report.compare(first, second, str(a), str(b))
    typer.echo(report.render_comparison(comparison), nl=False)
    if fail_on_regression and comparison.regressions:
        raise typer.Exit(EXIT_BELOW_THRESHOLD)


@eval_app.command("list")
def list_command() -> None:
    """List the bundled suites."""
    for path in suites.bundled_suites():
        suite = _load(path)
        typer.echo(f"{path.stem}\t{suite.kind}\t{len(suite.cases)} cases\t{suite.description}")
