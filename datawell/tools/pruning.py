"""Schema pruning: for a namespace too large to show whole, the tables a question needs.

A small model that sees twelve tables joins the ones it does not need; shown the three the
question is about (and the tables that join them), it writes the short query. Namespaces
at or under the limits are never pruned, so their prompt stays byte-identical across
questions (llama.cpp reuses the cached prefix). Relevance, per table:

- the cosine between the question's embedding and the table's text (its name, description,
  column names and descriptions);
- lexical matches: a table or column name, or one of its sample values, in the question.

The best-scoring tables are the seeds; tables on the shortest link path between two seeds
come next (a join needs both ends and everything between), then the tables of columns the
question names whole (`named_columns`: "students who found the instructor hilarious" needs
course_tags_count's `hilarious`, though course, instructor and student are named outright),
then the seeds' direct neighbours, best first, up to `keep` tables. The catalog keeps its
order. Pruning is only a first try: the nl2ql graph widens to the full catalog when a query names something the
pruned one left out."""

from __future__ import annotations

import math
import re
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, replace

from datawell.llm.embeddings import Embedder
from datawell.tools.catalog import Catalog, TableInfo
from datawell.tools.coverage import STOPWORDS
from datawell.tools.names import GENERIC

SEEDS = 3  # tables chosen on their own score; the rest join them
NAME_MATCH = 1.0  # a table named in the question outranks any embedding score
COLUMN_MATCH = 0.25
VALUE_MATCH = 0.5


@dataclass(frozen=True)
class PruneLimits:
    max_tables: int = 6  # a catalog with more tables than this is pruned...
    max_columns: int = 60  # ...or with more columns than this
    keep: int = 6  # at most this many tables in a pruned catalog

    def exceeded(self, catalog: Catalog) -> bool:
        columns = sum(len(t.columns) for t in catalog.tables)
        return len(catalog.tables) > self.max_tables or columns > self.max_columns


def _words(text: str) -> set[str]:
    """Lower-case words with a plural `s` dropped, so "payments" meets "payment"."""
    return {w[:-1] if len(w) > 3 and w.endswith("s") else w for w in re.findall(r"[a-z0-9]+", text.lower())}


def _name_words(name: str) -> set[str]:
    return _words(name.rsplit(".", 1)[-1].replace("_", " "))


def table_text(table: TableInfo) -> str:
    """What a table's embedding is made of."""
    columns = "; ".join(f"{name}: {table.column_descriptions.get(name, '')}".rstrip(": ") for name in table.columns)
    return f"{table.dataset_name.replace('_', ' ')}: {table.description}\n{columns}"


def lexical_score(table: TableInfo, question: str) -> float:
    words = _words(question)
    score = 0.0
    if _name_words(table.name) <= words:
        score += NAME_MATCH
    if any(_name_words(column) <= words for column in table.columns if _name_words(column) - {"id", "code"}):
        score += COLUMN_MATCH
    folded = question.casefold()
    values = (v for hint in table.hints.values() for v in hint.values if len(v) > 2)
    # A longer value is a surer sign: "Nordic Tools AB" names a supplier, "Tools" many things.
    matched = [len(v.split()) for v in values if re.search(rf"\b{re.escape(v.casefold())}\b", folded)]
    if matched:
        score += VALUE_MATCH * min(max(matched), 3) / 3
    return score


def named_columns(catalog: Catalog, question: str) -> set[str]:
    """The tables holding a column the question's first line names whole ("hilarious",
    "clear grading") that no other table has, by a word that says what it is about (not `id`,
    `number`, `year` or `how`). The lines after the first are instructions, which name
    columns as examples ("filter airport, city, country names using ILIKE")."""
    words = _words(question.strip().split("\n", 1)[0])
    holders: dict[str, list[str]] = {}
    for table in catalog.tables:
        for column in table.columns:
            holders.setdefault(column.lower(), []).append(table.name)
    named = {
        (table.name, frozenset(own))
        for table in catalog.tables
        for column in table.columns
        if len(holders[column.lower()]) == 1
        and (own := _name_words(column)) <= words
        and own - GENERIC - STOPWORDS
        and not _table_word(own, catalog)
    }
    # `score` goes when `clarity_score` is named too: the longer name is what was meant
    return {table for table, own in named if not any(own < other for _, other in named)}


def _table_word(own: set[str], catalog: Catalog) -> bool:
    """A one-word column name that is a table's name said as a verb or plural: "cited" is cite's."""
    return len(own) == 1 and any(
        next(iter(own)).startswith(name) for t in catalog.tables for name in _name_words(t.name) if len(name) >= 4
    )


def _cosine(a: list[float], b: list[float]) -> float:
    norm = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return sum(x * y for x, y in zip(a, b, strict=True)) / norm if norm else 0.0


def _path(start: str, goal: str, graph: dict[str, list[str]]) -> list[str]:
    """The shortest chain of linked tables from start to goal (ties broken by name), or []."""
    previous: dict[str, str] = {start: start}
    queue = deque([start])
    while queue:
        node = queue.popleft()
        if node == goal:
            chain = [goal]
            while chain[-1] != start:
                chain.append(previous[chain[-1]])
            return chain[::-1]
        for neighbour in graph.get(node, []):
            if neighbour not in previous:
                previous[neighbour] = node
                queue.append(neighbour)
    return []


@dataclass(frozen=True)
class SchemaPruner:
    """Prunes catalogs over the limits, scoring tables with `embedder`."""

    embedder: Embedder
    limits: PruneLimits = PruneLimits()

    async def scores(self, catalog: Catalog, question: str) -> dict[str, float]:
        # One batch: the question and every table's text (a dozen short texts per question).
        asked, *vectors = await self.embedder.embed([question, *(table_text(t) for t in catalog.tables)])
        return {
            table.name: _cosine(asked, vector) + lexical_score(table, question)
            for table, vector in zip(catalog.tables, vectors, strict=True)
        }

    async def prune(self, catalog: Catalog, joins: Iterable[tuple[str, str]], question: str) -> Catalog:
        """The tables of `catalog` relevant to `question`; `joins` are the active links as
        pairs of table names. The whole catalog when it is within the limits."""
        if not question.strip() or not self.limits.exceeded(catalog):
            return catalog
        scores = await self.scores(catalog, question)
        ranked = sorted(scores, key=lambda name: (-scores[name], name))
        graph: dict[str, list[str]] = {}
        for left, right in joins:
            if left in scores and right in scores and left != right:
                graph.setdefault(left, []).append(right)
                graph.setdefault(right, []).append(left)
        for neighbours in graph.values():
            neighbours.sort()
        keep = self.limits.keep
        seeds = ranked[: min(SEEDS, keep)]
        chosen = list(seeds)
        for i, first in enumerate(seeds):
            for second in seeds[i + 1 :]:
                between = [t for t in _path(first, second, graph) if t not in chosen]
                if len(chosen) + len(between) <= keep:
                    chosen += between
        named_tables = named_columns(catalog, question)
        named = [t for t in ranked if t in named_tables and t not in chosen]
        chosen += named[: max(0, keep - len(chosen))]
        linked = {n for t in chosen for n in graph.get(t, []) if n not in chosen}
        chosen += [t for t in ranked if t in linked][: max(0, keep - len(chosen))]
        return replace(catalog, tables=[t for t in catalog.tables if t.name in chosen])
