"""Examples retrieved from other databases (issue 50): public question -> query pairs, the
ones whose question is built most like the asked one shown to the query writer beside the
namespace's own verified examples.

DAIL-SQL's idea: a question's structure is what is left when its schema words and values are
masked ("How many <name> were placed in <value>?"), and questions of one structure are
answered by queries of one shape. The corpus (`examples_corpus.jsonl` beside this module) is
built from the dev suite and the bundled suites by `python -m datawell.evals.examples_corpus`;
each entry keeps its question, masked, and its gold query. Retrieval compares masked questions
lexically (rapidfuzz): docs/evals.md ("Retrieved examples") has the offline figures that chose it.

No pair of a held-out or validation database can ever be shown: such a database is refused
when the corpus is built, when it is loaded and when a retriever is made from entries. In
evals the asking namespace's own database is left out too (leave one database out: a
question never sees a pair written on its own tables); in service the corpus's databases are
not users' data and nothing else is left out."""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, ConfigDict
from rapidfuzz import fuzz, process

from datawell.tools.rewrite.lexicon import question_names

CORPUS_PATH = Path(__file__).with_name("examples_corpus.jsonl")

# The validation suite's databases (decisions are made on them) and the defog-data databases
# held out of all tuning (issue 50): never a source of examples.
DENYLIST = frozenset(
    {"broker", "car_dealership", "derm_treatment", "ewallet", "geography", "restaurants", "scholar", "yelp", "imdb"}
)
DENIED_SUITES = frozenset({"validation"})

NAME = "<name>"
VALUE = "<value>"
_NUMBER = re.compile(r"(?<![\w<])\d+(?:[.,:/-]\d+)*(?![\w>])")
# Word order is the structure being compared ("how many <name> per <name>"), so the plain
# edit-distance ratio; the offline check (datawell/evals/retrieval_check.py) put it level with
# or above the token-sorted ones and sentence-transformers embeddings on dev and bundled.
SCORER = fuzz.ratio
_WORD = re.compile(r"[A-Za-z][A-Za-z']*")
_PARTS = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")
# Words that say how a question is built, never masked even where a column is named so
# (`total`, `count`, `year`): function words, quantities, comparisons and the calendar.
_STRUCTURE = """
a an the of in on at by for to from with and or not no all any each every per than as is are was were be
has have had do does did how many much what which who whom whose when where that this these those there
number count total sum average avg mean ratio percentage percent proportion fraction share rate
most least more less fewest highest lowest maximum minimum max min top first last only
year month week day date time hour minute
"""
STRUCTURE_WORDS = frozenset(_STRUCTURE.split())


class CorpusError(ValueError):
    """A corpus that must not be used: an entry of a denied database or suite, or a bad line."""


class CorpusEntry(BaseModel):
    """One public question and its gold query, with where it comes from."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    suite: str  # the suite the case is in (provenance)
    case: str  # the case's id in that suite
    database: str  # the fixture (namespace) the query runs on
    question: str  # the question as the suite asks it (its first paragraph)
    masked: str  # the question with its database's names and its values masked
    query: str  # the gold query
    tables: str  # the tables the query reads, with the columns it uses: `author(aid, name); writes(aid)`


def refuse_denied(entries: Iterable[CorpusEntry]) -> list[CorpusEntry]:
    """The entries, or CorpusError when any is of a denied database or suite."""
    kept = list(entries)
    for entry in kept:
        if entry.database.lower() in DENYLIST or entry.suite.lower() in DENIED_SUITES:
            raise CorpusError(f"{entry.suite}/{entry.case}: database {entry.database!r} may never be an example")
    return kept


def load_corpus(path: Path = CORPUS_PATH) -> list[CorpusEntry]:
    """The corpus file's entries; CorpusError on a bad line or a denied entry."""
    entries = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            entries.append(CorpusEntry.model_validate(json.loads(line)))
        except ValueError as exc:
            raise CorpusError(f"{path}:{number}: {exc}") from None
    return refuse_denied(entries)


def name_words(names: Iterable[str]) -> frozenset[str]:
    """The words a question may use for these table and column names: each whole name and
    each part of it (`citation_num` -> citation_num, citation, num; `orderDate` -> order,
    date), in lower case, singular and plural."""
    words: set[str] = set()
    for name in names:
        words.update(forms(name.lower()))
        words.update(form for part in _PARTS.findall(name) if len(part) >= 3 for form in forms(part.lower()))
    return frozenset(words)


def forms(word: str) -> set[str]:
    """The word and what it may be the plural of (`courses` -> course, cours; `cities` -> city)."""
    found = {word}
    if word.endswith("s") and len(word) > 3:
        found.update({word[:-1], word[:-2]})
    if word.endswith("ies") and len(word) > 4:
        found.add(word[:-3] + "y")
    return found


def mask(question: str, names: Iterable[str], values: Iterable[str] = ()) -> str:
    """The question's structure: its first paragraph (what follows a blank line is
    instructions) with the values (`values`, quoted or capitalised names, numbers) replaced by
    <value> and the words of `names` (a database's tables and columns) by <name>, in lower case."""
    text = question.split("\n\n", 1)[0]
    for value in sorted({*values, *question_names(text)}, key=len, reverse=True):
        if len(value.strip()) >= 2:
            pattern = rf"[\"']?(?<!\w){re.escape(value.strip())}(?!\w)[\"']?"
            text = re.sub(pattern, f" {VALUE} ", text, flags=re.IGNORECASE)
    text = _NUMBER.sub(f" {VALUE} ", text)
    words = name_words(names)

    def word(match: re.Match[str]) -> str:
        token = match.group(0).lower().removesuffix("'s").strip("'")
        if forms(token) & STRUCTURE_WORDS:
            return token
        return NAME if forms(token) & words else token

    masked = _WORD.sub(word, text.replace(VALUE, "\0")).replace("\0", VALUE)
    masked = " ".join(re.sub(r"[^\w<>\s]", " ", masked).split())
    return re.sub(rf"{NAME}(?: {NAME})+", NAME, re.sub(rf"{VALUE}(?: {VALUE})+", VALUE, masked))


@dataclass(frozen=True)
class RetrievedExamples:
    """The corpus entries most like a question, from databases other than those left out."""

    entries: Sequence[CorpusEntry]

    def __post_init__(self) -> None:
        refuse_denied(self.entries)

    def similar(self, question: str, names: Iterable[str], k: int, leave_out: str | None = None) -> list[CorpusEntry]:
        """Up to `k` entries, the most similar masked question first (ties in corpus order),
        none of the database `leave_out` (the asking namespace's, in evals)."""
        if k <= 0:
            return []
        pool = [e for e in self.entries if leave_out is None or e.database.lower() != leave_out.lower()]
        ranked = process.extract(mask(question, names), [e.masked for e in pool], scorer=SCORER, limit=k)
        return [pool[index] for _masked, _score, index in ranked]


@functools.cache
def bundled_corpus() -> RetrievedExamples:
    """The corpus beside this module, read once a process."""
    return RetrievedExamples(load_corpus())


def render_retrieved(entries: Sequence[CorpusEntry]) -> str:
    """Few-shot text for the prompt; empty when there are none."""
    if not entries:
        return ""
    shown = "\n\n".join(f"Tables: {e.tables}\nQuestion: {e.question}\nQuery: {e.query}" for e in entries)
    return (
        "Examples from other databases (their tables are not this namespace's: take the shape of "
        f"their queries, never their names):\n{shown}\n\n"
    )
