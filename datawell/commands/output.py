"""Rows as aligned text, for the commands that print tables."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any


def rows_table(rows: Sequence[Mapping[str, Any]], width: int = 40) -> list[str]:
    """Rows as aligned text; internal `__` fields are left out."""
    columns = list(dict.fromkeys(k for row in rows for k in row if not k.startswith("__")))
    cells = [[("" if row.get(c) is None else str(row.get(c)))[:width] for c in columns] for row in rows]
    widths = [max([len(c), *(len(line[i]) for line in cells)]) for i, c in enumerate(columns)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(columns, widths, strict=True)).rstrip()]
    lines += ["  ".join(v.ljust(w) for v, w in zip(line, widths, strict=True)).rstrip() for line in cells]
    return lines


def count(number: int, noun: str) -> str:
    """'1 row', '60 rows'."""
    return f"{number} {noun}{'' if number == 1 else 's'}"
