"""What every table reader shares: the `Table` a reader is, the `Batch` of rows it streams, the
`Limits` on a file's shape, and header cells made into column names."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol


@dataclass(frozen=True)
class Limits:
    """Bounds on a delimited file's shape (settings `ingest_max_*`), so one odd file cannot
    hold a worker: each is checked while reading and fails the attempt saying which."""

    header_chars: int = 1024 * 1024
    field_chars: int = 16 * 1024 * 1024
    columns: int = 10_000
    json_depth: int = 64  # how deep one JSON record may nest (DATAWELL_INGEST_MAX_JSON_DEPTH)


DEFAULT_LIMITS = Limits()


@dataclass
class Batch:
    rows: list[list[Any]] = field(default_factory=list)  # values in the order of the table's columns
    locations: list[int] = field(default_factory=list)  # the line or row number of each row
    position: int = 0  # bytes of the file read so far (approximate inside a file)


class Table(Protocol):
    unit: str  # "line" or "row": how `Batch.locations` count
    columns: list[str]

    def batches(self, size: int) -> Iterator[Batch]: ...


def column_names(raw: list[Any]) -> list[str]:
    """Header cells as column names: blanks get `column_N`, repeats get a `_2`, `_3` suffix.

    Linear in the number of cells: a set answers "taken?" and each base name remembers the
    next suffix to try, so `a` repeated 100,000 times costs no more than 100,000 names."""
    names: list[str] = []
    taken: set[str] = set()
    next_suffix: dict[str, int] = {}
    for i, cell in enumerate(raw):
        base = str(cell).strip() if cell is not None and str(cell).strip() else f"column_{i + 1}"
        name, n = base, next_suffix.get(base, 2)
        while name in taken:
            name, n = f"{base}_{n}", n + 1
        next_suffix[base] = n
        taken.add(name)
        names.append(name)
    return names


def sample_rows(table: Table, count: int) -> list[list[Any]]:
    for batch in table.batches(count):
        return batch.rows
    return []
