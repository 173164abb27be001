"""The gate of the query rewrite rules (issue 47): per rule, how often it fires, how often it
makes a wrong query right (helps) and a right one wrong (hurts), offline, with no model.

    python -m datawell.evals.gate [--runs docs/evals] [--history 20] [--suite dev ...] [--write docs/evals/rules.md]
    python -m datawell.evals.gate --defaults     # only: is a gold query changed into a wrong one?

Two sets of written queries are replayed through today's pipeline (`replay.Replayer`: each
as the reply of the scripted oracle, on the suite's fixtures, scored on its gold):
- every gold query (and alternative) of every bundled suite that has them: the nl2ql suites,
  and the assistant suite's plan steps, each step's instruction asked as an nl2ql question
  whose rows must be the step query's (extra columns allowed, as the assistant reads them);
- the queries the saved nl2ql runs under `--runs` (every folder with a run.json, at any
  depth; `--history N`: also their last N committed versions) ended with, as written
  (`replay.written`).
Each runs with every rule on (even one off by default), with every rule off, with the default
rules, and, for each rule that fired on it, with every rule on but that one: a rule helps a
query that passes with it and fails without it, and hurts one that fails with it and passes
without it. A rule that did not fire on a query leaves the run as it was (the pipeline has no
other randomness), so only the rules that fired are switched off in turn, and the defaults
are replayed only where a rule off by default fired. No question is refused before its query
is written (`replay.replayer(refuse_first=False)`): that refusal is no rule's, and a query it
stops would never reach the rules.

A gold query that passes with no rule and fails with the default rules exits 1, named with
its case and the rule whose removal makes it pass. `--defaults` replays the gold queries only,
with the default rules and with none (tests/evals/test_gate.py does this in CI)."""

from __future__ import annotations

import argparse
import asyncio
import re
import sys
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from datawell.evals import records
from datawell.evals.replay import Replayed, replayer, saved_queries, written_queries
from datawell.evals.scoring import gold_queries
from datawell.evals.suites import Case, Expected, Suite, Vars, bundled_suites, load_suite
from datawell.tools.rewrite.registry import OFF_BY_DEFAULT, RULES, Rule

GOLD = "gold"


@dataclass(frozen=True)
class Item:
    """One written query to replay: where it comes from (`gold`, or a saved run's folder)."""

    source: str
    suite: str
    case: Case
    query: str
    database: str  # the namespace the case asks in


def item(source: str, suite: Suite, case: Case, query: str) -> Item:
    return Item(source, suite.name, case, query, str(case.vars.namespace or suite.fixtures[0]))


@dataclass
class Measured:
    """An item replayed with the rules of the base (`on`), with none, with those on by default
    (of the base's), and without each rule that fired on it."""

    item: Item
    on: Replayed
    none: Replayed
    defaults: Replayed
    without: dict[str, Replayed] = field(default_factory=dict)

    def helped(self, rule: str) -> bool:
        return rule in self.without and self.on.passed and not self.without[rule].passed

    def hurt(self, rule: str) -> bool:
        return rule in self.without and not self.on.passed and self.without[rule].passed

    @property
    def broken(self) -> bool:
        """Right as written (no rule), wrong as the default rules left it."""
        return self.none.passed and not self.defaults.passed

    def culprits(self) -> list[str]:
        """The default rules that fired whose removal alone makes the query pass (else every
        one that fired)."""
        return [r for r in self.defaults.fired if self.hurt(r)] or list(self.defaults.fired)


def gate_suites(names: Iterable[str] = ()) -> list[Suite]:
    """The suites with gold queries (named ones, else every bundled one), assistant suites as
    the nl2ql questions of their plan steps."""
    found = [load_suite(n) for n in names] or [load_suite(p) for p in bundled_suites()]
    return [as_nl2ql(s) if s.kind == "assistant" else s for s in found if s.kind in ("nl2ql", "assistant")]


