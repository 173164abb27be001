"""The namespace as every graph shows it to a model: the catalog (pruned for the question in
large namespaces, and widened by schema linking when it is on), its joins, the verified
examples most like the question (and, when switched on, public pairs on other databases built
like it: issue 50), and the caller's extra instructions. The nl2ql and assistant graphs both
read it from here, and it reads everything through the query tools and the verified examples,
never the database."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Protocol

from datawell.ontology.links import MatchType
from datawell.storage.access import Caller, NamespaceRef
from datawell.tools.catalog import Catalog
from datawell.tools.examples import Example, render_examples
from datawell.tools.linking import Linked, inferred_joins, widened
from datawell.tools.ql import LinkEnds, Who
from datawell.tools.retrieved_examples import CorpusEntry, render_retrieved

NO_LINKS = "(none)"


class NamespaceReader(Protocol):
    """What the view reads of a namespace (`tools.ql.QueryTools`)."""

    async def catalog(self, who: Who, namespace: NamespaceRef) -> Catalog: ...

    async def links(self, who: Who, namespace: NamespaceRef) -> list[LinkEnds]: ...


class Pruner(Protocol):
    """Keeps the tables of a large catalog that matter to a question (`tools.pruning.SchemaPruner`)."""

    async def prune(self, catalog: Catalog, joins: list[tuple[str, str]], question: str) -> Catalog: ...


class Linker(Protocol):
    """Links a question to the tables it needs and the join path between them (`tools.linking.SchemaLinker`)."""

    async def link(self, catalog: Catalog, joins: list[tuple[str, str]], question: str) -> Linked: ...


class Examples(Protocol):
    """Verified examples the caller may run (`tools.examples.VerifiedExamples`)."""

    async def exact(self, who: Who, namespace: NamespaceRef, question: str) -> Example | None: ...

    async def similar(self, who: Who, namespace: NamespaceRef, question: str, k: int = 3) -> list[Example]: ...


class Retriever(Protocol):
    """Public pairs on other databases (`tools.retrieved_examples.RetrievedExamples`)."""

    def similar(
        self, question: str, names: Iterable[str], k: int, leave_out: str | None = None
    ) -> list[CorpusEntry]: ...


def link_columns(catalog: Catalog, links: list[LinkEnds]) -> list[LinkEnds]:
    """Active links as (table.column, table.column, match type, hits) with tables named as
    queries name them. Links to datasets the catalog lacks (the caller cannot read them, or
    pruning left them out) are left out."""
    tables = {(t.namespace.name, t.name.rsplit(".", 1)[-1]): t.name for t in catalog.tables}

    def column(end: str) -> str | None:
        namespace, _, rest = end.partition("/")
        dataset, _, field = rest.rpartition(".")
        table = tables.get((namespace, dataset))
        return f"{table}.{field}" if table and field else None

    found = []
    for origin, destination, match_type, hits in links:
        left, right = column(origin), column(destination)
        if left and right:
            found.append((left, right, match_type, hits))
    return found


def join_condition(catalog: Catalog, left: str, right: str, kind: str) -> str:
    """The condition that joins a link's two columns as their values match: as written for
    an ExactMatch; ignoring case for a NormalizedMatch of two text columns (its most common
    difference, as `osl1` against `OSL1`), which a plain `=` would make a join of no rows."""
    if kind == MatchType.NORMALIZED and column_type(catalog, left) == column_type(catalog, right) == "text":
        return f"LOWER({left}) = LOWER({right})"
    return f"{left} = {right}"


def column_type(catalog: Catalog, column: str) -> str | None:
    table, _, field = column.rpartition(".")
    info = catalog.table(table)
    return info.columns.get(field) if info else None


def render_links(catalog: Catalog, links: list[LinkEnds], inferred: list[tuple[str, str]] | None = None) -> str:
    """Active links as joins, for the prompt; then the `inferred` ones (schema linking's join
    path read from key names), marked as such."""
    lines = [
        f"- {join_condition(catalog, left, right, kind)} ({kind}, {hits} matching values)"
        for left, right, kind, hits in link_columns(catalog, links)
    ]
    lines += [f"- {left} = {right} (keys named alike)" for left, right in inferred or []]
    return "\n".join(lines) or NO_LINKS


async def shown_catalog(
    catalog: Catalog, active: list[tuple[str, str]], question: str, pruner: Pruner, linker: Linker | None = None
) -> tuple[Catalog, Linked | None]:
    """What the query writer is shown of `catalog` for `question`: pruned when it is large, then
    widened by `linker`'s tables when pruning left some out; `active` are the namespace's links as
    `table.column` pairs. The linking result comes with it when linking ran."""
    tables = [(a.rsplit(".", 1)[0], b.rsplit(".", 1)[0]) for a, b in active]
    shown = await pruner.prune(catalog, tables, question)
    if linker is None or len(shown.tables) == len(catalog.tables):
        return shown, None
    linked = await linker.link(catalog, active, question)
    return widened(catalog, shown, linked), linked


@dataclass(frozen=True)
class Described:
    """A namespace as the query writer sees it: the catalog and its joins as prompt text, the
    `table.column` names the catalog shows, and whether pruning left tables out."""

    catalog: str
    links: str
    columns: list[str]
    pruned: bool = False

    def state(self) -> dict[str, Any]:
        return {"catalog": self.catalog, "links": self.links, "columns": self.columns, "pruned": self.pruned}


@dataclass(frozen=True)
class NamespaceView:
    reader: NamespaceReader
    pruner: Pruner | None = None  # None: the whole catalog for every question
    linker: Linker | None = None  # widens what pruning keeps (issue 50, DATAWELL_SCHEMA_LINKING)
    linked_joins: bool = False  # and writes out its join path's links read from key names
    examples: Examples | None = None  # verified question -> query pairs of the namespace
    few_shot: int = 3  # the most similar verified examples shown to the query writer
    retrieved: Retriever | None = None  # question -> query pairs on other databases (issue 50)
    retrieved_count: int = 0  # how many of them the query writer is shown
    leave_own_out: bool = False  # never a pair of the database the namespace is named after (evals)

    async def describe(self, caller: Caller, namespace: NamespaceRef, question: str = "") -> Described:
        """The namespace as this caller may read it; with a question, only the tables relevant
        to it when the namespace is large (schema pruning, widened by schema linking when on)."""
        catalog = await self.reader.catalog(caller, namespace)
        links = await self.reader.links(caller, namespace)
        shown, inferred = catalog, []
        if question and self.pruner is not None:
            active = [(a, b) for a, b, _, _ in link_columns(catalog, links)]
            shown, linked = await shown_catalog(catalog, active, question, self.pruner, self.linker)
            if linked is not None and self.linked_joins:
                inferred = inferred_joins(linked, active)
        return Described(
            catalog=shown.render() if shown.tables else f"(namespace {namespace} has no datasets yet)",
            links=render_links(shown, links, inferred),
            columns=[f"{t.name}.{c}" for t in shown.tables for c in t.columns],
            pruned=len(shown.tables) < len(catalog.tables),
        )

    async def examples_block(self, caller: Caller, namespace: NamespaceRef, question: str) -> str:
        """The verified examples most like the question, as few-shot text for a stage's prompt
        (empty when the namespace has none the caller may run)."""
        if self.examples is None or self.few_shot <= 0:
            return ""
        found = await self.examples.similar(caller, namespace, question, self.few_shot)
        return f"Verified examples of this namespace:\n{render_examples(found)}\n\n" if found else ""

    async def retrieved_block(self, caller: Caller, namespace: NamespaceRef, question: str) -> str:
        """The pairs on other databases whose questions are built most like this one (its
        names masked with the namespace's tables and columns), as few-shot text; empty when off."""
        if self.retrieved is None or self.retrieved_count <= 0:
            return ""
        catalog = await self.reader.catalog(caller, namespace)
        names = [name for t in catalog.tables for name in (t.dataset_name, *t.columns)]
        leave_out = namespace.name if self.leave_own_out else None
        return render_retrieved(self.retrieved.similar(question, names, self.retrieved_count, leave_out))

    async def verified_example(self, caller: Caller, namespace: NamespaceRef, question: str) -> Example | None:
        """The verified example whose question is this one, if the caller may run its query."""
        if self.examples is None:
            return None
        return await self.examples.exact(caller, namespace, question)


def helper_block(helper_prompt: str) -> str:
    return f"\nAdditional instructions from the caller:\n{helper_prompt.strip()}" if helper_prompt.strip() else ""
