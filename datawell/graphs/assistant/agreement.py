"""Answers that agree with their rows (issue 27).

The answering model may phrase as it likes, but the numbers it states must be the run's:
1. a number of the answer that is in none of the rows, their counts, their sums, the question
   or the conversation is named back to the model, which writes the answer again once;
2. when the run found one value (one data step, one row, one column) and the answer still
   states another number, the service puts the value in its place: the answer to "how many
   orders in March?" states the count the query returned, whatever the model wrote. A row
   that names its item beside one measure the query computed (a count, a sum: "Dr. Kaya",
   3 no-shows) counts as one value too, its measure, so "who had the most" says how many;
3. otherwise the answer keeps the model's words and carries a note naming the numbers (the
   last resort).

The check also reads what the number counts (issue 50): a value the query computed as
`SUM(quantity)` is a total of quantity, not a number of the rows it summed, so an answer that
states it as "25 times" or "25 orders" (the rows' table) is told so and rewritten once, and
keeps a note when the rewrite still miscounts it.

The answer node calls `agree_with_rows` once the model's answer is complete, and streams the
answer only after it: the user never reads a number the check has not passed (issue 50)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any

import sqlglot
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from sqlglot import exp

from datawell.graphs import tokens
from datawell.graphs.assistant.grounding import NUMBER, numbers_in, unsupported_numbers
from datawell.graphs.assistant.state import StepResult

# Words that state a zero count: "no orders", "none", "zero", "nothing".
ZERO_WORDS = re.compile(r"\b(no|none|zero|nothing|nobody|not any)\b", re.IGNORECASE)


@dataclass(frozen=True)
class Verdict:
    """What is wrong with an answer: the numbers it invented, and whether it misses the one
    value the run found."""

    invented: list[str]
    value: Decimal | None  # the run's one value, when it found exactly one
    misses_value: bool
    measure: str = ""  # the value's column, when the row also names its item
    total: Total | None = None  # what the value sums, when the query computed it with SUM
    miscounts: bool = False  # the answer states the sum as a number of rows or of times

    @property
    def agrees(self) -> bool:
        return not self.invented and not self.misses_value and not self.miscounts

    def feedback(self) -> str:
        """The discrepancy named for the one rewrite."""
        problems = []
        if self.invented:
            listed = ", ".join(self.invented)
            problems.append(
                f"Your answer states {listed}, which {'is' if len(self.invented) == 1 else 'are'} not in the query results."
            )
        if self.value is not None and self.measure:
            problems.append(
                f"The row the query returned has {self.measure} = {format_value(self.value)}. "
                "The answer must state that number beside what it names."
            )
        elif self.value is not None:
            problems.append(
                f"The query returned exactly one value: {format_value(self.value)}. The answer must state that value."
            )
        if self.miscounts and self.total is not None and self.value is not None:
            problems.append(self.total.feedback(self.value))
        return " ".join(problems) + " Write the answer again, stating only numbers the results hold."


@dataclass(frozen=True)
class Total:
    """A value the query computed as `SUM(column)`: a total of the column, not a number of
    the rows summed. `rows` holds the words that would count rows or occurrences instead:
    the query's table names (singular and plural) and "times"."""

    column: str
    rows: frozenset[str]

    def feedback(self, value: Decimal) -> str:
        return (
            f"{format_value(value)} is SUM({self.column}): the total {self.column.replace('_', ' ')} over the rows, "
            "not a number of rows or of times. Say what it counts."
        )

    def note(self, value: Decimal) -> str:
        return (
            f"{format_value(value)} is the total {self.column.replace('_', ' ')} (a sum), not a count of rows or times."
        )


def _one_row(results: list[StepResult]) -> tuple[StepResult, dict[str, Any]] | None:
    """The run's one data step that ran and returned one row, with that row's visible
    columns; None for any other run."""
    data = [r for r in results if r["kind"] == "data"]
    if len(data) != 1 or data[0]["error"] or len(data[0]["rows"]) != 1:
        return None
    return data[0], {k: v for k, v in data[0]["rows"][0].items() if not k.startswith("__")}


