"""Schema pruning over the ERP fixture's twelve tables: the tables a question names stay,
with the tables that join them; small namespaces are untouched; the output is stable."""

from __future__ import annotations

import pytest
import sqlglot
from sqlglot import exp

from datawell.evals.fixtures import load_fixture
from datawell.evals.suites import load_suite
from datawell.llm.embeddings import HashingEmbedder
from datawell.storage.access import NamespaceRef
from datawell.storage.hints import ColumnHint
from datawell.tools.catalog import Catalog, TableInfo
from datawell.tools.pruning import PruneLimits, SchemaPruner, named_columns

ERP = NamespaceRef(id="ns-erp", owner="evals", name="erp")


class ZeroEmbedder:
    """Every text scores the same: only names, values and links decide."""

    dimension = 3

    async def embed(self, texts: list[str]) -> list[list[float]]:
        return [[1.0, 0.0, 0.0] for _ in texts]


@pytest.fixture(scope="module")
def erp() -> tuple[Catalog, list[tuple[str, str]]]:
    fixture = load_fixture("erp")
    tables = [
        TableInfo(
            name=name,
            dataset_id=f"id-{name}",
            namespace=ERP,
            physical=f"rows_{name}",
            description=spec.description,
            columns={field: f.type for field, f in spec.fields.items()},
            column_descriptions={field: f.description for field, f in spec.fields.items()},
            hints={
                field: ColumnHint(type=f.type, values=[str(row[field]) for row in fixture.rows(name)[:3]])
                for field, f in spec.fields.items()
            },
        )
        for name, spec in fixture.datasets.items()
    ]
    joins = [
        (link.origin.split("/")[1].split(".")[0], link.destination.split("/")[1].split(".")[0])
        for link in fixture.links
    ]
    return Catalog(namespace=ERP, tables=tables), joins


def names(catalog: Catalog) -> list[str]:
    return [t.name for t in catalog.tables]


async def test_the_named_tables_stay_with_the_tables_that_join_them(erp: tuple[Catalog, list[tuple[str, str]]]) -> None:
    catalog, joins = erp
    pruned = await SchemaPruner(ZeroEmbedder()).prune(catalog, joins, "Total payments per customer")
    kept = names(pruned)
    # payments → invoices → sales_orders → customers: the whole chain, nothing unrelated.
    assert {"payments", "customers", "invoices", "sales_orders"} <= set(kept)
    assert len(kept) <= 6 and "purchase_orders" not in kept and "stock_levels" not in kept
    assert kept == [t for t in names(catalog) if t in kept]  # the catalog's order


async def test_a_value_from_the_data_picks_its_table(erp: tuple[Catalog, list[tuple[str, str]]]) -> None:
    catalog, joins = erp
    pruned = await SchemaPruner(ZeroEmbedder(), PruneLimits(keep=2)).prune(
        catalog, joins, "Which products do we buy from Nordic Tools AB?"
    )
    assert names(pruned) == ["suppliers", "products"]


async def test_small_namespaces_and_empty_questions_are_untouched(erp: tuple[Catalog, list[tuple[str, str]]]) -> None:
    catalog, joins = erp
    small = Catalog(namespace=ERP, tables=catalog.tables[:3])
    pruner = SchemaPruner(HashingEmbedder())
    assert await pruner.prune(small, joins, "How many customers?") is small
    assert await pruner.prune(catalog, joins, "") is catalog
    wide = Catalog(namespace=ERP, tables=catalog.tables[:6])  # 6 tables, but 45 columns
    by_columns = SchemaPruner(HashingEmbedder(), PruneLimits(max_tables=6, max_columns=40, keep=3))
    assert len((await by_columns.prune(wide, joins, "How many customers?")).tables) == 3


async def test_pruning_is_deterministic(erp: tuple[Catalog, list[tuple[str, str]]]) -> None:
    catalog, joins = erp
    question = "Which warehouse holds the most units in stock?"
    first = await SchemaPruner(HashingEmbedder()).prune(catalog, joins, question)
    again = await SchemaPruner(HashingEmbedder()).prune(catalog, list(reversed(joins)), question)
    assert first.render() == again.render()
    assert {"warehouses", "stock_levels"} <= set(names(first))


async def test_every_gold_query_of_the_erp_suite_keeps_its_tables(erp: tuple[Catalog, list[tuple[str, str]]]) -> None:
    """With a lexical embedder (the real one only does better), each erp question's pruned
    catalog still holds every table its gold query reads, in half the catalog."""
    catalog, joins = erp
    pruner = SchemaPruner(HashingEmbedder())
    for case in load_suite("erp").cases:
        if case.expected.refuse:
            continue
        gold = {table.name for table in sqlglot.parse_one(case.expected.query or "").find_all(exp.Table)}
        kept = names(await pruner.prune(catalog, joins, case.vars.question))
        assert gold <= set(kept), (case.id, gold - set(kept))
        assert len(kept) <= len(catalog.tables) // 2


async def test_a_column_the_question_names_whole_brings_its_table() -> None:
    """Course, instructor and student are named outright and fill the seeds; `hilarious` is a
    column of course_tags_count alone, so that table is shown too. A generic word (`number`)
    or a one-word column that is a table's name as a verb (`cited`, cite's) brings nothing."""
    school = NamespaceRef(id="ns-school", owner="evals", name="advising")

    def table(name: str, *columns: str) -> TableInfo:
        return TableInfo(name, f"id-{name}", school, f"rows_{name}", "", dict.fromkeys(columns, "integer"), {})

    catalog = Catalog(
        school,
        [
            table("course", "course_id", "number", "clarity_score"),
            table("course_tags_count", "course_id", "hilarious", "good_feedback"),
            table("instructor", "instructor_id", "name"),
            table("student", "student_id", "name"),
            table("comment_instructor", "instructor_id", "student_id", "score"),
            table("cite", "cited", "citing"),
            table("semester", "semester_id", "year"),
        ],
    )
    pruner = SchemaPruner(ZeroEmbedder())

    asked = "How many students found the instructor hilarious per course number?"
    assert names(await pruner.prune(catalog, [], asked)) == ["course", "course_tags_count", "instructor", "student"]
    # The score of `clarity_score`, not comment_instructor's `score`; nothing for "cited".
    asked = "Which course has the best clarity score among those cited?"
    assert named_columns(catalog, asked) == {"course"}
