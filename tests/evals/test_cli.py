"""`datawell eval run | score | compare` as a user runs them: files written, exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from datawell.cli import app
from datawell.evals import runner
from datawell.tools.rewrite.registry import OFF_BY_DEFAULT, RULES
from tests.evals import fakes
from tests.evals.conftest import write_suite

SUITE = """
name: cli-mini
kind: nl2ql
fixtures: [retail]
threshold: 0.75
cases:
  - id: count
    vars: {question: "How many orders?"}
    expected: {query: "SELECT COUNT(*) FROM orders"}
    tags: [aggregate]
    difficulty: easy
  - id: germany
    vars: {question: "Customers in Germany?"}
    expected: {query: "SELECT name FROM customers WHERE country = 'Germany'"}
    tags: [filter]
  - id: refuse
    vars: {question: "Delete everything."}
    expected: {refuse: true}
    tags: [refuse]
    difficulty: easy
"""

GOOD = {
    "How many orders?": "SELECT COUNT(*) AS n FROM orders",
    "Customers in Germany?": "SELECT name FROM customers WHERE country = 'Germany'",
}
WORSE = {**GOOD, "Customers in Germany?": "SELECT name FROM customers WHERE country = 'France'"}


def use_answers(monkeypatch: pytest.MonkeyPatch, answers: dict[str, str | None]) -> None:
    monkeypatch.setattr(runner, "default_targets", lambda: fakes.targets(nl2ql=fakes.scripted_nl2ql(answers)))


def invoke(*args: str):
    return CliRunner().invoke(app, ["eval", *args])


def test_run_writes_predictions_and_reports_and_passes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    use_answers(monkeypatch, GOOD)
    suite = write_suite(tmp_path, SUITE)
    result = invoke("run", str(suite), "--out", str(tmp_path / "a"))
    assert result.exit_code == 0, result.output
    assert "cli-mini: 3/3 passed, pass rate 100.0% ± 0.0" in result.output
    assert "cli-mini 2/3 germany: ok (" in result.output  # not a terminal: a progress line per case
    for name in ("predictions.jsonl", "run.json", "report.json", "report.md"):
        assert (tmp_path / "a" / name).is_file()
    report = json.loads((tmp_path / "a" / "report.json").read_text())
    assert report["passed"] is True and report["totals"]["n"] == 3
    assert set(report["by_tag"]) == {"aggregate", "filter", "refuse"}
    assert report["by_difficulty"]["easy"]["n"] == 2
    assert report["totals"]["metrics"]["execution_accuracy"]["mean"] == 1.0
    markdown = (tmp_path / "a" / "report.md").read_text()
    assert "# Eval report: cli-mini" in markdown and "| germany | pass |" in markdown


def test_below_threshold_exits_1_then_compare_and_rescore(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    suite = write_suite(tmp_path, SUITE)
    use_answers(monkeypatch, GOOD)
    assert invoke("run", str(suite), "--out", str(tmp_path / "a")).exit_code == 0
    use_answers(monkeypatch, WORSE)
    worse = invoke("run", str(suite), "--out", str(tmp_path / "b"))
    assert worse.exit_code == 1, worse.output
    assert "FAILED: threshold 75%" in worse.output
    assert "| germany | FAIL |" in (tmp_path / "b" / "report.md").read_text()

    compared = invoke("compare", str(tmp_path / "a"), str(tmp_path / "b"))
    assert compared.exit_code == 0
    assert "1 regressions, 0 fixed" in compared.output
    assert "| germany | regression | pass | FAIL | 1.00 | 0.00 |" in compared.output
    assert invoke("compare", str(tmp_path / "a"), str(tmp_path / "b"), "--fail-on-regression").exit_code == 1
    assert "No case changed." in invoke("compare", str(tmp_path / "a"), str(tmp_path / "a")).output

    # Fix the suite's threshold and re-score the saved predictions: no graph may run now.
    monkeypatch.setattr(runner, "default_targets", lambda: pytest.fail("re-scoring ran a target"))
    suite.write_text(SUITE.replace("threshold: 0.75", "threshold: 0.6"))
    rescored = invoke("score", str(tmp_path / "b"))
    assert rescored.exit_code == 0, rescored.output
    assert "2/3 passed" in rescored.output


def test_a_report_counts_its_failures_by_kind_with_their_tags(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Failures are counted by why they failed (wrong rows of some kind, no rows, a refusal
    answered), each with its cases' tags: what a suite is read by without reading its cases."""
    suite = write_suite(tmp_path, SUITE)
    use_answers(monkeypatch, {**WORSE, "How many orders?": None, "Delete everything.": "SELECT name FROM customers"})
    assert invoke("run", str(suite), "--out", str(tmp_path / "b")).exit_code == 1
    report = json.loads((tmp_path / "b" / "report.json").read_text())
    assert report["failures"] == {
        "no rows: answerable refused": {"n": 1, "tags": {"aggregate": 1}},
        "refusal: answered": {"n": 1, "tags": {"refuse": 1}},
        "wrong rows: more rows": {"n": 1, "tags": {"filter": 1}},  # more customers live in France
    }
    markdown = (tmp_path / "b" / "report.md").read_text()
    assert "## Failures by kind\n\n| kind | cases | their tags |" in markdown
    assert "| refusal: answered | 1 | refuse 1 |" in markdown

    use_answers(monkeypatch, GOOD)
    assert invoke("run", str(suite), "--out", str(tmp_path / "a")).exit_code == 0
    assert "## Failures by kind\n\nNo case failed." in (tmp_path / "a" / "report.md").read_text()
    compared = invoke("compare", str(tmp_path / "a"), str(tmp_path / "b")).output
    assert "| failed, by kind | before | after |" in compared and "| wrong rows: more rows | 0 | 1 |" in compared


