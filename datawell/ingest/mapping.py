"""Which source column feeds which schema field.

When the file's header names every field (ignoring case, spaces and `_`: `Order ID` names
`order_id`), that is the mapping and no model is asked: a small file then costs no model
call (issue 29). Otherwise the model proposes a mapping (structured output); a deterministic name/description
similarity match takes over when the model fails or answers with names that do not exist.
The mapping used, and why, is recorded on the attempt for the user to see."""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, nullcontext
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, Field
from rapidfuzz import fuzz

from datawell.llm.models import ChatModels
from datawell.prompts import PromptLibrary

log = logging.getLogger(__name__)

SAMPLE_VALUES = 3
SAMPLE_CHARS = 40
SHOWN_NAME_CHARS = 200  # a longer column name is cut in the prompt (and then matched by name similarity)
SIMILARITY_THRESHOLD = 80.0
SUBSET_WEIGHT = 0.9  # "total" in "Total (EUR)": likely, but an exact name wins
DESCRIPTION_WEIGHT = 0.85  # a column named like words of a field's description is a weaker hint than its name


class FieldSource(BaseModel):
    field: str = Field(description="A field of the dataset, exactly as listed.")
    column: str | None = Field(description="The file's column holding this field's values, or null if none does.")


class ColumnMapping(BaseModel):
    """For every field of the dataset, the column of the uploaded file that holds its values."""

    fields: list[FieldSource]


class InvalidMapping(ValueError):
    pass


@dataclass(frozen=True)
class FieldMapping:
    fields: dict[str, str | None]  # schema field -> source column (None: left empty)
    method: Literal["header", "model", "similarity"]
    note: str = ""  # why the similarity match was used

    @property
    def mapped(self) -> dict[str, str]:
        return {f: c for f, c in self.fields.items() if c is not None}

    def record(self) -> dict[str, Any]:
        return {"method": self.method, "fields": self.fields, "note": self.note}


def describe_columns(columns: Sequence[str], samples: Sequence[Sequence[Any]], budget: int) -> str:
    """Each column with its first values, in at most `budget` characters: a file with
    thousands of columns or huge names is shown in part, never sent whole to the model."""
    lines: list[str] = []
    used = 0
    for i, column in enumerate(columns):
        values = [str(row[i])[:SAMPLE_CHARS] for row in samples if i < len(row) and row[i] not in (None, "")]
        line = f"- {column[:SHOWN_NAME_CHARS]}: {', '.join(values[:SAMPLE_VALUES]) or '(empty)'}"
        if used + len(line) > budget:
            lines.append(f"- ... and {len(columns) - i} more columns, not shown")
            break
        lines.append(line)
        used += len(line) + 1
    return "\n".join(lines)


def describe_fields(schema: Mapping[str, str]) -> str:
    return "\n".join(f"- {name}: {description or '(no description)'}" for name, description in schema.items())


async def map_columns(
    models: ChatModels,
    prompts: PromptLibrary,
    *,
    description: str,
    schema: Mapping[str, str],
    columns: Sequence[str],
    samples: Sequence[Sequence[Any]],
    file_name: str,
    prompt_chars: int,
    model_slot: Callable[[], AbstractAsyncContextManager[object]] = nullcontext,
) -> FieldMapping:
    """`model_slot`: held around the model call (the scheduler's, at background priority)."""
    named = header_mapping(schema, columns)
    if named is not None:
        return FieldMapping(named, "header")
    messages = prompts.get("ingest_mapping").render(
        description=description or "(none given)",
        fields=describe_fields(schema),
        columns=describe_columns(columns, samples, prompt_chars),
        file_name=file_name,
    )
    try:
        model = models.for_stage("extract")
        async with model_slot():
            answer = await model.with_structured_output(ColumnMapping).ainvoke(messages)
        if not isinstance(answer, ColumnMapping):
            raise InvalidMapping("the model gave no mapping")
        return FieldMapping(checked(answer, schema, columns), "model")
    except InvalidMapping as exc:
        note = f"the model's mapping was unusable ({exc}); fields were matched to columns by name"
    except Exception as exc:  # any failure of the model call falls back to the deterministic match
        log.warning("column mapping by the model failed: %s", exc)
        note = f"the model could not be asked ({type(exc).__name__}: {exc}); fields were matched to columns by name"
    return FieldMapping(similarity_mapping(schema, columns), "similarity", note)


def checked(answer: ColumnMapping, schema: Mapping[str, str], columns: Sequence[str]) -> dict[str, str | None]:
    """The model's mapping if every name in it exists (columns matched ignoring case and
    surrounding space), and it maps at least one field."""
    by_name = {c.strip().lower(): c for c in columns}
    result: dict[str, str | None] = dict.fromkeys(schema)
    seen: set[str] = set()
    for item in answer.fields:
        if item.field not in schema:
            raise InvalidMapping(f"unknown field {item.field!r}")
        if item.field in seen:
            raise InvalidMapping(f"field {item.field!r} is mapped twice")
        seen.add(item.field)
        if item.column is None:
            continue
        column = by_name.get(item.column.strip().lower())
        if column is None:
            raise InvalidMapping(f"the file has no column {item.column!r}")
        result[item.field] = column
    if not any(result.values()):
        raise InvalidMapping("it maps no field")
    return result


def header_mapping(schema: Mapping[str, str], columns: Sequence[str]) -> dict[str, str | None] | None:
    """Every field to the column named like it (same words), or None when some field has no
    such column or two columns are named alike."""
    by_words: dict[str, str] = {}
    for column in columns:
        key = words(column)
        if key in by_words:
            return None
        by_words[key] = column
    found: dict[str, str | None] = {field: by_words.get(words(field)) for field in schema}
    return found if schema and all(found.values()) else None


def words(name: str) -> str:
    """`orderID`, `order_id`, `Order Id` -> `order id`."""
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", name)
    return " ".join(re.findall(r"[a-z0-9]+", spaced.lower()))


def similarity(field: str, description: str, column: str) -> float:
    field_words, column_words = words(field), words(column)
    score = max(
        fuzz.token_sort_ratio(field_words, column_words),
        fuzz.ratio(field_words.replace(" ", ""), column_words.replace(" ", "")),
        SUBSET_WEIGHT * fuzz.token_set_ratio(field_words, column_words),
    )
    if description:
        score = max(score, DESCRIPTION_WEIGHT * fuzz.token_set_ratio(column_words, words(description)))
    return float(score)


def similarity_mapping(schema: Mapping[str, str], columns: Sequence[str]) -> dict[str, str | None]:
    """Greedy best-first matching of fields to columns, each column used once, above a threshold."""
    pairs = sorted(
        (
            (similarity(field, description, column), -f_index, -c_index, field, column)
            for f_index, (field, description) in enumerate(schema.items())
            for c_index, column in enumerate(columns)
        ),
        reverse=True,
    )
    result: dict[str, str | None] = dict.fromkeys(schema)
    used: set[str] = set()
    for score, _f, _c, field, column in pairs:
        if score < SIMILARITY_THRESHOLD:
            break
        if result[field] is None and column not in used:
            result[field] = column
            used.add(column)
    return result
