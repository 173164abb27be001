"""Reports: per case, per tag, per difficulty and in total (means with standard errors),
as JSON (`report.json`, what `compare` reads) and Markdown (`report.md`, for people)."""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Iterable
from pathlib import Path

from pydantic import BaseModel, Field

from datawell.evals import metrics
from datawell.evals.records import RunInfo
from datawell.evals.scoring import CaseResult, failure_kind

REPORT_JSON = "report.json"
REPORT_MD = "report.md"
DIFFICULTIES = ("easy", "medium", "hard")


class Stat(BaseModel):
    mean: float
    se: float
    n: int

    def text(self, percent: bool = False) -> str:
        if percent:
            return f"{100 * self.mean:.1f}% ± {100 * self.se:.1f}"
        return f"{self.mean:.3g} ± {self.se:.2g}"


class GroupStats(BaseModel):
    n: int
    passed: int
    pass_rate: Stat
    score: Stat
    metrics: dict[str, Stat] = Field(default_factory=dict)
    latency_ms_mean: float
    latency_ms_p50: float
    latency_ms_p95: float
    tokens_total: int | None
    tokens_mean: float | None


class FailureGroup(BaseModel):
    """The failed cases of one kind (`scoring.failure_kind`): how many, and their tags."""

    n: int
    tags: dict[str, int] = Field(default_factory=dict)  # most first; tags every case has are left out


class Report(BaseModel):
    run: RunInfo
    threshold: float
    passed: bool  # the pass rate reached the threshold
    totals: GroupStats
    by_difficulty: dict[str, GroupStats]
    by_tag: dict[str, GroupStats]
    failures: dict[str, FailureGroup] = Field(default_factory=dict)  # by kind, most first
    cases: list[CaseResult]
    skipped_assertions: int = 0


def _stat(values: list[float]) -> Stat:
    found = metrics.estimate(values)
    return Stat(mean=found.mean, se=found.se, n=found.n)


def group(results: list[CaseResult]) -> GroupStats:
    names = sorted({name for r in results for name in r.metrics})
    tokens = [r.tokens for r in results if r.tokens is not None]
    latencies = [r.latency_ms for r in results]
    return GroupStats(
        n=len(results),
        passed=sum(r.passed for r in results),
        pass_rate=_stat([float(r.passed) for r in results]),
        score=_stat([r.score for r in results]),
        metrics={name: _stat([r.metrics[name] for r in results if name in r.metrics]) for name in names},
        latency_ms_mean=sum(latencies) / len(latencies) if latencies else 0.0,
        latency_ms_p50=metrics.percentile(latencies, 0.5),
        latency_ms_p95=metrics.percentile(latencies, 0.95),
        tokens_total=sum(tokens) if tokens else None,
        tokens_mean=sum(tokens) / len(tokens) if tokens else None,
    )


def build_report(run: RunInfo, threshold: float, results: list[CaseResult]) -> Report:
    by_tag: dict[str, list[CaseResult]] = defaultdict(list)
    by_difficulty: dict[str, list[CaseResult]] = defaultdict(list)
    for result in results:
        by_difficulty[result.difficulty].append(result)
        for tag in result.tags:
            by_tag[tag].append(result)
    totals = group(results)
    return Report(
        run=run,
        threshold=threshold,
        passed=totals.pass_rate.mean >= threshold,
        totals=totals,
        by_difficulty={d: group(by_difficulty[d]) for d in DIFFICULTIES if d in by_difficulty},
        by_tag={t: group(by_tag[t]) for t in sorted(by_tag)},
        failures=failures(results),
        cases=results,
        skipped_assertions=sum(o.passed is None for r in results for o in r.outcomes),
    )


def failures(results: list[CaseResult]) -> dict[str, FailureGroup]:
    """The failed cases by kind, most first, each with its cases' tags (but those every case
    of the run has): what a held-out suite is read by instead of its cases."""
    everywhere = set.intersection(*(set(r.tags) for r in results)) if results else set()
    kinds: defaultdict[str, list[CaseResult]] = defaultdict(list)
    for result in results:
        if not result.passed:
            kinds[failure_kind(result)].append(result)
    found = {}
    for kind, failed in sorted(kinds.items(), key=lambda item: (-len(item[1]), item[0])):
        tags = Counter(tag for r in failed for tag in r.tags if tag not in everywhere)
        found[kind] = FailureGroup(n=len(failed), tags=dict(sorted(tags.items(), key=lambda t: (-t[1], t[0]))))
    return found


def _cell(text: str, limit: int = 120) -> str:
    text = " ".join(text.split()).replace("|", "\\|")
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _metrics_text(stats: GroupStats) -> str:
    return ", ".join(f"{name} {stat.text()}" for name, stat in stats.metrics.items())


def _group_rows(label: str, groups: dict[str, GroupStats]) -> list[str]:
    lines = [f"| {label} | n | pass rate | score | metrics | latency p50 (ms) |", "|---|---|---|---|---|---|"]
    for name, stats in groups.items():
        lines.append(
            f"| {name} | {stats.n} | {stats.pass_rate.text(percent=True)} | {stats.score.text()} "
            f"| {_metrics_text(stats)} | {stats.latency_ms_p50:.0f} |"
        )
    return lines


