"""Declining what the data cannot answer (issue 27).

Before a query is written, the question's content words (what is left once question words,
aggregation words, numbers and stopwords are taken out) are compared with what the catalog
holds: table and field names, their descriptions and the values their hints show. A word is
covered when it matches one of those words (the same word, or one starting with the other's
first five letters), or when its embedding is at least `threshold` like one of the catalog's
texts. A question with less than `share` of its content words covered asks for something
the datasets do not hold (an e-mail address, opening hours, downloads): it is refused with
QUERY_REFUSED and the refusal says which datasets and fields exist.

Off by default (setting `query_refuse_uncovered`): at every threshold tried it refuses
answerable questions of the bundled suites (topic questions answered with semantic(),
questions with formatting instructions) before it catches most refusal cases.

The threshold was tuned on the bundled suites only (docs/decisions.md); the dev suite is the
held-out check. `datawell.evals.coverage_check` replays every suite question offline.

A narrower rule is on by default (setting `query_refuse_unheld_subject`): the question's
**subject**, the noun phrase it asks for ("What is the *email address* of each author?",
"How many *passengers* flew ...", "How much does a *checked bag* cost ..."), when none of its
content words is a word the catalog holds (by the word match above, or a catalog word of
three letters or more that begins it: `pop` holds "population"). Words for what is computed
from other values (revenue, profit, age, ...) are never the reason. Over the bundled and dev
suites it refuses no answerable question."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from datawell.tools.catalog import Catalog
from datawell.tools.ql import TextEmbedder

THRESHOLD = 0.3  # a word this like a catalog text is covered; tuned on the bundled suites (docs/decisions.md)
SHARE = 0.3  # a question with fewer of its content words covered is not about the catalog
PREFIX = 5  # letters two words share to count as one (order/ordered, publication/publications)
WORD = re.compile(r"[a-z][a-z']+")
STOPWORD_LIST = """
a about above after again all also am an and any are as at be because been before being below
between both but by can could did do does doing down during each either else ever every few for from
further get give given had has have having he her here hers him his how i if in into is it its
itself just least less let list made make many me more most much must my no nor not now of off on
once only or other our out over own per please same shall she should show so some such than that the
their them then there these they this those through to too under until up upon us very was we were
what when where whether which while who whom whose why will with within without would you your yours
average avg count counts counted total totals sum number numbers amount mean median maximum minimum
max min highest lowest largest smallest biggest best worst top bottom first last latest earliest
recent most least greater fewer higher lower more than one two three four five six seven eight nine
ten hundred thousand name names named id ids each every overall value values kind kinds type types
ratio rate percentage percent proportion share difference order ordered sorted sort ascending
descending alphabetical alphabetically year years month months day days date dates time times week
weeks today yesterday tomorrow ago since find tell return display provide including include includes
distinct different unique whose
"""
STOPWORDS = frozenset(STOPWORD_LIST.split())


@dataclass(frozen=True)
class Coverage:
    covered: bool
    uncovered: list[str]  # the content words nothing in the catalog covers
    scores: dict[str, float]  # content word -> its best likeness to the catalog (1.0: a word match)


def content_words(question: str) -> list[str]:
    return list(dict.fromkeys(w.strip("'") for w in WORD.findall(question.lower()) if w.strip("'") not in STOPWORDS))


def catalog_texts(catalog: Catalog) -> tuple[set[str], list[str]]:
    """The catalog's words (for word matches) and texts (for embedding likeness)."""
    words: set[str] = set()
    texts: list[str] = []
    for table in catalog.tables:
        name = table.dataset_name.replace("_", " ")
        texts.append(f"{name}: {table.description}".strip(": "))
        words.update(WORD.findall(f"{name} {table.description}".lower()))
        for column in table.columns:
            label = column.replace("_", " ")
            about = table.column_descriptions.get(column, "")
            texts.append(f"{label}: {about}".strip(": "))
            words.update(WORD.findall(f"{label} {about}".lower()))
            hint = table.hints.get(column)
            for value in hint.values if hint else []:
                words.update(WORD.findall(str(value).lower()))
    return words, texts


def word_match(word: str, words: set[str]) -> bool:
    if word in words:
        return True
    stem = word[:PREFIX]
    return len(word) >= PREFIX and any(len(w) >= PREFIX and w[:PREFIX] == stem for w in words)


