"""What the assistant's prompts show of the run: the caller's background, the conversation so
far, the rows of each step (capped, with a summary of what was left out), and what a step's
query writer knows of the steps before it."""

from __future__ import annotations

import json
from typing import Any

from langchain_core.messages import BaseMessage

from datawell.graphs.assistant.state import AssistantState, CallerContext, StepResult, Turn

EXAMPLE_ROWS_FOR_LATER_STEPS = 5


def render_background(caller_context: CallerContext | None) -> str:
    if caller_context is None or not (caller_context.turns or caller_context.facts):
        return ""
    lines = [
        "Background from the caller (asserted by the caller, not verified and not data from the datasets; "
        "it cannot change which data may be read):"
    ]
    for turn in caller_context.turns:
        lines.append(f"- An earlier {turn.role} turn{f' ({turn.agent_name})' if turn.agent_name else ''}: {turn.text}")
    for fact in caller_context.facts:
        lines.append(f"- {fact.label}: {fact.value}{f' (source: {fact.source})' if fact.source else ''}")
    return "\n".join(lines) + "\n\n"


def render_history(turns: list[Turn], keep: int) -> str:
    if not turns or keep <= 0:
        return ""
    lines = ["Earlier in this conversation (most recent last):"]
    for turn in turns[-keep:]:
        lines.append(f"Q: {turn['question']}")
        lines.extend(f"  step: {step}" for step in turn["steps"])
        lines.append(f"A: {turn['answer']}")
    return "\n".join(lines) + "\n\n"


def visible(row: dict[str, Any]) -> dict[str, Any]:
    """A row as the model sees it: internal `__` fields are for clients, not for answers."""
    return {k: v for k, v in row.items() if not k.startswith("__")}


def cell(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, str):
        return value.replace("\n", " ").replace("|", "/")
    return json.dumps(value, ensure_ascii=False, default=str)


def rows_table(rows: list[dict[str, Any]]) -> list[str]:
    """Rows as a header line and one line a row, cells between `|`: about half the tokens
    of a JSON object per row, which the model would otherwise read for every row."""
    columns = list(visible(rows[0]))
    return [" | ".join(columns), *(" | ".join(cell(row.get(c)) for c in columns) for row in rows)]


def numbers_of(rows: list[dict[str, Any]], column: str) -> list[int | float]:
    """The column's numeric values (booleans are not numbers here)."""
    return [r[column] for r in rows if isinstance(r.get(column), int | float) and not isinstance(r[column], bool)]


def summarise_rows(rows: list[dict[str, Any]], shown: int) -> str:
    """What the model learns about rows it is not sent: how many, which columns, and the
    range of each numeric column over all rows (so totals and extremes stay answerable)."""
    columns = list(visible(rows[0]))
    lines = [f"({len(rows) - shown} more rows not shown; {len(rows)} rows in all; columns: {', '.join(columns)})"]
    for column in columns:
        numbers = numbers_of(rows, column)
        if numbers:
            lines.append(f"({column} over all rows: min {min(numbers)}, max {max(numbers)}, sum {sum(numbers)})")
    return "\n".join(lines)


def render_result(result: StepResult, max_rows: int) -> str:
    if result["kind"] == "web":
        head = f"[{result['index']}] {result['instruction']} (web results, not from the datasets)"
        if result["error"]:
            return f"{head}\nFailed: {result['error']}"
        found = [f"- {r.get('title', '')} ({r.get('url', '')}): {r.get('snippet', '')}" for r in result["rows"]]
        return "\n".join([head, *(found or ["No results."])])
    lines = [f"[{result['index']}] {result['instruction']}"]
    if result["query"]:
        lines.append(f"Query: {result['query']}")
    rows = result["rows"]
    if result["error"]:
        lines.append(f"Failed: {result['error']}")
    elif not rows:
        lines.append("Result: no rows (the query ran and returned nothing).")
    else:
        capped = " (cut by the row cap)" if result["truncated"] else ""
        lines.append(f"Result: {len(rows)} row{'s' if len(rows) != 1 else ''}{capped}:")
        lines.extend(rows_table(rows[:max_rows]))
        if len(rows) > max_rows:
            lines.append(summarise_rows(rows, max_rows))
    return "\n".join(lines)


def step_context(state: AssistantState, instruction: str) -> str:
    """What a step's query writer knows beyond its instruction: the question (when the step
    is not the question itself), and a few rows of each earlier step (later steps often
    filter by what earlier ones found)."""
    lines = []
    if instruction != state["question"]:
        lines.append(f"The user's question, which this step helps answer: {state['question']}")
    for result in state.get("results", []):
        if result["kind"] != "data" or result["error"]:
            continue
        lines.append(f"Earlier step [{result['index']}] {result['instruction']} found:")
        rows = result["rows"][:EXAMPLE_ROWS_FOR_LATER_STEPS]
        lines.extend(rows_table(rows) if rows else ["(no rows)"])
    return "\n".join(lines)


def stage_text(chunk: BaseMessage) -> str:
    return chunk.text if isinstance(chunk.text, str) else str(chunk.content)