def labelled_measure(results: list[StepResult]) -> tuple[Decimal, str] | None:
    """The measure of a one-row result that names its item: one data step, one row whose
    visible columns are one number computed by an aggregate (a count, a sum, an average) and
    text. A number the query did not aggregate (an id, a price) is not the row's measure."""
    found = _one_row(results)
    if found is None:
        return None
    step, visible = found
    numbers = [k for k, v in visible.items() if isinstance(v, int | float) and not isinstance(v, bool)]
    if (
        len(numbers) != 1
        or len(visible) < 2
        or any(not isinstance(v, str) for k, v in visible.items() if k != numbers[0])
    ):
        return None
    [column] = numbers
    try:
        tree = sqlglot.parse_one(step["query"], read="postgres")
    except sqlglot.errors.SqlglotError:
        return None
    selected = tree.selects if isinstance(tree, exp.Query) else []
    if not any(e.alias_or_name.lower() == column.lower() and e.find(exp.AggFunc) for e in selected):
        return None
    return Decimal(str(visible[column])), column


def one_value(results: list[StepResult]) -> Decimal | None:
    """The run's single numeric value: one data step that ran, one row, one visible column
    holding a number (a count, a sum, an average)."""
    found = _one_row(results)
    if found is None:
        return None
    values = list(found[1].values())
    if len(values) != 1 or isinstance(values[0], bool):
        return None
    value: Any = values[0]
    if isinstance(value, int | float):
        return Decimal(str(value))
    if isinstance(value, str):
        try:
            return Decimal(value.strip())
        except InvalidOperation:
            return None
    return None


def total_of(results: list[StepResult], column: str | None) -> Total | None:
    """What the one row's value sums, when its select expression is `SUM(column)`: the
    column summed and the words that would count the rows instead."""
    found = _one_row(results)
    if found is None:
        return None
    step, visible = found
    column = column or next(iter(visible), None)
    try:
        tree = sqlglot.parse_one(step["query"], read="postgres")
    except sqlglot.errors.SqlglotError:
        return None
    if column is None or not isinstance(tree, exp.Query):
        return None
    chosen = [e for e in tree.selects if e.alias_or_name.lower() == column.lower()]
    aggregate = chosen[0].unalias() if len(chosen) == 1 else None
    if not isinstance(aggregate, exp.Sum) or (summed := aggregate.find(exp.Column)) is None:
        return None
    rows = {"time", "times"}
    for table in tree.find_all(exp.Table):
        for name in (table.name.lower(), *table.name.lower().split("_")):
            rows |= {name, name.removesuffix("s")}
    return Total(summed.name, frozenset(rows))


def miscounts(answer: str, value: Decimal, total: Total) -> bool:
    """Whether the answer states the sum followed by a word that counts rows or times
    ("ordered 25 times", "25 orders")."""
    for match in NUMBER.finditer(answer):
        if not _states(match.group(), value):
            continue
        following = re.match(r"\s+([A-Za-z_]+)", answer[match.end() :])
        if following and following.group(1).lower() in total.rows:
            return True
    return False


def format_value(value: Decimal) -> str:
    """The value as the answer should write it: 3 not 3.0, 12.5 as is."""
    if value == value.to_integral_value():
        return str(value.quantize(Decimal(1)))
    return format(value.normalize(), "f")


def _states(answer: str, value: Decimal) -> bool:
    """Whether the answer states `value` (rounded as written), or "no ..." for a zero."""
    for stated in numbers_in(answer):
        places = max(-stated.as_tuple().exponent, 0)  # type: ignore[operator]
        if abs(value - stated) < Decimal(1).scaleb(-places):
            return True
    return value == 0 and ZERO_WORDS.search(answer) is not None


