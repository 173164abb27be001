"""How well retrieval finds examples of the right shape, offline (no chat model):
`python -m datawell.evals.retrieval_check [-k 3] [--embeddings]`.

Every corpus entry is asked as a question, masked as the service masks one (its database's
table and column names, quoted and capitalised names, numbers; never its gold query), and
the `k` entries retrieved for it from the other databases are compared with it by the shape
of their gold queries: the set of clauses, aggregates and constructs left when names and
literals are taken away (`shape`). Reported per source (dev, bundled), for each way of
ranking, beside what a random pick would get:

- same class: the share of retrieved examples whose clauses and aggregates (`CLAUSES`) are
  the question's own; any same: the share of questions with at least one such among the `k`;
- same shape: the share whose whole shape is the question's own;
- overlap: the mean Jaccard overlap of the whole shapes."""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import sqlglot
from rapidfuzz import fuzz
from sqlglot import exp

from datawell.evals.examples_corpus import fixture_names
from datawell.evals.fixtures import load_fixture
from datawell.evals.suites import load_suite
from datawell.tools.checker.allowed import QL_DIALECT
from datawell.tools.retrieved_examples import CorpusEntry, RetrievedExamples, load_corpus, mask

CONSTRUCTS: tuple[tuple[str, type[exp.Expression]], ...] = (
    ("join", exp.Join),
    ("where", exp.Where),
    ("group", exp.Group),
    ("having", exp.Having),
    ("order", exp.Order),
    ("limit", exp.Limit),
    ("count", exp.Count),
    ("sum", exp.Sum),
    ("avg", exp.Avg),
    ("min", exp.Min),
    ("max", exp.Max),
    ("case", exp.Case),
    ("ratio", exp.Div),
    ("distinct", exp.Distinct),
    ("cte", exp.With),
    ("set-operation", exp.SetOperation),
    ("like", exp.Like),
    ("in", exp.In),
    ("exists", exp.Exists),
)

# The coarse class the brief's figure reads: which clauses and aggregates a query uses.
CLAUSES = frozenset(
    {"join", "where", "group", "having", "order", "limit", "subquery", "count", "sum", "avg", "min", "max"}
)


def shape(query: str) -> frozenset[str]:
    """A query's skeleton class: which clauses, aggregates and constructs it uses, and whether
    it nests a query."""
    try:
        tree = sqlglot.parse_one(query, read=QL_DIALECT)
    except sqlglot.errors.ParseError:
        return frozenset({"unparsed"})
    found = {name for name, kind in CONSTRUCTS if tree.find(kind) is not None}
    if len(list(tree.find_all(exp.Select))) > 1:
        found.add("subquery")
    return frozenset(found)


@dataclass(frozen=True)
class Asked:
    entry: CorpusEntry
    names: list[str]  # its database's table and column names
    masked: str  # as the service masks it: no gold values
    shape: frozenset[str]


def asked(entries: Sequence[CorpusEntry]) -> list[Asked]:
    names: dict[tuple[str, str], list[str]] = {}
    found = []
    for entry in entries:
        key = (entry.suite, entry.database)
        if key not in names:
            names[key] = fixture_names(load_fixture(entry.database, load_suite(entry.suite)))
        found.append(Asked(entry, names[key], mask(entry.question, names[key]), shape(entry.query)))
    return found


@dataclass
class Figures:
    same_class: float = 0.0
    any_same_class: float = 0.0
    same_shape: float = 0.0
    overlap: float = 0.0
    questions: int = 0

    def add(self, own: frozenset[str], shapes: list[frozenset[str]], k: int) -> None:
        """One question's `shapes` (all its candidates when `k` is their number, else a
        random pick of `k` of them in expectation)."""
        same = sum(s & CLAUSES == own & CLAUSES for s in shapes) / len(shapes)
        self.questions += 1
        self.same_class += same
        self.any_same_class += 1 - (1 - same) ** k if len(shapes) > k else float(same > 0)
        self.same_shape += sum(s == own for s in shapes) / len(shapes)
        self.overlap += sum(len(s & own) / max(1, len(s | own)) for s in shapes) / len(shapes)

    def row(self, label: str) -> str:
        n = max(1, self.questions)
        figures = (self.same_class, self.any_same_class, self.same_shape, self.overlap)
        return f"{label:<36}" + "".join(f"{value / n:>11.3f}" for value in figures)


