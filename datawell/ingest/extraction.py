"""Records extracted from document text by the model, one chunk per call, with structured
output shaped by the dataset's schema."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, create_model

from datawell.errors import IngestionFailed
from datawell.ingest.documents import Chunk
from datawell.ingest.mapping import describe_fields
from datawell.llm.models import ChatModels
from datawell.prompts import PromptLibrary

Value = str | int | float | bool | None


def records_model(schema: Mapping[str, str]) -> type[BaseModel]:
    """`ExtractedRecords` with `records: list[ExtractedRecord]`, one optional property per field.

    Python attribute names are generated (`f0`, `f1`, ...) and the schema's names are the
    aliases, so a field called `json` or `model_config` cannot clash with pydantic's own."""
    fields: dict[str, Any] = {
        f"f{i}": (Value, Field(None, alias=name, description=description or None))
        for i, (name, description) in enumerate(schema.items())
    }
    record = create_model(  # type: ignore[call-overload]
        "ExtractedRecord", __config__=ConfigDict(populate_by_name=True, extra="ignore"), **fields
    )
    return create_model(  # type: ignore[call-overload, no-any-return]
        "ExtractedRecords",
        __doc__="Every record the passage contains.",
        records=(list[record], Field(description="The records; empty when the passage holds none.")),  # type: ignore[valid-type]
    )


async def extract(
    models: ChatModels,
    prompts: PromptLibrary,
    shape: type[BaseModel],
    *,
    description: str,
    schema: Mapping[str, str],
    chunk: Chunk,
    file_name: str,
) -> list[dict[str, Any]]:
    """The records of one chunk, as field -> value."""
    messages = prompts.get("ingest_extract").render(
        description=description or "(none given)",
        fields=describe_fields(schema),
        location=chunk.label,
        file_name=file_name,
        text=chunk.text,
    )
    try:
        answer = await models.for_stage("extract").with_structured_output(shape).ainvoke(messages)
    except Exception as exc:  # the model's failure ends the attempt with a message, whatever it was
        raise IngestionFailed(
            f"{chunk.label}: the model could not extract records ({type(exc).__name__}: {exc}); retry the ingestion"
        ) from None
    if not isinstance(answer, shape):
        raise IngestionFailed(f"{chunk.label}: the model answered without records; retry the ingestion")
    records: list[BaseModel] = answer.records  # type: ignore[attr-defined]
    return [record.model_dump(by_alias=True) for record in records]
