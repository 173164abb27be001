"""The rewrite rules by name (issue 47): one registry, one ordered program per phase, every
change recorded as (rule, before, after, reason), rules switched off by name, the catalog
read only for a rule that reads it."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from typing import Any

import pytest

from datawell.config import Settings
from datawell.services import build_services
from datawell.storage.access import NamespaceRef
from datawell.tools.catalog import Catalog
from datawell.tools.rewrite.change import Change, Context
from datawell.tools.rewrite.driver import apply_now, rewrite
from datawell.tools.rewrite.registry import (
    BEFORE_RUN,
    LITERAL_RULES,
    MEND_RULES,
    ON_EMPTY,
    ON_REFUSAL,
    RETIRED,
    RULES,
    SHAPE_RULES,
    active,
    disabled_rules,
)
from tests.tools.test_mend import table

# The programs as they run: a change of order is a change of behaviour, made here on purpose.
BEFORE_RUN_ORDER = (
    "drop_unasked_limit",
    "divide_as_fractions",
    "select_group_keys",
    "rows_not_extremes",
    "period_for_first_day",
    "select_ranking_measure",
    "reroute_mistyped_joins",
    "reroute_crossed_keys",
    "group_per_asked",
    "match_stored_values",
    "filter_where_stored",
)
ON_REFUSAL_ORDER = (
    "drop_invented_filters",
    "drop_phantom_joins",
    "near_column_names",
    "swap_tables",
    "bridge_joins",
    "join_missing_table",
    "requalify_columns",
    "drop_dead_joins",
    "epoch_to_timestamps",
    "years_as_stored",
    "column_named_by_question",
)
# (earlier, later): the dependencies registry.py's docstring states, one pair each.
DEPENDS = [
    ("drop_unasked_limit", "select_ranking_measure"),
    ("reroute_crossed_keys", "group_per_asked"),
    ("match_stored_values", "filter_where_stored"),
    ("drop_invented_filters", "drop_phantom_joins"),
    ("near_column_names", "drop_dead_joins"),
    ("requalify_columns", "drop_dead_joins"),
    ("drop_dead_joins", "column_named_by_question"),
]

SCHOOL = Catalog(
    NamespaceRef("n1", "alice", "school"),
    [
        table("course", "course_id", "name"),
        table("student", "student_id", "lastname"),
        table("student_record", "student_id", "course_id", "grade"),
    ],
)


def test_every_rule_is_named_once_in_the_phase_it_runs_in() -> None:
    assert tuple(r.name for r in BEFORE_RUN) == BEFORE_RUN_ORDER
    assert tuple(r.name for r in ON_REFUSAL) == ON_REFUSAL_ORDER
    assert ON_EMPTY == ()
    assert len(RULES) == len(BEFORE_RUN_ORDER) + len(ON_REFUSAL_ORDER) == 22
    for phase, rules in (("before_run", BEFORE_RUN), ("on_refusal", ON_REFUSAL)):
        assert {r.phase for r in rules} == {phase}
    assert all(re.fullmatch(r"[a-z]+(?:_[a-z]+)*", name) for name in RULES)
    # the coarse switches are groups that cover every rule once
    assert RULES.keys() == SHAPE_RULES | LITERAL_RULES | MEND_RULES
    assert not SHAPE_RULES & LITERAL_RULES and not SHAPE_RULES & MEND_RULES


@pytest.mark.parametrize(("earlier", "later"), DEPENDS)
def test_the_order_keeps_each_dependency(earlier: str, later: str) -> None:
    order = [*BEFORE_RUN_ORDER, *ON_REFUSAL_ORDER]
    assert order.index(earlier) < order.index(later)
    assert RULES[earlier].phase == RULES[later].phase


def test_the_deleted_rules_are_gone_and_a_refused_query_is_repaired_never_reworded() -> None:
    assert not RETIRED & RULES.keys()
    assert {name: RULES[name].case for name in RULES if RULES[name].case} == {
        "reroute_crossed_keys": "academic (keys of an initial + id)"
    }
    assert not any(r.tier == "wording" for r in ON_REFUSAL)  # a refused query is repaired, never reworded


def test_each_change_names_its_rule_and_the_query_before_and_after() -> None:
    rules = [r for r in BEFORE_RUN if r.kind == "tree"]
    done = apply_now(
        rules,
        "SELECT year, COUNT(*) AS n FROM publication GROUP BY year ORDER BY n DESC LIMIT 10",
        Context("What is the total number of publications in each year?"),
    )

    assert done.changes == [
        Change(
            "drop_unasked_limit",
            "SELECT year, COUNT(*) AS n FROM publication GROUP BY year ORDER BY n DESC LIMIT 10",
            "SELECT year, COUNT(*) AS n FROM publication GROUP BY year ORDER BY n DESC",
            "dropped LIMIT 10: the question asks for every row",
        )
    ]
    assert done.query == "SELECT year, COUNT(*) AS n FROM publication GROUP BY year ORDER BY n DESC"


def test_changes_chain_one_rules_after_into_the_next_ones_before() -> None:
    query = "SELECT AVG(a.credits / a.course_id) FROM course AS a GROUP BY a.title LIMIT 5"
    done = apply_now([r for r in BEFORE_RUN if r.kind == "tree"], query, Context("The ratio for each title"))

    assert [c.rule for c in done.changes] == ["drop_unasked_limit", "divide_as_fractions", "select_group_keys"]
    assert [c.before for c in done.changes[1:]] == [c.after for c in done.changes[:-1]]
    assert (
        done.changes[-1].after
        == done.query
        == ("SELECT a.title, AVG(CAST(a.credits AS DOUBLE PRECISION) / a.course_id) FROM course AS a GROUP BY a.title")
    )


def test_a_rule_switched_off_leaves_its_change_undone_and_the_others_run() -> None:
    query = "SELECT AVG(a.credits / a.course_id) FROM course AS a GROUP BY a.title LIMIT 5"
    rules = active([r for r in BEFORE_RUN if r.kind == "tree"], disabled_rules("drop_unasked_limit"))
    done = apply_now(rules, query, Context("The ratio for each title"))

    assert [c.rule for c in done.changes] == ["divide_as_fractions", "select_group_keys"]
    assert done.query.endswith("GROUP BY a.title LIMIT 5")


def test_a_rule_that_raises_is_left_out_and_the_others_still_apply(caplog: pytest.LogCaptureFixture) -> None:
    def slips(tree: Any, context: Context) -> Any:
        tree.set("limit", None)  # half done: the tree is changed, then the rule fails
        raise KeyError("a")

    broken = dataclasses.replace(BEFORE_RUN[0], name="slips", apply=slips)
    query = "SELECT AVG(a.credits / a.course_id) FROM course AS a GROUP BY a.title LIMIT 5"
    rules = [broken, *active([r for r in BEFORE_RUN if r.kind == "tree"], disabled_rules("drop_unasked_limit"))]
    done = apply_now(rules, query, Context("The ratio for each title"))

    assert [c.rule for c in done.changes] == ["divide_as_fractions", "select_group_keys"]
    assert done.query.endswith("GROUP BY a.title LIMIT 5")  # nothing of the failed rule's half
    assert "query rule slips failed and was left out" in caplog.text


def test_all_switches_every_rule_off_and_an_unknown_name_is_refused_with_the_known_ones() -> None:
    assert disabled_rules("all") == RULES.keys()
    assert disabled_rules(" drop_unasked_limit , group_per_asked,") == {"drop_unasked_limit", "group_per_asked"}
    assert disabled_rules("") == frozenset()
    with pytest.raises(ValueError, match=r"unknown query rule.*no_such_rule.*drop_unasked_limit.*group_per_asked"):
        disabled_rules("group_per_asked,no_such_rule")


def test_a_deleted_rules_name_switches_nothing_and_is_warned_of(caplog: pytest.LogCaptureFixture) -> None:
    """A setting written when `label_rows` existed keeps starting the service."""
    disabled_rules.cache_clear()  # warned once per setting: a test before may have read this one
    assert disabled_rules("label_rows, group_per_asked") == {"group_per_asked"}
    assert "query rule(s) ['label_rows'] were deleted" in caplog.text


def test_a_refused_query_is_mended_by_named_rules() -> None:
    query = (
        "SELECT course.name, COUNT(student.student_id) AS enrolled FROM course "
        "LEFT JOIN student ON course.course_id = student.course_id GROUP BY course.name"
    )
    done = apply_now(ON_REFUSAL, query, Context("How many students are enrolled in each course?", catalog=SCHOOL))

    assert [c.rule for c in done.changes] == ["swap_tables"]
    assert done.changes[0].before == query
    assert (
        done.query
        == done.changes[0].after
        == (
            "SELECT course.name, COUNT(student.student_id) AS enrolled FROM course "
            "LEFT JOIN student_record AS student ON course.course_id = student.course_id GROUP BY course.name"
        )
    )


async def test_the_catalog_is_read_only_when_an_active_rule_reads_it() -> None:
    reads = []

    async def read_catalog() -> Catalog:
        reads.append(1)
        return SCHOOL

    query = "SELECT grade FROM student_record WHERE course_id = 3"  # nothing for any rule to do
    catalog_rules = {r.name for r in BEFORE_RUN if "catalog" in r.reads}
    without = active(BEFORE_RUN, frozenset(catalog_rules))
    await rewrite(without, query, Context("Grades of course 3", read_catalog=read_catalog))
    assert reads == []

    await rewrite(BEFORE_RUN, query, Context("Grades of course 3", read_catalog=read_catalog))
    assert reads == [1]  # once for every rule that reads it


def test_the_rules_table_lists_every_rule_with_its_phase_and_tier() -> None:
    table = (Path(__file__).parents[2] / "docs" / "query-rewrites.md").read_text(encoding="utf-8")
    rows = {m[0]: (m[1], m[2]) for m in re.findall(r"^\| `(\w+)` \| (\w+) \| (\w+) \|", table, re.MULTILINE)}
    assert rows == {name: (rule.phase, rule.tier) for name, rule in RULES.items()}


async def test_an_unknown_rule_switched_off_stops_the_service_at_start(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path, database_url=None, query_rules_disabled="group_per_asked,no_such_rule")
    with pytest.raises(ValueError, match=r"unknown query rule\(s\) no_such_rule; the rules are: drop_unasked_limit"):
        await build_services(settings)
    assert not any(tmp_path.iterdir())  # before anything was opened or made
