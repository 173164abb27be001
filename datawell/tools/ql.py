"""The query language (DESIGN.md, "The query language").

CONTRACT (filled in by the query-language work): names and signatures here are what the
graphs, evals and agents build against."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from datawell.storage.access import NamespaceRef
from datawell.storage.tables import User
from datawell.tools.catalog import Catalog


@dataclass(frozen=True)
class QueryResult:
    query: str  # the query as the caller wrote it
    rows: list[dict[str, Any]]  # JSON-ready; internal fields start with `__` (`__metadata`: score, dataset, id)
    truncated: bool  # the row cap cut the result


class QueryTools:
    """Catalog, check and run, for one caller. Built from `Services`; raises `errors.QueryError`
    (a message plus sub_errors naming unknown tables/columns with close matches) for a query
    that is refused or fails, and `errors.Forbidden` for a namespace the caller may not read."""

    async def catalog(self, user: User, namespace: NamespaceRef) -> Catalog:
        raise NotImplementedError

    async def check(self, user: User, namespace: NamespaceRef, query: str) -> str:
        """The query as it will run (rewritten, transpiled); raises QueryError when refused."""
        raise NotImplementedError

    async def run(self, user: User, namespace: NamespaceRef, query: str) -> QueryResult:
        raise NotImplementedError