def as_nl2ql(suite: Suite) -> Suite:
    """An assistant suite's gold plan steps as nl2ql cases: the instruction asked, the step's
    query the gold (a one-step case's question is its instruction)."""
    cases = []
    for case in suite.cases:
        steps = [(s.instruction, s.query) for s in case.expected.steps]
        if not steps and case.expected.query:
            steps = [(case.vars.question, case.expected.query)]
        for number, (instruction, query) in enumerate(steps, 1):
            ident = case.id if len(steps) == 1 else f"{case.id}.{number}"
            question = Vars(question=instruction, namespace=case.vars.namespace)
            cases.append(Case(id=ident, vars=question, expected=Expected(query=query), tags=case.tags))
    update = {"kind": "nl2ql", "extra_columns": True, "defaults": suite.defaults.model_copy(update={"assert_": []})}
    return suite.model_copy(update={**update, "cases": cases})


def gold_items(suites: Iterable[Suite]) -> list[Item]:
    return [
        item(GOLD, suite, case, query)
        for suite in suites
        for case in suite.cases
        if not case.expected.refuse
        for query in gold_queries(suite, case)
    ]


def run_items(top: Path, suites: dict[str, Suite], history: int = 0) -> list[Item]:
    """The queries the saved nl2ql runs under `top` (each folder with a run.json and its
    predictions, at any depth; with `history`, also their last committed versions) ended with."""
    found = []
    for folder in sorted(p.parent for p in top.rglob(records.RUN_FILE)):
        if not (folder / records.PREDICTIONS_FILE).is_file():
            continue
        info = records.read_run(folder)
        if info.kind != "nl2ql":  # only nl2ql runs end with one query a case
            continue
        if info.suite not in suites:
            suites[info.suite] = load_suite(info.suite_path)
        suite = suites[info.suite]
        source = folder.relative_to(top).as_posix()
        found += [item(source, suite, c, q) for c, q in written_queries(suite, saved_queries(folder, history))]
    return _distinct(found)


def _distinct(items: list[Item]) -> list[Item]:
    """Each query of a case once (runs share many), under the first run that ended with it."""
    seen: dict[tuple[str, str, str], Item] = {}
    for one in items:
        seen.setdefault((one.suite, one.case.id, one.query), one)
    return list(seen.values())


async def measure(
    suites: dict[str, Suite], items: list[Item], base: frozenset[str], ablate: bool = True
) -> list[Measured]:
    """Each item replayed with the rules of `base` off (the others on), with every rule off,
    and without each rule that fired (with `ablate`; else only for an item whose outcome the
    rules change, to name the rule)."""
    every, demoted = frozenset(RULES), frozenset(OFF_BY_DEFAULT) - base
    found = []
    for name in dict.fromkeys(i.suite for i in items):
        async with replayer(suites[name], refuse_first=False) as on:  # a refusal before writing is no rule's
            for one in (i for i in items if i.suite == name):
                with_base = await on.replay(one.case, one.query, base)
                none = await on.replay(one.case, one.query, every)
                defaults = with_base  # a rule that did not fire changes nothing when off
                if demoted & set(with_base.fired):
                    defaults = await on.replay(one.case, one.query, base | demoted)
                measured = Measured(one, with_base, none, defaults)
                if ablate or with_base.passed != measured.none.passed:
                    for rule in with_base.fired:
                        measured.without[rule] = await on.replay(one.case, one.query, base | {rule})
                found.append(measured)
    return found


def _kind(m: Measured) -> str:
    return GOLD if m.item.source == GOLD else "runs"


def _column(m: Measured) -> str:
    return f"{_kind(m)}:{m.item.suite}"


def written_from(rule: Rule) -> str:
    """The database of the case a rule was written from ("advising-08" -> advising), or ""."""
    match = re.match(r"[a-z]+", rule.case)
    return match[0] if match else ""


@dataclass
class Tally:
    fires: int = 0
    helps: int = 0
    hurts: int = 0

    def add(self, m: Measured, rule: str) -> None:
        self.fires += 1
        self.helps += m.helped(rule)
        self.hurts += m.hurt(rule)

    def __str__(self) -> str:
        return f"{self.fires}/{self.helps}/{self.hurts}" if self.fires else "·"


def tallies(measured: list[Measured]) -> dict[str, dict[str, Tally]]:
    """Per rule, per column (`gold`, `runs`, `elsewhere`: not on the database it was written
    from, and each `gold:suite` / `runs:suite`), its fires, helps and hurts."""
    found: dict[str, dict[str, Tally]] = defaultdict(lambda: defaultdict(Tally))
    for m in measured:
        for rule in m.on.fired:
            columns = [_kind(m), _column(m)]
            if m.item.database != written_from(RULES[rule]):
                columns.append("elsewhere")
            for column in columns:
                found[rule][column].add(m, rule)
    return found


