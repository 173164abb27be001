"""Schema linking: the tables and columns a question needs, and the join path between them.

Pruning (`tools/pruning.py`) keeps a large namespace's relevant tables; linking goes further
and applies to a namespace of any size. Per question:

- every table and column is scored by likeness to the question's content words (the
  coverage helpers' words, `tools/coverage.py`) and to the question whole: a word that
  matches a name's own words (`tools/names.py`) or a stored value outright counts most, then
  the embedding cosine of the word or the question to the name and its description;
- the tables with a word match, and the best-scored few, are the anchors; the tables on the
  cheapest tree of links that joins them (networkx's Steiner tree over the namespace's active
  links: the ontology's and the foreign-key-like ones the curator inferred) come with them,
  so a chain whose middle table the question never names still joins;
- in `columns` mode each kept table keeps only its columns the question is like, its key
  columns and the ends of the join path's links;
- the join path is kept as `table.column` pairs (`Linked.joins`), for the prompt.

Linking is a first try like pruning: the nl2ql graph widens to the full catalog when a query
names something the linked one left out. In service (`DATAWELL_SCHEMA_LINKING`, off by
default) it widens pruning rather than replacing it (`graphs.view.shown_catalog`): a namespace
over the prune limits shows the tables pruning keeps and those linking keeps (`widened`), and
with `DATAWELL_SCHEMA_LINKING_JOINS` the join path's links that are not the namespace's own are
written under Joins (`inferred_joins`); a namespace within the limits is shown whole, as
before, so its prompt stays the same for every question."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace
from enum import StrEnum

import networkx as nx

from datawell.llm.embeddings import Embedder
from datawell.tools.catalog import Catalog, TableInfo
from datawell.tools.coverage import content_words, singular, word_match
from datawell.tools.names import own_words, parts
from datawell.tools.pruning import named_columns
from datawell.tools.rewrite.joins import keyed_by

ANCHORS = 2  # the best-scored tables kept even without a word match
WORD_MATCH = 1.0  # a question word that is a name's own word
VALUE_MATCH = 1.0  # a stored value the question names
LIKE = 0.45  # a column at least this like a question word (cosine) is kept
COLUMNS_WHOLE = 6  # a table with no more columns than this keeps them all
KEY_PARTS = frozenset({"id", "code", "key", "no"})
LABEL_PARTS = frozenset({"name", "title"})


class LinkMode(StrEnum):
    OFF = "off"  # today's behaviour: a large namespace is pruned (tools/pruning.py), nothing else
    TABLES = "tables"  # the tables the question needs and the join path between them
    COLUMNS = "columns"  # ...and of those tables only the columns the question needs, keys kept


@dataclass(frozen=True)
class Linked:
    catalog: Catalog  # the kept tables, with only their kept columns in `columns` mode
    joins: list[tuple[str, str]]  # the join path as `table.column` pairs

    def join_line(self) -> str:
        return "join path: " + ", ".join(f"{a} = {b}" for a, b in self.joins) if self.joins else ""


def _cosine(a: list[float], b: list[float]) -> float:
    norm = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return sum(x * y for x, y in zip(a, b, strict=True)) / norm if norm else 0.0


def _words(name: str) -> set[str]:
    return set(own_words(name.rsplit(".", 1)[-1])) or set(parts(name.rsplit(".", 1)[-1]))


def named(name: str, asked: list[str], *, whole: bool = False) -> bool:
    """Whether a question word is one of the name's own words (prefix-alike: course/courses);
    `whole`: every one of them is (a table `domain_author` is not named by "author")."""
    said = [singular(word) for word in asked if len(word) >= 3]
    found = [any(word_match(word, {singular(own)}) for word in said) for own in _words(name)]
    return all(found) if whole else any(found)


def names_a_column(table: TableInfo, asked: list[str]) -> bool:
    """Whether the question names one of the table's columns whole, its keys aside (`id` is everyone's)."""
    return any(named(c, asked, whole=True) for c in table.columns if own_words(c) and not is_key(c))


def _values_named(table: TableInfo, column: str, question: str) -> bool:
    hint = table.hints.get(column)
    folded = question.casefold()
    return hint is not None and any(
        len(str(v)) > 2 and re.search(rf"\b{re.escape(str(v).casefold())}\b", folded) for v in hint.values
    )


def _column_text(table: TableInfo, column: str) -> str:
    about = table.column_descriptions.get(column, "")
    return f"{table.dataset_name.replace('_', ' ')} {column.replace('_', ' ')}: {about}".rstrip(": ")


def _table_text(table: TableInfo) -> str:
    return f"{table.dataset_name.replace('_', ' ')}: {table.description}".rstrip(": ")


def is_key(column: str) -> bool:
    """A column named as a key (`id`, `course_id`, `airline_code`): what joins use."""
    return bool(set(parts(column)) & KEY_PARTS)


def is_label(column: str) -> bool:
    """A column that names its rows (`name`, `first_name`, `title`): what answers show."""
    return bool(set(parts(column)) & LABEL_PARTS)


def key_links(catalog: Catalog) -> list[tuple[str, str]]:
    """Foreign-key-like links read from names alone, for a namespace whose curator found none
    between two tables: a column named as another table's own key (`writes.aid` is author's
    `aid`, `flight.airline_code` airline's)."""
    found = []
    for table in catalog.tables:
        for column in table.columns:
            for owner in sorted(keyed_by(catalog, column) - {table.name}):
                theirs = next(c for c in catalog.table(owner).columns if c.lower() == column.lower())  # type: ignore[union-attr]
                found.append((f"{table.name}.{column}", f"{owner}.{theirs}"))
    return found


