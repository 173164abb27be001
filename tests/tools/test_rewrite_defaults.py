"""Which rewrite rules run by default (issue 47's triage, docs/query-rewrites.md): the wording
rules the gate found no help for beyond the case they were written from are off unless
switched on by name; every repair stays on."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from datawell.config import Settings
from datawell.runs.deps import query_deps
from datawell.services import Services
from datawell.tools.rewrite.registry import OFF_BY_DEFAULT, RULES, rules_off

DEMOTED = {
    "group_union_per_value",
    "whole_numbers_asked",
    "rows_once_through_filtering_joins",
    "skip_key_passing_joins",
    "drop_placeholder_filters",
    "filter_the_end_asked",
    "label_rows",
    "count_the_things_asked",
    "compute_the_ratio_asked",
}


def test_the_default_set_is_the_triaged_one() -> None:
    assert set(OFF_BY_DEFAULT) == DEMOTED
    assert all(RULES[name].tier == "wording" and reason for name, reason in OFF_BY_DEFAULT.items())
    kept = {name for name, rule in RULES.items() if rule.tier == "wording"} - DEMOTED
    assert kept == {"drop_unasked_limit", "period_for_first_day", "select_ranking_measure", "group_per_asked"}


def test_a_rule_off_by_default_is_switched_on_by_name_and_a_disabled_one_stays_off() -> None:
    assert rules_off("", "") == DEMOTED
    assert rules_off("", "label_rows") == DEMOTED - {"label_rows"}
    assert rules_off("label_rows", "label_rows, whole_numbers_asked") == DEMOTED - {"whole_numbers_asked"}
    assert rules_off("drop_unasked_limit", "all") == {"drop_unasked_limit"}
    with pytest.raises(ValueError, match="unknown query rule"):
        rules_off("", "no_such_rule")


def test_the_settings_switch_rules_on_from_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("DATAWELL_QUERY_RULES_ENABLED", "label_rows")
    settings = Settings(data_dir=tmp_path)
    assert "label_rows" not in rules_off(settings.query_rules_disabled, settings.query_rules_enabled)


def test_the_rules_table_says_which_rules_are_off_by_default() -> None:
    table = (Path(__file__).parents[2] / "docs" / "query-rewrites.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| `(\w+)` \| \w+ \| \w+ \| (on|off) \|", table, re.MULTILINE)
    assert dict(rows) == {name: "off" if name in OFF_BY_DEFAULT else "on" for name in RULES}


def test_a_run_leaves_the_rules_off_by_default_unless_switched_on(services: Services) -> None:
    assert query_deps(services).rules_off == DEMOTED
    on = services.settings.model_copy(update={"query_rules_enabled": "label_rows"})
    assert query_deps(dataclasses.replace(services, settings=on)).rules_off == DEMOTED - {"label_rows"}