def random_pick(cases: list[Asked], pool: list[Asked], k: int) -> Figures:
    """What a random pick of `k` other-database examples gets, in expectation (`any same
    class` as if drawn with replacement)."""
    figures = Figures()
    for case in cases:
        figures.add(case.shape, [p.shape for p in pool if p.entry.database != case.entry.database], k)
    return figures


def ranked(
    cases: list[Asked], pool: list[Asked], k: int, scores: Callable[[Asked, list[Asked]], list[float]]
) -> Figures:
    figures = Figures()
    for case in cases:
        others = [p for p in pool if p.entry.database != case.entry.database]
        found = scores(case, others)
        order = sorted(range(len(others)), key=lambda i: -found[i])  # stable: ties in corpus order
        figures.add(case.shape, [others[i].shape for i in order[:k]], k)
    return figures


def service(cases: list[Asked], pool: list[Asked], k: int) -> Figures:
    """What the service retrieves (`RetrievedExamples.similar`, the asking database left out)."""
    retriever = RetrievedExamples([p.entry for p in pool])
    figures = Figures()
    for case in cases:
        found = retriever.similar(case.entry.question, case.names, k, leave_out=case.entry.database)
        figures.add(case.shape, [shape(e.query) for e in found], k)
    return figures


def fuzzy(scorer: Callable[..., float], masked: bool) -> Callable[[Asked, list[Asked]], list[float]]:
    def scores(case: Asked, others: list[Asked]) -> list[float]:
        if masked:
            return [scorer(case.masked, o.entry.masked) for o in others]
        return [scorer(case.entry.question.lower(), o.entry.question.lower()) for o in others]

    return scores


def embedded(pool: list[Asked]) -> Callable[[Asked, list[Asked]], list[float]]:
    """Cosine similarity of sentence-transformers (all-MiniLM-L6-v2) embeddings: of the service's
    masked question against each entry's masked question."""
    from datawell.llm.embeddings import MiniLMEmbedder

    embedder = MiniLMEmbedder()
    texts = [p.masked for p in pool] + [p.entry.masked for p in pool]
    vectors = asyncio.run(embedder.embed(texts))
    asked_vectors = {id(p): v for p, v in zip(pool, vectors[: len(pool)], strict=True)}
    entry_vectors = {id(p): v for p, v in zip(pool, vectors[len(pool) :], strict=True)}

    def scores(case: Asked, others: list[Asked]) -> list[float]:
        mine = asked_vectors[id(case)]
        return [sum(a * b for a, b in zip(mine, entry_vectors[id(o)], strict=True)) for o in others]

    return scores


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m datawell.evals.retrieval_check", description=__doc__)
    parser.add_argument("-k", type=int, default=3, help="examples retrieved per question")
    parser.add_argument("--embeddings", action="store_true", help="also rank by MiniLM embeddings (loads the model)")
    args = parser.parse_args(argv)
    pool = asked(load_corpus())
    methods: dict[str, Callable[[Asked, list[Asked]], list[float]]] = {
        "masked, token_sort_ratio": fuzzy(fuzz.token_sort_ratio, masked=True),
        "masked, token_set_ratio": fuzzy(fuzz.token_set_ratio, masked=True),
        "unmasked, token_sort_ratio": fuzzy(fuzz.token_sort_ratio, masked=False),
    }
    if args.embeddings:
        methods["masked, MiniLM cosine"] = embedded(pool)
    for source, cases in (
        ("dev", [p for p in pool if p.entry.suite == "dev"]),
        ("bundled", [p for p in pool if p.entry.suite != "dev"]),
    ):
        print(f"\n{source}: {len(cases)} questions, k = {args.k}, leave one database out")
        print(f"{'ranking':<36}" + "".join(f"{h:>11}" for h in ("same class", "any same", "same shape", "overlap")))
        print(random_pick(cases, pool, args.k).row("random pick (expected)"))
        print(service(cases, pool, args.k).row("masked, ratio (the service)"))
        for label, scores in methods.items():
            print(ranked(cases, pool, args.k, scores).row(label))
    return 0


if __name__ == "__main__":
    sys.exit(main())
