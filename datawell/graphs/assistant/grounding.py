"""Numbers an answer states that the query results do not hold.

The small answering model sometimes writes a total it did not find, or rounds a number into
another one. The service cannot make the model right, but it can say so: the answer then
carries a note naming each number that is in none of the rows, the question, the earlier
conversation or the row counts."""

from __future__ import annotations

import re
from collections.abc import Iterable
from decimal import Decimal, InvalidOperation
from typing import Any

from datawell.graphs.assistant.prompting import numbers_of
from datawell.graphs.assistant.state import StepResult

# The number of a numbered list's item ("1. ", "2) " at the start of a line): not a stated number.
LIST_MARKER = re.compile(r"^(\s*)\d+[.)](?=\s)", re.MULTILINE)
# A number as people write it: 1,234.5 or -3 or 0.25; not the digits of a citation [2].
NUMBER = re.compile(r"(?<![\w\[.])-?\d{1,3}(?:,\d{3})+(?:\.\d+)?(?![\w\]])|(?<![\w\[.,])-?\d+(?:\.\d+)?(?![\w\]])")


def numbers_in(text: str) -> list[Decimal]:
    found = []
    for match in NUMBER.finditer(text):
        try:
            found.append(Decimal(match.group().replace(",", "")))
        except InvalidOperation:
            continue
    return found


def _values(rows: Iterable[dict[str, Any]]) -> Iterable[Decimal]:
    for row in rows:
        for key, value in row.items():
            if key.startswith("__") or value is None or isinstance(value, bool):
                continue
            if isinstance(value, int | float):
                yield Decimal(str(value))
            else:
                yield from numbers_in(str(value))


def known_numbers(results: list[StepResult], *texts: str) -> set[Decimal]:
    """Every number the answer may state: in the rows, their counts and numeric sums (the
    answer prompt gives sums of rows it does not show), and in the given texts."""
    known: set[Decimal] = set()
    for result in results:
        rows = result["rows"]
        values = list(_values(rows))
        known.update(values)
        known.add(Decimal(len(rows)))
        for column in {k for row in rows for k in row if not k.startswith("__")}:
            numbers = numbers_of(rows, column)
            if numbers:
                known.add(Decimal(str(sum(numbers))))
    for text in texts:
        known.update(numbers_in(text))
    return known


def _matches(stated: Decimal, known: Decimal) -> bool:
    """Equal, or `known` rounded to the decimals `stated` was written with (1234.57 for
    1234.5678; 1235 or 1234 for 1234.5)."""
    if stated == known:
        return True
    places = max(-stated.as_tuple().exponent, 0)  # type: ignore[operator]
    step = Decimal(1).scaleb(-places)
    return abs(known - stated) < step


def unsupported_numbers(answer: str, results: list[StepResult], *texts: str) -> list[str]:
    """The numbers of `answer` that match nothing the run found or was told, as written."""
    known = known_numbers(results, *texts)
    missing: list[str] = []
    for match in NUMBER.finditer(LIST_MARKER.sub(r"\1", answer)):
        stated = Decimal(match.group().replace(",", ""))
        if not any(_matches(stated, value) for value in known) and match.group() not in missing:
            missing.append(match.group())
    return missing
