"""Measures schema linking (`tools/linking.py`) offline: no chat model, no database.

    python -m datawell.evals.linking [--suite dev --suite validation ...] [--embedder minilm|hashing|<folder>]
        [--write docs/evals/linking.md]

For every nl2ql case with a gold query, the suite's fixtures become the catalog as
`coverage_check` builds it (fields, descriptions, stored values as hints would show them;
the fixtures' links when the suite activates them), the linker runs on the question in each
mode (`off` is pruning alone, `widened` pruning widened by linking as the service does with
`DATAWELL_SCHEMA_LINKING`), and the gold query, parsed with sqlglot, says what was
needed: its tables, and its columns qualified by table (aliases resolved). Per suite and
mode: mean recall of the gold's tables and columns, the share of cases with both whole, and
the mean share of the catalog's tables and columns kept. Only totals are printed, for every
suite: the validation suite decides, its cases are never read to fit anything."""

from __future__ import annotations

import argparse
import asyncio
from dataclasses import dataclass
from pathlib import Path
from statistics import mean
from typing import cast

import sqlglot
from sqlglot import exp
from sqlglot.optimizer.qualify import qualify

from datawell.evals.coverage_check import fixture_catalog
from datawell.evals.fixtures import load_fixture
from datawell.evals.suites import Suite, load_suite
from datawell.graphs.view import link_columns, shown_catalog
from datawell.llm.embeddings import Embedder
from datawell.tools.catalog import Catalog
from datawell.tools.checker.allowed import DIALECTS, QL_DIALECT
from datawell.tools.coverage import content_words
from datawell.tools.linking import LinkMode, SchemaLinker, is_key, named, names_a_column
from datawell.tools.pruning import SchemaPruner
from datawell.tools.ql import LinkEnds

SUITES = ("dev", "validation", "nl2ql", "erp")
WIDENED = "widened"  # pruning, widened by linking's tables (the service with DATAWELL_SCHEMA_LINKING)
MODES = (*(m.value for m in LinkMode), WIDENED)


@dataclass(frozen=True)
class Needed:
    tables: set[str]
    columns: set[str]  # table.column


MISSED_KINDS = ("joins only", "named whole", "partly named", "column named", "unnamed")


def missed_kind(table: str, gold: Needed, catalog: Catalog, question: str) -> str:
    """Why a gold table the linker left out may have been missed, as a failure category (never
    the case): the gold reads only its keys (a bridge: the join path's job), the question names
    all of its own words or only some of them, names one of its other columns, or none."""
    asked = content_words(question)
    read = [c.split(".", 1)[1] for c in gold.columns if c.split(".", 1)[0] == table]
    info = catalog.table(table)
    if read and all(is_key(c) for c in read):
        return "joins only"
    if named(table, asked, whole=True):
        return "named whole"
    if named(table, asked):
        return "partly named"
    if info is not None and names_a_column(info, asked):
        return "column named"
    return "unnamed"


@dataclass(frozen=True)
class Row:
    suite: str
    mode: str
    cases: int
    table_recall: float
    column_recall: float
    whole: float  # share of cases with every gold table and column kept
    tables_kept: float
    columns_kept: float
    missed: dict[str, int]  # gold tables left out, by `missed_kind`


def needed(query: str, catalog: Catalog) -> Needed | None:
    """The catalog tables and `table.column`s a query reads (None when it does not parse)."""
    schema = {t.name: dict(t.columns) for t in catalog.tables}
    try:
        tree = qualify(
            sqlglot.parse_one(query, read=DIALECTS[QL_DIALECT]),
            schema=cast(dict[str, object], schema),
            validate_qualify_columns=False,
            identify=False,
        )
    except sqlglot.errors.SqlglotError:
        return None
    aliases = {t.alias_or_name: t.name for t in tree.find_all(exp.Table) if t.name in schema}
    tables = set(aliases.values())
    columns = set()
    for column in tree.find_all(exp.Column):
        table = aliases.get(column.table)
        if table and column.name in schema[table]:
            columns.add(f"{table}.{column.name}")
    return Needed(tables, columns)


def fixture_links(suite: Suite, name: str) -> list[LinkEnds]:
    if not suite.links:
        return []
    fixture = load_fixture(name, suite)
    return [(link.origin, link.destination, str(link.match_type), link.hits) for link in fixture.links]


async def kept(mode: str, embedder: Embedder, catalog: Catalog, links: list[LinkEnds], question: str) -> Catalog:
    ends = [(a, b) for a, b, _, _ in link_columns(catalog, links)]
    if mode in (LinkMode.OFF, WIDENED):  # as the service's view shows it
        linker = SchemaLinker(embedder) if mode == WIDENED else None
        return (await shown_catalog(catalog, ends, question, SchemaPruner(embedder), linker))[0]
    return (await SchemaLinker(embedder, LinkMode(mode)).link(catalog, ends, question)).catalog