@dataclass(frozen=True)
class SchemaLinker:
    """Links a question to the tables (and columns) of a catalog, scoring with `embedder`."""

    embedder: Embedder
    mode: LinkMode = LinkMode.TABLES

    async def link(self, catalog: Catalog, joins: list[tuple[str, str]], question: str) -> Linked:
        """The part of `catalog` `question` needs; `joins` are the active links as
        `table.column` pairs. The whole catalog when the mode is off or there is no question."""
        if self.mode == LinkMode.OFF or not question.strip() or not catalog.tables:
            return Linked(catalog, [])
        asked = content_words(question)
        columns = [(t, c) for t in catalog.tables for c in t.columns]
        vectors = await self.embedder.embed(
            [question, *asked, *(_table_text(t) for t in catalog.tables), *(_column_text(t, c) for t, c in columns)]
        )
        whole, word_vectors = vectors[0], vectors[1 : 1 + len(asked)]
        table_vectors = vectors[1 + len(asked) : 1 + len(asked) + len(catalog.tables)]
        column_vectors = vectors[1 + len(asked) + len(catalog.tables) :]

        def likeness(vector: list[float]) -> float:
            return max([_cosine(whole, vector), *(_cosine(w, vector) for w in word_vectors)])

        column_scores: dict[tuple[str, str], float] = {}
        for (table, column), vector in zip(columns, column_vectors, strict=True):
            lexical = WORD_MATCH if named(column, asked) else 0.0
            lexical += VALUE_MATCH if _values_named(table, column, question) else 0.0
            column_scores[(table.name, column)] = lexical + likeness(vector)
        scores: dict[str, float] = {}
        anchors: set[str] = set()
        for table, vector in zip(catalog.tables, table_vectors, strict=True):
            said = named(table.name, asked, whole=True)
            valued = any(_values_named(table, c, question) for c in table.columns)
            if said or valued or names_a_column(table, asked):
                anchors.add(table.name)
            best_column = max((column_scores[(table.name, c)] for c in table.columns), default=0.0)
            scores[table.name] = (WORD_MATCH if said else 0.0) + likeness(vector) + best_column
        ranked = sorted(scores, key=lambda name: (-scores[name], name))
        anchors.update(ranked[:ANCHORS])
        anchors.update(named_columns(catalog, question))
        graph = _graph(catalog, joins)
        kept, path = _connect(graph, anchors)
        tables = [t for t in catalog.tables if t.name in kept]
        if self.mode == LinkMode.COLUMNS:
            ends = {end for pair in path for end in pair}
            tables = [_columns_kept(t, column_scores, ends) for t in tables]
        return Linked(replace(catalog, tables=tables), path)


def widened(catalog: Catalog, pruned: Catalog, linked: Linked) -> Catalog:
    """The tables pruning kept and those linking kept, in the catalog's order."""
    names = {t.name for t in pruned.tables} | {t.name for t in linked.catalog.tables}
    return replace(catalog, tables=[t for t in catalog.tables if t.name in names])


def inferred_joins(linked: Linked, active: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """The join path's links read from names (`key_links`): those no active link already states."""
    stated = {frozenset(pair) for pair in active}
    return [pair for pair in linked.joins if frozenset(pair) not in stated]


def _graph(catalog: Catalog, joins: list[tuple[str, str]]) -> nx.Graph:
    """Tables as nodes, a link as an edge holding its `table.column` ends (the first link of a pair)."""
    graph = nx.Graph()
    graph.add_nodes_from(t.name for t in catalog.tables)
    # the namespace's links first: a pair of tables they join takes no link read from names
    for left, right in [*sorted(joins), *key_links(catalog)]:
        a, b = left.rsplit(".", 1)[0], right.rsplit(".", 1)[0]
        if a != b and a in graph and b in graph and not graph.has_edge(a, b):
            graph.add_edge(a, b, ends=(left, right))
    return graph


def _connect(graph: nx.Graph, anchors: set[str]) -> tuple[set[str], list[tuple[str, str]]]:
    """The anchors with the tables that join them, and the links that do, per connected part."""
    kept = set(anchors)
    path: list[tuple[str, str]] = []
    for part in nx.connected_components(graph):
        terminals = sorted(anchors & part)
        if len(terminals) < 2:
            continue
        tree = nx.algorithms.approximation.steiner_tree(graph.subgraph(part), terminals, method="mehlhorn")
        kept.update(tree.nodes)
        path += sorted(graph.edges[a, b]["ends"] for a, b in tree.edges)
    return kept, path


def _columns_kept(table: TableInfo, scores: dict[tuple[str, str], float], ends: set[str]) -> TableInfo:
    if len(table.columns) <= COLUMNS_WHOLE:
        return table
    keep = {
        c
        for c in table.columns
        if scores[(table.name, c)] >= WORD_MATCH + LIKE
        or scores[(table.name, c)] >= LIKE
        or is_key(c)
        or is_label(c)
        or f"{table.name}.{c}" in ends
    }
    return replace(
        table,
        columns={c: kind for c, kind in table.columns.items() if c in keep},
        column_descriptions={c: d for c, d in table.column_descriptions.items() if c in keep},
        hints={c: h for c, h in table.hints.items() if c in keep},
    )