def check(answer: str, results: list[StepResult], *texts: str) -> Verdict:
    value = one_value(results)
    if value is None and (labelled := labelled_measure(results)) is not None:
        value, measure = labelled
        invented = unsupported_numbers(answer, results, *texts)
        total = total_of(results, measure)
        wrong = total is not None and miscounts(answer, value, total)
        return Verdict(invented, value, not _states(answer, value), measure, total, wrong)
    if value is None:
        return Verdict(unsupported_numbers(answer, results, *texts), None, False)
    # One value: the row count (1) is no support for a stated "1" - only the value and the
    # question or conversation are.
    invented = [n for n in unsupported_numbers(answer, [], *texts) if not _states(n, value)]
    total = total_of(results, None)
    wrong = total is not None and miscounts(answer, value, total)
    return Verdict(invented, value, not _states(answer, value), total=total, miscounts=wrong)


def settle(answer: str, verdict: Verdict) -> tuple[str, list[str]]:
    """The answer the user gets once the rewrite did not agree either: the run's one value
    put in place of the invented numbers (or said first), else the answer with a note; a sum
    stated as a count keeps a note saying what it counts."""
    counted = [verdict.total.note(verdict.value)] if verdict.miscounts and verdict.total and verdict.value else []
    if not verdict.invented and not verdict.misses_value:
        return answer, counted
    settled, notes = _settle_numbers(answer, verdict)
    return settled, notes + counted


def _settle_numbers(answer: str, verdict: Verdict) -> tuple[str, list[str]]:
    if verdict.value is not None and verdict.measure and not verdict.invented:
        stated = format_value(verdict.value)
        said = f"{answer.rstrip().rstrip('.')} ({verdict.measure.replace('_', ' ')}: {stated})."
        return said, [f"the answer did not state the row's {verdict.measure} ({stated}), which it now states."]
    if verdict.value is not None and not verdict.measure:
        stated = format_value(verdict.value)
        if len(verdict.invented) == 1:
            wrong = verdict.invented[0]
            corrected = NUMBER.sub(lambda m: stated if m.group() == wrong else m.group(), answer)
            corrected = _zero_phrasing(corrected, stated)
            return corrected, [f"the answer stated {wrong}; the query returned {stated}, which the answer now states."]
        return f"The query returned {stated} [1].\n\n{answer}", [
            f"the answer below did not state the query's result ({stated}); {_invented_note(verdict.invented)}"
        ]
    return answer, [f"check this answer: {_invented_note(verdict.invented)}"]


def _zero_phrasing(text: str, stated: str) -> str:
    """ "There was 0 order" reads as "There were no orders (0)"."""
    if stated != "0":
        return text
    return re.sub(r"\b(There|there) (was|is|were|are) 0 (\w+?)s?\b", r"\1 were no \3s (0)", text)


def _invented_note(invented: list[str]) -> str:
    if not invented:
        return "it states no number from the results."
    return f"{', '.join(invented)} {'is' if len(invented) == 1 else 'are'} not in the query results."


async def agree_with_rows(
    answer: str,
    messages: list[BaseMessage],
    model: BaseChatModel,
    results: list[StepResult],
    *texts: str,
) -> tuple[str, list[str], int]:
    """The answer the user gets, the notes it carries and the tokens a rewrite spent. Nothing
    is streamed here: the caller streams the answer this returns, after the check."""
    verdict = check(answer, results, *texts)
    if verdict.agrees:
        return answer, [], 0
    asked = [*messages, AIMessage(content=answer), HumanMessage(content=verdict.feedback())]
    reply = await model.ainvoke(asked)
    spent = tokens.used(asked, reply)
    rewritten = str(reply.content).strip()
    notes: list[str] = []
    if rewritten:
        again = check(rewritten, results, *texts)
        if again.agrees:
            return rewritten, notes, spent
        answer, verdict = rewritten, again
    settled, notes = settle(answer, verdict)
    return settled, notes, spent
