"""Verified examples for the graphs: the example that answers a question exactly, the ones
most like it as few-shot text. Both give only examples whose query the caller may run now
(each is checked again: grants and datasets change after an example was verified).

Similarity is lexical (rapidfuzz over the normalised questions): instant, deterministic and
with no model to load; a namespace holds tens to hundreds of examples, not millions."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from rapidfuzz import fuzz, process

from datawell.errors import Forbidden, NotFound, QueryError
from datawell.storage.access import Caller, NamespaceRef
from datawell.storage.db import Database
from datawell.storage.examples import find_example, list_examples, question_key
from datawell.storage.tables import User, VerifiedExample


class QueryChecker(Protocol):
    async def check(self, who: Caller | User, namespace: NamespaceRef, query: str) -> str: ...


@dataclass(frozen=True)
class Example:
    """A verified question and the query that answers it."""

    id: str
    question: str
    query: str

    @classmethod
    def of(cls, record: VerifiedExample) -> Example:
        return cls(id=record.id, question=record.question, query=record.query)


class VerifiedExamples:
    """The examples of a namespace, as the caller may use them."""

    def __init__(self, db: Database, checker: QueryChecker, max_checks: int = 12) -> None:
        self.db = db
        self.checker = checker
        # Each check is a parse and a catalogue lookup: a namespace of a thousand examples its
        # caller cannot run made every question wait seconds for them all.
        self.max_checks = max_checks

    async def exact(self, who: Caller | User, namespace: NamespaceRef, question: str) -> Example | None:
        """The example whose question is this one (ignoring case, spacing and trailing
        punctuation), if the caller may run its query; else None."""
        async with self.db.read() as session:
            record = await find_example(session, namespace, question)
        if record is None or not await self._runnable(who, namespace, record.query):
            return None
        return Example.of(record)

    async def similar(self, who: Caller | User, namespace: NamespaceRef, question: str, k: int = 3) -> list[Example]:
        """Up to `k` examples, the most similar question first, whose queries the caller may run,
        from the `max_checks` most similar."""
        if k <= 0:
            return []
        async with self.db.read() as session:
            records = await list_examples(session, namespace)
        # Ties keep the newest first (list order): extract's sort is stable.
        ranked = process.extract(
            question_key(question), [r.question_key for r in records], scorer=fuzz.token_sort_ratio, limit=None
        )
        found: list[Example] = []
        for _key, _score, index in ranked[: self.max_checks]:
            if len(found) == k:
                break
            if await self._runnable(who, namespace, records[index].query):
                found.append(Example.of(records[index]))
        return found

    async def _runnable(self, who: Caller | User, namespace: NamespaceRef, query: str) -> bool:
        try:
            await self.checker.check(who, namespace, query)
        except (QueryError, Forbidden, NotFound):
            return False
        return True


def render_examples(examples: Sequence[Example]) -> str:
    """Few-shot text: each example as `Question: …` and `Query: …`, separated by a blank line;
    empty when there are none."""
    return "\n\n".join(f"Question: {e.question}\nQuery: {e.query}" for e in examples)