def test_a_held_out_suite_is_reported_and_compared_without_its_cases(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A held-out suite decides and is never read case by case: its progress, report and
    comparison name no case; report.json keeps them for re-scoring."""
    suite = write_suite(tmp_path, SUITE.replace("threshold: 0.75", "threshold: 0.75\nheld_out: true"))
    use_answers(monkeypatch, GOOD)
    good = invoke("run", str(suite), "--out", str(tmp_path / "a"))
    assert good.exit_code == 0 and "cli-mini 2/3 a case: ok (" in good.output and "germany" not in good.output
    use_answers(monkeypatch, WORSE)
    assert invoke("run", str(suite), "--out", str(tmp_path / "b")).exit_code == 1
    markdown = (tmp_path / "b" / "report.md").read_text()
    assert "germany" not in markdown and "Not shown: this suite is held out." in markdown
    assert "| wrong rows: more rows | 1 | filter 1 |" in markdown
    assert json.loads((tmp_path / "b" / "report.json").read_text())["run"]["held_out"] is True
    compared = invoke("compare", str(tmp_path / "a"), str(tmp_path / "b"), "--fail-on-regression")
    assert compared.exit_code == 1 and "1 regressions, 0 fixed" in compared.output
    assert "germany" not in compared.output and "| wrong rows: more rows | 0 | 1 |" in compared.output
    # A run recorded before the suite was marked held out is re-scored as held out.
    suite.write_text(SUITE)
    assert invoke("run", str(suite), "--out", str(tmp_path / "c")).exit_code == 1
    assert "germany" in (tmp_path / "c" / "report.md").read_text()
    suite.write_text(SUITE.replace("threshold: 0.75", "threshold: 0.75\nheld_out: true"))
    assert invoke("score", str(tmp_path / "c")).exit_code == 1
    assert "germany" not in (tmp_path / "c" / "report.md").read_text()


def test_rescore_runs_a_changed_gold_query_on_a_fresh_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    suite = write_suite(tmp_path, SUITE)
    use_answers(monkeypatch, WORSE)
    assert invoke("run", str(suite), "--out", str(tmp_path / "b")).exit_code == 1
    suite.write_text(SUITE.replace("country = 'Germany'", "country = 'France'"))
    use_answers(monkeypatch, {})  # only the query tools are used: gold queries, not the graph
    rescored = invoke("score", str(tmp_path / "b"))
    assert rescored.exit_code == 0, rescored.output
    assert "3/3 passed" in rescored.output


def test_case_and_tag_filters(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    use_answers(monkeypatch, GOOD)
    suite = write_suite(tmp_path, SUITE)
    result = invoke("run", str(suite), "--out", str(tmp_path / "a"), "--tag", "refuse")
    assert result.exit_code == 0 and "1/1 passed" in result.output
    missing = invoke("run", str(suite), "--case", "nope")
    assert missing.exit_code == 2 and "no cases ['nope']" in missing.output


def test_invalid_suite_exits_2_with_the_problem(tmp_path: Path) -> None:
    suite = write_suite(tmp_path, SUITE.replace("threshold: 0.75", "threshold: 0.75\nmodel: gpt"))
    result = invoke("run", str(suite))
    assert result.exit_code == 2
    assert "model: unknown key 'model'" in result.output


def test_prompt_dir_must_exist_and_reports_must_be_readable(tmp_path: Path) -> None:
    suite = write_suite(tmp_path, SUITE)
    result = invoke("run", str(suite), "--prompt-dir", str(tmp_path / "missing"))
    assert result.exit_code == 2 and "is not a folder" in result.output
    bad = invoke("compare", str(tmp_path / "x"), str(tmp_path / "y"))
    assert bad.exit_code == 2 and "cannot read a report" in bad.output


def test_prompt_dir_reaches_the_graphs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[str] = []

    async def nl2ql(services, request):  # type: ignore[no-untyped-def]
        seen.append(
            services.prompts.get("eval_judge").render(question="q", answer="a", rubric="r", reference="")[0].content
        )
        async for event in fakes.scripted_nl2ql(GOOD)(services, request):
            yield event

    monkeypatch.setattr(runner, "default_targets", lambda: fakes.targets(nl2ql=nl2ql))
    prompts = tmp_path / "prompts"
    prompts.mkdir()
    (prompts / "eval_judge.txt").write_text("Tried prompt ${question} ${answer} ${rubric} ${reference}")
    suite = write_suite(tmp_path, SUITE)
    result = invoke("run", str(suite), "--prompt-dir", str(prompts), "--out", str(tmp_path / "a"), "--case", "count")
    assert result.exit_code == 0, result.output
    assert seen == ["Tried prompt q a r "]
    assert json.loads((tmp_path / "a" / "run.json").read_text())["prompt_dir"] == str(prompts)


def test_list_shows_bundled_suites() -> None:
    result = invoke("list")
    assert result.exit_code == 0
    assert [line.split("\t")[0] for line in result.output.splitlines()] == [
        "assistant",
        "curator",
        "dev",
        "erp",
        "extract",
        "nl2ql",
        "validation",
    ]


def test_all_runs_every_suite_into_its_folder_and_writes_one_summary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_answers(monkeypatch, WORSE)
    strict = write_suite(tmp_path, SUITE)
    lenient = tmp_path / "lenient.yaml"
    lenient.write_text(
        SUITE.replace("name: cli-mini", "name: cli-lenient").replace("threshold: 0.75", "threshold: 0.6")
    )
    result = invoke("all", str(strict), str(lenient), "--out", str(tmp_path / "runs"))
    # The strict suite fails its threshold, the lenient one still runs and passes: exit 1.
    assert result.exit_code == 1, result.output
    for folder in ("cli-mini", "cli-lenient"):
        assert (tmp_path / "runs" / folder / "report.md").is_file()
    summary = (tmp_path / "runs" / "README.md").read_text()
    assert "| [cli-mini](cli-mini/report.md) | " in summary
    assert "| 3 | 2 | 66.7% ± 27.2 |" in summary
    assert "| 75% | FAILED |" in summary and "| 60% | passed |" in summary

    # Re-score one run into a better report, then rebuild the summary from what is on disk.
    (tmp_path / "runs" / "README.md").unlink()
    rebuilt = invoke("summary", str(tmp_path / "runs"))
    assert rebuilt.exit_code == 0, rebuilt.output
    assert (tmp_path / "runs" / "README.md").read_text() == summary


def test_all_reports_an_invalid_suite_before_running_anything(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runner, "default_targets", lambda: pytest.fail("a suite ran"))
    result = invoke("all", str(write_suite(tmp_path, SUITE)), str(tmp_path / "missing.yaml"))
    assert result.exit_code == 2 and "missing.yaml" in result.output
    empty = invoke("summary", str(tmp_path))
    assert empty.exit_code == 2 and "has no run folders" in empty.output


def test_run_json_names_a_bundled_suite_by_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    use_answers(monkeypatch, {"How many orders are there?": "SELECT COUNT(*) FROM orders"})
    result = invoke("run", "nl2ql", "--case", "retail-count-orders", "--out", str(tmp_path / "a"))
    assert result.exit_code == 0, result.output
    run = json.loads((tmp_path / "a" / "run.json").read_text())
    assert run["suite_path"] == "nl2ql"


def test_rules_switched_off_for_a_run_are_in_its_record_and_report(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 47: `--rules-off` names rewrite rules; the run's record and report say which,
    with the rules off by default unless the environment switches them on."""
    use_answers(monkeypatch, GOOD)
    monkeypatch.setenv("DATAWELL_QUERY_RULES_ENABLED", "all")  # every rule on but those named
    suite = write_suite(tmp_path, SUITE)
    result = invoke(
        "run", str(suite), "--out", str(tmp_path / "a"), "--rules-off", "group_per_asked,drop_unasked_limit"
    )
    assert result.exit_code == 0, result.output
    # in the order the rules run, whatever the order given
    assert json.loads((tmp_path / "a" / "run.json").read_text())["rules_off"] == [
        "drop_unasked_limit",
        "group_per_asked",
    ]
    assert "query rules off: drop_unasked_limit, group_per_asked" in (tmp_path / "a" / "report.md").read_text()

    monkeypatch.delenv("DATAWELL_QUERY_RULES_ENABLED")
    result = invoke("run", str(suite), "--out", str(tmp_path / "c"), "--rules-off", "drop_unasked_limit")
    assert result.exit_code == 0, result.output
    in_effect = json.loads((tmp_path / "c" / "run.json").read_text())["rules_off"]
    assert in_effect == [name for name in RULES if name == "drop_unasked_limit" or name in OFF_BY_DEFAULT]

    unknown = invoke("run", str(suite), "--out", str(tmp_path / "b"), "--rules-off", "no_such_rule")
    assert unknown.exit_code == 2
    assert "unknown query rule(s) no_such_rule" in unknown.output and "drop_unasked_limit" in unknown.output


def test_a_run_with_the_query_grammar_says_so_in_its_record_and_report(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 50: a run's record says whether the model wrote under the catalog's grammar, so
    runs with and without it are told apart."""
    use_answers(monkeypatch, GOOD)
    suite = write_suite(tmp_path, SUITE)
    assert invoke("run", str(suite), "--out", str(tmp_path / "off")).exit_code == 0
    monkeypatch.setenv("DATAWELL_QUERY_GRAMMAR", "true")
    assert invoke("run", str(suite), "--out", str(tmp_path / "on")).exit_code == 0
    grammar = {run: json.loads((tmp_path / run / "run.json").read_text())["query_grammar"] for run in ("off", "on")}
    assert grammar == {"off": False, "on": True}
    assert "query grammar: on" in (tmp_path / "on" / "report.md").read_text()
    assert "query grammar" not in (tmp_path / "off" / "report.md").read_text()
