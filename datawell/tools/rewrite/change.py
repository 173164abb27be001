"""What a rewrite rule is, the context it reads, and the record of one it applied."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Literal, Protocol

from sqlglot import exp

from datawell.tools.catalog import Catalog
from datawell.tools.rewrite.sql import Source

Phase = Literal["before_run", "on_refusal", "on_empty"]
# repair: a schema- or data-driven fix (of a refused, failing or empty query, or of a join or
# a division the schema shows cannot mean what it says); wording: a rewrite of a query that
# would run, decided by the question's words. Only the gate (docs/query-rewrites.md) may keep
# a wording rule on by default.
Tier = Literal["repair", "wording"]
Reads = Literal["question", "catalog", "values"]
# How the driver applies a rule: to the parsed query (`tree`), to each SELECT with the
# datasets it reads (`select`), to the query's text (`text`), or with lookups of stored
# values (`values`, async).
Kind = Literal["tree", "select", "text", "values"]


@dataclass(frozen=True)
class Change:
    """One rule that changed the query: its name, the query before and after it (as the
    driver writes SQL), and why, in words (for people; tests and tools read `rule` and SQL)."""

    rule: str
    before: str
    after: str
    reason: str

    def as_dict(self) -> dict[str, str]:
        return {"rule": self.rule, "before": self.before, "after": self.after, "reason": self.reason}


@dataclass(frozen=True)
class Shaped:
    """What a `text` rule made of a query: the query to run and what was changed, in words
    (empty when nothing was)."""

    query: str
    changes: list[str]


@dataclass(frozen=True)
class Mended:
    """What the on-refusal rules (or `filter_where_stored`) made of a query, as `Shaped`."""

    query: str
    changes: list[str] = field(default_factory=list)  # what changed, in words


@dataclass
class Context:
    """What rules may read besides the query. `catalog` is read through `read_catalog` only
    when an active rule declares it reads it (or already given by a caller that holds it);
    `match_values` runs the rules that look stored values up (as the run's caller)."""

    question: str
    show_measure: bool = False  # a ranking's hidden measure selected whatever the question says
    catalog: Catalog | None = None
    read_catalog: Callable[[], Awaitable[Catalog]] | None = None
    match_values: MatchValues | None = None  # tools/literals.match_literals, with the caller's tools

    async def the_catalog(self) -> Catalog | None:
        if self.catalog is None and self.read_catalog is not None:
            self.catalog = await self.read_catalog()
        return self.catalog


class Matched(Protocol):
    """What the `values` rules made of a query (tools/literals.Matched)."""

    @property
    def query(self) -> str: ...
    @property
    def changes(self) -> list[str]: ...
    @property
    def records(self) -> list[Change]: ...


# The `values` rules run: the query, the names of those active, the catalog if read already.
MatchValues = Callable[[str, frozenset[str], Catalog | None], Awaitable[Matched]]


@dataclass
class Scope:
    """One SELECT of the query as the `select` rules see it: the datasets it reads by alias,
    every name the query defines, the whole tree, and the qualifiers read outside join
    conditions before any slip rule moved a column (`read_for`, set by the driver)."""

    select: exp.Select
    sources: dict[str, Source]
    catalog: Catalog
    defined: set[str]
    tree: exp.Expr
    read_for: set[str] = field(default_factory=set)


TreeApply = Callable[[exp.Query, Context], tuple[exp.Query, str]]
SelectApply = Callable[[Scope, Context], list[str]]
TextApply = Callable[[str, Context], tuple[str, list[str]]]


@dataclass(frozen=True)
class Rule:
    """A named rewrite: where it runs, its tier, what it reads, how the driver applies it, and
    why it exists (`case`: the eval case a wording rule was written from, if one)."""

    name: str
    phase: Phase
    tier: Tier
    reads: tuple[Reads, ...]
    kind: Kind
    apply: TreeApply | SelectApply | TextApply | None  # None: a `values` rule (literals.py applies it)
    why: str
    case: str = ""