async def measure(suite: Suite, mode: str, embedder: Embedder) -> Row:
    catalogs = {name: fixture_catalog(suite, name) for name in suite.fixtures}
    links = {name: fixture_links(suite, name) for name in suite.fixtures}
    table_recall, column_recall, whole, tables_kept, columns_kept = [], [], [], [], []
    missed = dict.fromkeys(MISSED_KINDS, 0)
    for case in suite.cases:
        if not case.expected.query or not case.vars.question:
            continue
        namespace = case.vars.namespace or suite.fixtures[0]
        catalog = catalogs[namespace]
        gold = needed(case.expected.query, catalog)
        if gold is None or not gold.tables:
            continue
        shown = await kept(mode, embedder, catalog, links[namespace], case.vars.question)
        shown_tables = {t.name for t in shown.tables}
        shown_columns = {f"{t.name}.{c}" for t in shown.tables for c in t.columns}
        for table in gold.tables - shown_tables:
            missed[missed_kind(table, gold, catalog, case.vars.question)] += 1
        found_tables = len(gold.tables & shown_tables) / len(gold.tables)
        found_columns = len(gold.columns & shown_columns) / len(gold.columns) if gold.columns else 1.0
        table_recall.append(found_tables)
        column_recall.append(found_columns)
        whole.append(float(found_tables == found_columns == 1.0))
        tables_kept.append(len(shown.tables) / len(catalog.tables))
        columns_kept.append(len(shown_columns) / sum(len(t.columns) for t in catalog.tables))
    table_recall_, column_recall_, whole_, tables_kept_, columns_kept_ = (
        mean(v) if v else 0.0 for v in (table_recall, column_recall, whole, tables_kept, columns_kept)
    )
    return Row(suite.name, mode, len(whole), table_recall_, column_recall_, whole_, tables_kept_, columns_kept_, missed)


def table(rows: list[Row]) -> str:
    lines = [
        "| suite | mode | cases | table recall | column recall | whole recall | tables kept | columns kept |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    lines += [
        f"| {r.suite} | {r.mode} | {r.cases} | {r.table_recall:.3f} | {r.column_recall:.3f} | {r.whole:.3f} "
        f"| {r.tables_kept:.3f} | {r.columns_kept:.3f} |"
        for r in rows
    ]
    lines += ["", "Gold tables left out, by kind (`missed_kind`):", ""]
    lines += ["| suite | mode | " + " | ".join(MISSED_KINDS) + " |", "|---|---|" + "---:|" * len(MISSED_KINDS)]
    lines += [f"| {r.suite} | {r.mode} | " + " | ".join(str(r.missed[k]) for k in MISSED_KINDS) + " |" for r in rows]
    return "\n".join(lines)


def embedder_of(spec: str) -> Embedder:
    from datawell.llm.embeddings import HashingEmbedder, MiniLMEmbedder, StaticMiniLMEmbedder

    if spec == "minilm":
        return MiniLMEmbedder()
    return HashingEmbedder() if spec == "hashing" else StaticMiniLMEmbedder(Path(spec))


async def main(suites: list[str], embedder: Embedder, modes: list[str]) -> list[Row]:
    return [await measure(load_suite(name), mode, embedder) for name in suites for mode in modes]


REPORT_HEAD = """# Schema linking: recall of the gold query's tables and columns

Written by `python -m datawell.evals.linking {arguments}` (offline: no chat model; the catalog
from the fixtures as `coverage_check` builds it). Recall is the share of the gold query's
tables (columns, qualified by table) the linked catalog keeps; "whole recall" the share of
cases that keep all of them; "kept" the mean share of the catalog's tables and columns shown.
`off` is pruning as before linking (only namespaces over the limits are pruned); `widened` is
pruning widened by linking's tables, as the service does with `DATAWELL_SCHEMA_LINKING`.

"""


def cli() -> None:
    parser = argparse.ArgumentParser(prog="python -m datawell.evals.linking")
    parser.add_argument("--suite", action="append", help=f"a suite name or file (default: {', '.join(SUITES)})")
    parser.add_argument("--mode", action="append", choices=MODES)
    parser.add_argument("--embedder", default="minilm", help="minilm, hashing, or a distilled static model's folder")
    parser.add_argument("--write", type=Path, help="also write the table as markdown to this file")
    arguments = parser.parse_args()
    modes = arguments.mode or list(MODES)
    rows = asyncio.run(main(arguments.suite or list(SUITES), embedder_of(arguments.embedder), modes))
    print(table(rows))
    if arguments.write:
        told = " ".join(
            [*(f"--suite {s}" for s in arguments.suite or []), *(f"--mode {m}" for m in arguments.mode or [])]
        )
        arguments.write.write_text(REPORT_HEAD.format(arguments=told).replace("  ", " ") + table(rows) + "\n")


if __name__ == "__main__":
    cli()
