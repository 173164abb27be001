"""Which rewrite rules run by default (issue 47's triage, docs/query-rewrites.md): every rule
left runs by default; the wording rules the gate found no help for beyond the case they were
written from were deleted, and a setting that still names one switches nothing. The switch
for rules off by default stays for the next rule on trial (`OFF_BY_DEFAULT`)."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from datawell.config import Settings
from datawell.runs.deps import query_deps
from datawell.services import Services
from datawell.tools.rewrite import registry
from datawell.tools.rewrite.registry import OFF_BY_DEFAULT, RETIRED, RULES, rules_off

KEPT_WORDING = {"drop_unasked_limit", "period_for_first_day", "select_ranking_measure", "group_per_asked"}


def test_every_rule_left_runs_by_default() -> None:
    assert OFF_BY_DEFAULT == {}
    assert {name for name, rule in RULES.items() if rule.tier == "wording"} == KEPT_WORDING
    assert len(RETIRED) == 9 and not RETIRED & RULES.keys()


def test_a_rule_off_by_default_is_switched_on_by_name_and_a_disabled_one_stays_off(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(registry, "OFF_BY_DEFAULT", {"group_per_asked": "on trial", "period_for_first_day": "on trial"})
    assert rules_off("", "") == {"group_per_asked", "period_for_first_day"}
    assert rules_off("", "group_per_asked") == {"period_for_first_day"}
    assert rules_off("group_per_asked", "group_per_asked, period_for_first_day") == {"group_per_asked"}
    assert rules_off("drop_unasked_limit", "all") == {"drop_unasked_limit"}
    with pytest.raises(ValueError, match="unknown query rule"):
        rules_off("", "no_such_rule")


def test_a_deleted_rule_switched_on_from_the_environment_starts_nothing(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("DATAWELL_QUERY_RULES_ENABLED", "label_rows")
    settings = Settings(data_dir=tmp_path)
    assert rules_off(settings.query_rules_disabled, settings.query_rules_enabled) == frozenset()


def test_the_rules_table_says_which_rules_are_off_by_default() -> None:
    table = (Path(__file__).parents[2] / "docs" / "query-rewrites.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| `(\w+)` \| \w+ \| \w+ \| (on|off) \|", table, re.MULTILINE)
    assert dict(rows) == {name: "off" if name in OFF_BY_DEFAULT else "on" for name in RULES}


def test_a_run_applies_every_rule_unless_one_is_switched_off(services: Services) -> None:
    assert query_deps(services).rules_off == frozenset()
    off = services.settings.model_copy(update={"query_rules_disabled": "group_per_asked"})
    assert query_deps(dataclasses.replace(services, settings=off)).rules_off == {"group_per_asked"}