def render_markdown(report: Report) -> str:
    run, totals = report.run, report.totals
    model = _model_text(run)
    verdict = "PASSED" if report.passed else "FAILED"
    lines = [
        f"# Eval report: {run.suite}",
        "",
        f"- kind: {run.kind}; model: {model}; prompts: {run.prompt_dir or 'bundled'}"
        + (f"; query rules off: {', '.join(run.rules_off)}" if run.rules_off else "")
        + (f"; retrieved examples: {run.retrieved_examples}" if run.retrieved_examples else "")
        + ("; query grammar: on" if run.query_grammar else "")
        + ("; query grammar on repairs: on" if run.query_grammar_repairs else "")
        + ("; schema linking: on" if run.schema_linking else "")
        + ("; linked join path: on" if run.schema_linking_joins else ""),
        f"- run: {run.started_at:%Y-%m-%d %H:%M} UTC, {totals.n} cases",
        f"- **{verdict}**: pass rate {totals.pass_rate.text(percent=True)} (threshold {100 * report.threshold:.0f}%)",
        f"- score {totals.score.text()}" + (f"; {_metrics_text(totals)}" if totals.metrics else ""),
        f"- latency mean {totals.latency_ms_mean:.0f} ms, p50 {totals.latency_ms_p50:.0f} ms, p95 {totals.latency_ms_p95:.0f} ms"
        + (f"; tokens {totals.tokens_total} total, {totals.tokens_mean:.0f} per case" if totals.tokens_total else ""),
    ]
    if report.skipped_assertions:
        lines.append(f"- {report.skipped_assertions} LLM-judge assertions skipped (no judge model given)")
    lines += [
        "",
        "Means ± standard error.",
        "",
        "## By difficulty",
        "",
        *_group_rows("difficulty", report.by_difficulty),
    ]
    lines += ["", "## By tag", "", *_group_rows("tag", report.by_tag)]
    lines += ["", "## Failures by kind", "", *_failure_rows(report), "", "## Cases", ""]
    if run.held_out:
        return "\n".join([*lines, HELD_OUT_NOTE]) + "\n"
    lines += [
        "| case | result | score | latency (ms) | tokens | output | notes |",
        "|---|---|---|---|---|---|---|",
    ]
    for case in report.cases:
        notes = "; ".join(
            f"{o.type}: {o.detail}" for o in case.outcomes if o.detail and (o.passed is False or o.passed is None)
        )
        lines.append(
            f"| {case.case_id} | {'pass' if case.passed else 'FAIL'} | {case.score:.2f} | {case.latency_ms:.0f} "
            f"| {case.tokens if case.tokens is not None else '-'} | {_cell(case.output, 80)} | {_cell(notes)} |"
        )
    return "\n".join(lines) + "\n"


HELD_OUT_NOTE = (
    "Not shown: this suite is held out. It decides and is never read case by case, so its "
    "reports and comparisons give totals, tags and failure kinds only (report.json keeps the "
    "cases, for re-scoring)."
)


def _failure_rows(report: Report) -> list[str]:
    if not report.failures:
        return ["No case failed."]
    lines = ["| kind | cases | their tags |", "|---|---|---|"]
    for kind, found in report.failures.items():
        tags = ", ".join(f"{tag} {count}" for tag, count in found.tags.items()) or "-"
        lines.append(f"| {kind} | {found.n} | {tags} |")
    return lines


def _model_text(run: RunInfo) -> str:
    return "scripted oracle" if run.scripted else (run.model or "the configured default")