def table(measured: list[Measured]) -> list[str]:
    """The per-rule table (markdown), then the passes with every rule on, the defaults and none."""
    counts = tallies(measured)
    suites = list(dict.fromkeys(_column(m) for m in measured))
    head = ["rule", "phase", "tier", "default", "written from", "gold", "runs", "elsewhere", *suites]
    lines = [
        "Each cell: fires/helps/hurts (· : never fired). `elsewhere`: on databases other than the one the "
        "rule was written from (every database for a rule written from none).",
        "",
        "| " + " | ".join(head) + " |",
        "|" + "---|" * len(head),
    ]
    for name, rule in RULES.items():
        got = counts.get(name, {})
        default = "off" if name in OFF_BY_DEFAULT else "on"
        cells = [f"`{name}`", rule.phase, rule.tier, default, rule.case, *(str(got.get(c, "·")) for c in head[5:])]
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", "| queries | replayed | pass, every rule on | pass, the defaults | pass, every rule off |"]
    lines.append("|---|---|---|---|---|")
    for column in suites:
        mine = [m for m in measured if _column(m) == column]
        counted = [sum(getattr(m, kind).passed for m in mine) for kind in ("on", "defaults", "none")]
        lines.append(f"| {column} | {len(mine)} | " + " | ".join(map(str, counted)) + " |")
    return lines


def default_losses(measured: list[Measured]) -> list[str]:
    """The queries that pass with every rule on and fail with the defaults, and the demoted
    rules that had fired on them."""
    return [
        f"{m.item.suite} {m.item.case.id} (from {m.item.source}): "
        + ", ".join(r for r in m.on.fired if r in OFF_BY_DEFAULT)
        for m in measured
        if m.on.passed and not m.defaults.passed
    ]


def broken_lines(measured: list[Measured]) -> list[str]:
    """A line for each gold query right as written and wrong as the default rules left it."""
    return [
        f"{m.item.suite} {m.item.case.id}: {', '.join(m.culprits())} changed the gold query into a wrong one: "
        f"{m.item.query!r} -> {m.defaults.ran!r}"
        for m in measured
        if m.item.source == GOLD and m.broken
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--suite", action="append", default=[], help="only this suite's gold (repeatable)")
    parser.add_argument("--runs", type=Path, default=Path("docs/evals"), help="a folder of saved run folders")
    parser.add_argument("--history", type=int, default=0, help="also the last N committed versions of each run")
    parser.add_argument("--no-runs", action="store_true", help="the gold queries only")
    parser.add_argument("--defaults", action="store_true", help="the default rules against none, on gold only")
    parser.add_argument("--write", type=Path, help="also write the table here (markdown)")
    args = parser.parse_args()
    suites = {s.name: s for s in gate_suites(args.suite)}
    items = gold_items(suites.values())
    if not (args.no_runs or args.defaults):
        items += run_items(args.runs, suites, args.history)
    base = frozenset(OFF_BY_DEFAULT) if args.defaults else frozenset()
    measured = asyncio.run(measure(suites, items, base, ablate=not args.defaults))
    broken = broken_lines(measured)
    if args.defaults:
        print(f"{len(measured)} gold queries; {sum(m.on.passed for m in measured)} pass with the defaults")
    else:
        lines = table(measured)
        if losses := default_losses(measured):
            lines += ["", "Right with every rule on, wrong with the defaults (the demoted rules that fired):", ""]
            lines += [f"- {line}" for line in losses]
        print("\n".join(lines))
        if args.write:
            command = " ".join(["python -m datawell.evals.gate", *sys.argv[1:]])
            head = ["# The query rewrite rules' gate", "", f"Written by `{command}` (docs/evals.md).", ""]
            args.write.write_text("\n".join(head + lines) + "\n", encoding="utf-8")
    print("\n".join(broken) or "no gold query changed into a wrong one")
    raise SystemExit(1 if broken else 0)


if __name__ == "__main__":
    main()