def _cosine(a: list[float], b: list[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    norm = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return dot / norm if norm else 0.0


async def coverage(
    question: str, catalog: Catalog, embedder: TextEmbedder, threshold: float = THRESHOLD, share: float = SHARE
) -> Coverage:
    words, texts = catalog_texts(catalog)
    asked = content_words(question)
    scores = {w: 1.0 for w in asked if word_match(w, words)}
    rest = [w for w in asked if w not in scores]
    if rest and texts:
        vectors = await embedder.embed(rest + texts)
        mine, theirs = vectors[: len(rest)], vectors[len(rest) :]
        for word, vector in zip(rest, mine, strict=True):
            scores[word] = max(_cosine(vector, other) for other in theirs)
    uncovered = [w for w in asked if scores.get(w, 0.0) < threshold]
    covered = not asked or (len(asked) - len(uncovered)) / len(asked) >= share
    return Coverage(covered=covered, uncovered=uncovered, scores=scores)


def refusal(result: Coverage, catalog: Catalog) -> str:
    """The refusal a question the catalog does not cover gets: what it asked that nothing
    holds, and which datasets and fields exist."""
    return (
        f"the datasets hold nothing about {', '.join(repr(w) for w in result.uncovered)}; they hold: {catalog.fields()}"
    )


# Quantities computed from other values: a question asks for them with no column named so.
COMPUTED_WORDS = "revenue profit income earnings margin fraction change growth duration age"
COMPUTED = frozenset(COMPUTED_WORDS.split())
_END = (
    r"(?:\s+(?:of|for|in|by|per|from|on|at|with|that|who|whom|which|where|when|between|across|to|and|along|"
    r"sorted|ordered|grouped|listed|given|since|during|over|under|than)\b|[?,.;:!]|$)"
)
_SUBJECT = [
    re.compile(r"^(?:what|which)\s+(?:is|are|was|were)\s+(?:the\s+|a\s+|an\s+)?(.+?)" + _END),
    re.compile(
        r"^(?:list|show|give|find|return|get|name|display)\s+(?:me\s+)?(?:all\s+)?(?:of\s+)?(?:the\s+)?(.+?)" + _END
    ),
    # "how many times was each publication downloaded": what is counted is the verb's event
    re.compile(
        r"^how\s+(?:many\s+times|often)\s+(?:is|are|was|were|has|have|had)\s+(?:been\s+)?.+?\s+"
        r"(\w+ed)\b"
    ),
    re.compile(r"^how\s+many\s+(.+?)(?:\s+(?:are|is|were|was|did|do|does|have|has|had|can|will)\b|" + _END[3:]),
    re.compile(r"^how\s+much\s+(?:does|do|did|is|was|will)\s+(?:a\s+|an\s+|the\s+)?(.+?)\s+cost\b"),
]


def subject(question: str) -> list[str]:
    """The content words of what the question asks for, by its opening ("what is the X of",
    "how many X were", "how many times was ... X-ed", "list the X", "how much does X cost");
    [] when it opens otherwise."""
    first_line = question.strip().lower().split("\n", 1)[0]
    for pattern in _SUBJECT:
        if found := pattern.search(first_line):
            return [w for w in content_words(found.group(1)) if w not in COMPUTED and not defined(w, question)]
    return []


def defined(word: str, question: str) -> bool:
    """Whether the question defines `word` itself ("ASP = average sale price", "CR (customer
    rank) is defined as ..."): a term the asker defines needs no column of its name."""
    return bool(
        re.search(
            rf"\b{re.escape(word)}\b\s*(?:\([^)]*\)\s*)?(?:=|:|\bis defined as\b|\bmeans\b|\bstands for\b)",
            question.lower(),
        )
    )


def held(words: list[str], catalog: Catalog) -> bool:
    """Whether the catalog holds one of `words`: the same word, one sharing its first five
    letters, a catalog word of three letters or more that begins it (`pop`, "population"), or
    a name written as one word that holds it whole (`sbcustomer`, `orderitems` hold
    "customer", "items"; five letters or more, so that `age` is not held by `page`)."""
    known, _ = catalog_texts(catalog)
    abbreviations = [k for k in known if len(k) >= 3]
    forms = {form for w in words for form in (w, singular(w))}
    return any(
        word_match(w, known)
        or any(w.startswith(k) for k in abbreviations)
        or (len(w) >= PREFIX and any(w in k for k in known if len(k) > len(w)))
        for w in forms
    )


def singular(word: str) -> str:
    """`cities` → city, `addresses` → address, `bags` → bag."""
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith(("sses", "xes", "ches", "shes")):
        return word[:-2]
    return word[:-1] if word.endswith("s") and not word.endswith("ss") else word


def nothing_like(what: str, catalog: Catalog) -> str:
    """The refusal of a question that asks for something no dataset holds (its subject, or a
    name its query needed: tools/names.py), naming what the datasets do hold."""
    return f"no dataset holds anything like {what}; the datasets hold: {catalog.fields()}"
