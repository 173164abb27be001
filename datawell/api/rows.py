"""Rows back: a dataset's rows a page at a time (JSON), or all of them as a JSON Lines, CSV or
Parquet file, with chosen columns and a filter (`tools.rows`). Reading needs what a query
needs: read access to the namespace."""

from __future__ import annotations

from typing import Literal

from pydantic import Field
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from datawell.api.routing import Context, DatasetPath, Router
from datawell.api.schemas import ApiModel
from datawell.client.models import RowsMetadata
from datawell.client.models import RowsPage as RowsPageResponse
from datawell.errors import InvalidInput, SubError
from datawell.storage.datasets import readable_dataset
from datawell.storage.export import MEDIA_TYPES, Format
from datawell.storage.tables import User
from datawell.tools.rows import DatasetRows, check_cursor, parse_filter

router = Router("rows")

MAX_PAGE = 1000
# Accept header media types -> format (the first one the header names wins; JSON otherwise).
ACCEPTED: dict[str, Format] = {
    "application/x-ndjson": "jsonl",
    "application/jsonl": "jsonl",
    "application/json-lines": "jsonl",
    "text/csv": "csv",
    "application/vnd.apache.parquet": "parquet",
    "application/parquet": "parquet",
    "application/x-parquet": "parquet",
}
EXTENSIONS = {"jsonl": "jsonl", "csv": "csv", "parquet": "parquet"}


class RowsQuery(ApiModel):
    columns: str | None = Field(
        None, description="Comma-separated field names to return, in that order; all of the schema's when absent."
    )
    filter: str | None = Field(
        None,
        description="A condition on each row in the query language, as in a WHERE clause "
        "(`price > 10 AND city ILIKE 'os%'`); no subqueries, tables, aggregates or semantic().",
    )
    cursor: str | None = Field(None, description="`metadata.nextCursor` of the previous page; the first page without.")
    page_size: int = Field(100, ge=1, le=MAX_PAGE, description="Rows per page (JSON pages only).")
    format: Literal["json", "jsonl", "csv", "parquet"] | None = Field(
        None,
        description="`json` (a page), or the whole result as a file: `jsonl`, `csv`, `parquet`. "
        "Overrides the Accept header.",
    )


def chosen_format(request: Request, query: RowsQuery) -> str:
    if query.format is not None:
        return query.format
    for part in request.headers.get("accept", "").split(","):
        found = ACCEPTED.get(part.split(";")[0].strip().lower())
        if found is not None:
            return found
    return "json"


def chosen_columns(query: RowsQuery, schema: dict[str, str]) -> list[str]:
    if query.columns is None:
        return list(schema)
    names = list(dict.fromkeys(c.strip() for c in query.columns.split(",") if c.strip()))
    if not names:
        raise InvalidInput("no columns", sub_errors=[SubError("no_columns", "columns: name at least one field")])
    return names


@router.get(
    "/data/{username}/{namespace}/{datasetName}/rows",
    RowsPageResponse,
    query=RowsQuery,
    errors=(403, 404),
    params=DatasetPath,
    streams={
        MEDIA_TYPES["jsonl"]: "every matching row, one JSON object a line (format=jsonl)",
        MEDIA_TYPES["csv"]: "every matching row as CSV with a header line (format=csv)",
        MEDIA_TYPES["parquet"]: "every matching row as one Parquet file (format=parquet)",
    },
)
async def rows(
    request: Request, ctx: Context, user: User, query: RowsQuery, path: DatasetPath
) -> RowsPageResponse | Response:
    """Read a dataset's rows

    A page of the dataset's rows in `__id` order, or with `format` (or an Accept header of
    one of the file types) every matching row as a file, streamed. Pages are stable under
    appends: rows published while paging never shift the pages that follow."""
    services = ctx.services
    # The hot read: access and the dataset in one round trip; the rows query checks access again.
    namespace, dataset = await readable_dataset(
        services.db.direct, user, path.owner_for(user), path.namespace, path.dataset_name
    )
    columns = chosen_columns(query, dataset.schema_definition)
    condition = parse_filter(query.filter) if query.filter is not None else None
    reader = DatasetRows(services.query_tools, user, namespace, dataset.name)
    format = chosen_format(request, query)
    if format == "json":
        after = check_cursor(query.cursor) if query.cursor is not None else None
        size = min(query.page_size, services.query_tools.row_cap)
        page = await reader.page(columns, condition, after, size)
        metadata = RowsMetadata(columns=page.columns, count=len(page.rows), next_cursor=page.next_cursor)
        return RowsPageResponse(data=page.rows, metadata=metadata)
    if query.cursor is not None:
        message = "cursor: a file holds every matching row; page with format=json"
        raise InvalidInput("a cursor pages JSON only", sub_errors=[SubError("cursor_with_file", message)])
    body = await reader.export(columns, condition, format)  # type: ignore[arg-type]
    filename = f"{dataset.name}.{EXTENSIONS[format]}"
    return StreamingResponse(
        body,
        media_type=MEDIA_TYPES[format],
        headers={"Content-Disposition": f'attachment; filename="{filename}"'},
    )