def render_summary(runs: list[tuple[str, Report]]) -> str:
    """One table over several runs (folder name, report), as `datawell eval all` writes it."""
    lines = [
        "# Eval runs",
        "",
        "Means ± standard error. Each suite's folder holds its `report.md` (per case, per tag, "
        "per difficulty), `report.json` and the saved predictions.",
        "",
        "| suite | model | cases | passed | pass rate | score | metrics | latency p50 (s) | threshold | result |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for folder, result in runs:
        totals = result.totals
        lines.append(
            f"| [{result.run.suite}]({folder}/{REPORT_MD}) | {_model_text(result.run)} | {totals.n} | {totals.passed} "
            f"| {totals.pass_rate.text(percent=True)} | {totals.score.text()} | {_metrics_text(totals)} "
            f"| {totals.latency_ms_p50 / 1000:.0f} | {100 * result.threshold:.0f}% "
            f"| {'passed' if result.passed else 'FAILED'} |"
        )
    return "\n".join(lines) + "\n"


def write_report(folder: Path, report: Report) -> tuple[Path, Path]:
    folder.mkdir(parents=True, exist_ok=True)
    json_path, md_path = folder / REPORT_JSON, folder / REPORT_MD
    json_path.write_text(report.model_dump_json(indent=2) + "\n", encoding="utf-8")
    md_path.write_text(render_markdown(report), encoding="utf-8")
    return json_path, md_path


def read_report(path: Path) -> Report:
    file = path / REPORT_JSON if path.is_dir() else path
    return Report.model_validate_json(file.read_text(encoding="utf-8"))


class CaseChange(BaseModel):
    case_id: str
    before: bool | None  # None: the case is not in that report
    after: bool | None
    score_before: float | None
    score_after: float | None

    @property
    def kind(self) -> str:
        if self.before is None:
            return "added"
        if self.after is None:
            return "removed"
        if self.before and not self.after:
            return "regression"
        if self.after and not self.before:
            return "fixed"
        return "score"


class Comparison(BaseModel):
    a: str
    b: str
    pass_rate_a: Stat
    pass_rate_b: Stat
    changes: list[CaseChange]
    held_out: bool = False  # either run is of a held-out suite: the cases are counted, not named
    failures_a: dict[str, int] = Field(default_factory=dict)  # failed cases by kind
    failures_b: dict[str, int] = Field(default_factory=dict)

    @property
    def regressions(self) -> list[CaseChange]:
        return [c for c in self.changes if c.kind == "regression"]


def compare(a: Report, b: Report, label_a: str = "A", label_b: str = "B") -> Comparison:
    """Per-case differences between two reports of the same suite: flips and score changes."""
    before = {c.case_id: c for c in a.cases}
    after = {c.case_id: c for c in b.cases}
    changes = []
    for case_id in [*before, *(k for k in after if k not in before)]:
        old, new = before.get(case_id), after.get(case_id)
        if old and new and old.passed == new.passed and math.isclose(old.score, new.score, abs_tol=1e-9):
            continue
        changes.append(
            CaseChange(
                case_id=case_id,
                before=old.passed if old else None,
                after=new.passed if new else None,
                score_before=old.score if old else None,
                score_after=new.score if new else None,
            )
        )
    return Comparison(
        a=label_a,
        b=label_b,
        pass_rate_a=a.totals.pass_rate,
        pass_rate_b=b.totals.pass_rate,
        changes=changes,
        held_out=a.run.held_out or b.run.held_out,
        failures_a={kind: found.n for kind, found in a.failures.items()},
        failures_b={kind: found.n for kind, found in b.failures.items()},
    )


def _status(passed: bool | None) -> str:
    return "-" if passed is None else ("pass" if passed else "FAIL")


def render_comparison(comparison: Comparison) -> str:
    a, b = comparison.pass_rate_a, comparison.pass_rate_b
    difference = b.mean - a.mean
    se = math.sqrt(a.se**2 + b.se**2)
    counts: defaultdict[str, int] = defaultdict(int)
    for change in comparison.changes:
        counts[change.kind] += 1
    lines = [
        f"# Compare: {comparison.a} → {comparison.b}",
        "",
        f"- pass rate {a.text(percent=True)} → {b.text(percent=True)} "
        f"({100 * difference:+.1f} points ± {100 * se:.1f})",
        f"- {counts['regression']} regressions, {counts['fixed']} fixed, {counts['score']} score changes, "
        f"{counts['added']} added, {counts['removed']} removed",
        "",
        *_failure_changes(comparison),
    ]
    if not comparison.changes:
        return "\n".join([*lines, "No case changed."]) + "\n"
    if comparison.held_out:
        return "\n".join([*lines, HELD_OUT_NOTE]) + "\n"
    lines += ["| case | change | before | after | score before | score after |", "|---|---|---|---|---|---|"]
    order = {"regression": 0, "fixed": 1, "score": 2, "added": 3, "removed": 4}
    for change in sorted(comparison.changes, key=lambda c: (order[c.kind], c.case_id)):
        lines.append(
            f"| {change.case_id} | {change.kind} | {_status(change.before)} | {_status(change.after)} "
            f"| {_score(change.score_before)} | {_score(change.score_after)} |"
        )
    return "\n".join(lines) + "\n"


def _failure_changes(comparison: Comparison) -> list[str]:
    """Failed cases by kind in each run, side by side (nothing when neither report has kinds)."""
    a, b = comparison.failures_a, comparison.failures_b
    if not a and not b:
        return []
    kinds = sorted({*a, *b}, key=lambda kind: (-max(a.get(kind, 0), b.get(kind, 0)), kind))
    rows = [f"| {kind} | {a.get(kind, 0)} | {b.get(kind, 0)} |" for kind in kinds]
    return ["| failed, by kind | before | after |", "|---|---|---|", *rows, ""]


def _score(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def summary_lines(report: Report) -> Iterable[str]:
    """A few lines for the terminal after a run."""
    totals = report.totals
    yield f"{report.run.suite}: {totals.passed}/{totals.n} passed, pass rate {totals.pass_rate.text(percent=True)}"
    for name, stat in totals.metrics.items():
        yield f"  {name}: {stat.text()}"
    yield f"  latency p50 {totals.latency_ms_p50:.0f} ms, p95 {totals.latency_ms_p95:.0f} ms"
    yield f"  {'passed' if report.passed else 'FAILED'}: threshold {100 * report.threshold:.0f}%"
