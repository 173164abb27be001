"""The columns a question names, said beside it to the query writer (issue 27).

A small model shown fifteen tables often takes a column from the wrong table, or invents
one, when the question says a column's name nearly word for word: "the minimum amount of
time required for a connecting flight" is `airport.minimum_connect_time`, "students who
found the instructor hilarious" is `course_tags_count.hilarious`. So, before the query is
written, every column the catalog shows is scored by how much of its name the question
says, and the best few are named under the question ("Columns the question names: ...").

A column's name words (`minimum_connect_time`: minimum, connect, time; never `id`, `code`,
`num`) each weigh by how rare they are among the catalog's column names: `time` is in nine
names and says little, `connect` in one. A name word is said when a content word of the
question is the same word or shares its first five letters (tools/coverage.py). A column is
named when the words said carry at least `SHARE` of its name's weight and one of them is a
rare word (in at most `RARE` names): "flight" alone, in every flight column, names none.
Pure functions of the catalog and the question: no model, no embedding."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from datawell.tools.catalog import Catalog
from datawell.tools.coverage import WORD, singular

MOST = 4  # columns named at most
SHARE = 0.6  # of a name's weight the question must say
RARE = 2  # a word in at most this many column names is a rare one
GENERIC = frozenset({"id", "code", "num", "no", "is", "has", "the", "of"})
# Words that name nothing: a question's other words (quantities too: "minimum", "time") may.
FUNCTION_WORD_LIST = """
a about above after again all also am an and any are as at be because been before being below between
both but by can could did do does doing down during each either else ever every few for from further get
give given had has have having he her here hers him his how i if in into is it its itself just let me
more most much must my no nor not now of off on once only or other our out over own please same shall
she should show so some such than that the their them then there these they this those through to too
under until up upon us very was we were what when where whether which while who whom whose why will
with within without would you your yours number numbers total average count sum
"""
FUNCTION_WORDS = frozenset(FUNCTION_WORD_LIST.split())
PREFIX = 6  # letters two different words must share to be one ("connecting", "connect")


@dataclass(frozen=True)
class Named:
    column: str  # table.column as queries name it
    score: float


def name_words(column: str) -> list[str]:
    return [w for w in re.findall(r"[a-z]+", column.lower()) if w not in GENERIC and len(w) > 1]


def own(table: str) -> set[str]:
    """A table name's words and their singulars."""
    words = name_words(table)
    return {*words, *map(singular, words)}


def said_in(word: str, asked: set[str]) -> bool:
    """The same word (or its singular), or one sharing its first `PREFIX` letters."""
    if word in asked or singular(word) in asked:
        return True
    return len(word) >= PREFIX and any(len(w) >= PREFIX and w[:PREFIX] == word[:PREFIX] for w in asked)


def named_columns(catalog: Catalog, question: str, most: int = MOST) -> list[Named]:
    """The columns of `catalog` whose names the question says, best first, at most `most`."""
    spoken = {w.strip("'") for w in WORD.findall(question.lower())} - FUNCTION_WORDS
    asked = spoken | {singular(w) for w in spoken}
    if not asked:
        return []
    # A column named after a table (`order_id`, `loans.member`) says no more than the table's name.
    tables = {w for t in catalog.tables for w in own(t.dataset_name)}
    counts: dict[str, int] = {}  # word -> column names it is in
    holders: dict[str, set[str]] = {}  # word -> tables with a column named with it
    for table in catalog.tables:
        for column in table.columns:
            for word in set(name_words(column)):
                counts[word] = counts.get(word, 0) + 1
                holders.setdefault(word, set()).add(table.name)
    total = sum(len(t.columns) for t in catalog.tables)
    found: list[Named] = []
    for table in catalog.tables:
        for column in table.columns:
            words = name_words(column)
            if not words or set(words) <= tables:
                continue
            weights = {w: math.log(1 + total / counts[w]) for w in words}
            said = [w for w in words if said_in(w, asked)]
            share = sum(weights[w] for w in said) / sum(weights.values())
            # A rare word said, not the table's own name (`days.day_name` for "days"); a word
            # of several tables' columns (`name`) names this one only with its table said.
            rare = [w for w in said if counts[w] <= RARE and w not in own(table.dataset_name)]
            if any(len(holders[w]) > 1 for w in rare) and not own(table.dataset_name) & asked:
                continue
            if share >= SHARE and rare:
                found.append(Named(f"{table.name}.{column}", share))
    found.sort(key=lambda n: -n.score)
    return found[:most]


def named_block(named: list[str]) -> str:
    """The line under the question (empty when no column is named)."""
    return f"\nColumns the question names: {', '.join(named)}." if named else ""
