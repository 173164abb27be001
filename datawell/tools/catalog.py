"""The catalog: what a caller can query in a namespace, as the models see it.

CONTRACT (filled in by the query-language work): names and signatures here are what the
graphs, evals and agents build against."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from datawell.storage.access import NamespaceRef


@dataclass(frozen=True)
class TableInfo:
    name: str  # as a query names it: `orders` in the namespace, `owner.namespace.orders` across
    dataset_id: str
    namespace: NamespaceRef
    physical: str  # the dataset's row table; never shown to users or models
    description: str
    columns: dict[str, str]  # field -> type (integer, real, text, boolean, timestamp)
    column_descriptions: dict[str, str]
    samples: dict[str, list[Any]] = field(default_factory=dict)  # field -> a few distinct values
    row_count: int = 0


@dataclass(frozen=True)
class Catalog:
    namespace: NamespaceRef
    tables: list[TableInfo]

    def render(self) -> str:
        """The catalog as text for a prompt."""
        raise NotImplementedError
