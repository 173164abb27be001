"""Every rewrite rule by name, the ordered program of each phase, and the switches.

The order of a phase is its tuple's. What depends on what (tests/tools/test_rewrite.py pins
each of these):

before_run
- drop_unasked_limit before select_ranking_measure: a plain column counts as ranked only
  under a LIMIT, so the measure of a ranking whose LIMIT went is not added.
- reroute_mistyped_joins and reroute_crossed_keys before group_per_asked: it reads the
  tables the query joins, once rerouted.
- match_stored_values before filter_where_stored: only a text no value of its column holds
  moves to another column.

on_refusal
- drop_invented_filters first: the columns a SELECT reads are counted after it (for
  drop_dead_joins), before any slip rule moves one.
- near_column_names, swap_tables, bridge_joins, join_missing_table and requalify_columns
  before drop_dead_joins: it drops a join they left read for nothing.
- column_named_by_question last: a name the other rules read otherwise is not picked by words.
Then the mended query is fitted by `BEFORE_RUN` afresh (graphs/nl2ql/mending.mended).

on_empty: no rule rewrites an empty result; its repair is told, by the model, where the
filters' texts are stored (tools/literals.where_stored) and which the question never says."""

from __future__ import annotations

import functools
import logging
from collections.abc import Iterable

from datawell.tools.rewrite import before_run, on_refusal
from datawell.tools.rewrite.change import Rule

log = logging.getLogger(__name__)

BEFORE_RUN: tuple[Rule, ...] = before_run.RULES
ON_REFUSAL: tuple[Rule, ...] = on_refusal.RULES
ON_EMPTY: tuple[Rule, ...] = ()

RULES: dict[str, Rule] = {rule.name: rule for rule in (*BEFORE_RUN, *ON_REFUSAL, *ON_EMPTY)}

# The coarse switches of earlier releases, as the groups of rules they turn off.
LITERAL_RULES = frozenset(r.name for r in BEFORE_RUN if r.kind == "values")
SHAPE_RULES = frozenset(r.name for r in BEFORE_RUN) - LITERAL_RULES
MEND_RULES = frozenset(r.name for r in ON_REFUSAL)

ALL = "all"  # the switch's word for every rule


# Rules off unless switched on (`DATAWELL_QUERY_RULES_ENABLED`), each with why: a rule the gate
# (python -m datawell.evals.gate; docs/evals/rules.md) has not yet shown to help on databases it
# was not written from. None today: the nine wording rules the triage of issue 47 turned off were
# deleted (docs/query-rewrites.md, "Triage"); the switch stays for the next rule on trial.
OFF_BY_DEFAULT: dict[str, str] = {}

# Rules that were deleted, still taken by the switches so a setting that names one keeps
# starting the service; a name here switches nothing (a warning says so).
RETIRED = frozenset(
    [
        "group_union_per_value",
        "whole_numbers_asked",
        "rows_once_through_filtering_joins",
        "skip_key_passing_joins",
        "drop_placeholder_filters",
        "filter_the_end_asked",
        "label_rows",
        "count_the_things_asked",
        "compute_the_ratio_asked",
    ]
)


@functools.cache  # every run reads the same settings: parsed, and a deleted name warned of, once
def disabled_rules(names: str) -> frozenset[str]:
    """The rules these comma-separated names name (`all`: every rule); an unknown name is an
    error that lists the known ones, a deleted rule's name is left out with a warning."""
    wanted = {n.strip() for n in names.split(",") if n.strip()}
    if ALL in wanted:
        return frozenset(RULES)
    if retired := sorted(wanted & RETIRED):
        log.warning("query rule(s) %s were deleted (docs/query-rewrites.md): the name switches nothing", retired)
        wanted -= RETIRED
    if unknown := sorted(wanted - RULES.keys()):
        raise ValueError(f"unknown query rule(s) {', '.join(unknown)}; the rules are: {', '.join(RULES)}, or {ALL}")
    return frozenset(wanted)


def rules_off(disabled: str, enabled: str = "") -> frozenset[str]:
    """The rules a run does not apply: those `disabled` names, and those off by default that
    `enabled` does not switch on (a rule named by both stays off)."""
    return disabled_rules(disabled) | (OFF_BY_DEFAULT.keys() - disabled_rules(enabled))


def active(rules: Iterable[Rule], off: frozenset[str]) -> tuple[Rule, ...]:
    """The rules of a phase, in order, but those switched off."""
    return tuple(r for r in rules if r.name not in off)
