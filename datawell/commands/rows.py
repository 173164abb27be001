"""`datawell rows` and `datawell export`: a dataset's rows back from a server, a page as a
table (or JSON Lines) or every row as a file, through the client."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from datawell.commands.output import count, rows_table
from datawell.commands.remote import ServerOption, TokenOption, connect, dataset_address

DatasetArgument = Annotated[str, typer.Argument(help="OWNER/NAMESPACE/DATASET", show_default=False)]
ColumnsOption = Annotated[
    str | None, typer.Option("--columns", "-c", help="Comma-separated fields to return (default: all).")
]
FilterOption = Annotated[
    str | None,
    typer.Option("--filter", "-f", help="A condition in the query language, e.g. \"total > 10 AND city = 'Oslo'\"."),
]
SUFFIXES = {".jsonl": "jsonl", ".ndjson": "jsonl", ".csv": "csv", ".parquet": "parquet"}


def _columns(columns: str | None) -> list[str] | None:
    return None if columns is None else [c.strip() for c in columns.split(",") if c.strip()]


def rows(
    dataset: DatasetArgument,
    columns: ColumnsOption = None,
    filter: FilterOption = None,
    limit: Annotated[int, typer.Option(min=1, max=1000, help="Rows per page.")] = 20,
    cursor: Annotated[str | None, typer.Option(help="Start after this cursor (printed under a page).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON Lines instead of a table.")] = False,
    server: ServerOption = None,
    token: TokenOption = None,
) -> None:
    """Print a page of a dataset's rows, and the cursor of the next page."""
    with connect(server, token) as client:
        page = client.rows(
            *dataset_address(dataset), columns=_columns(columns), filter=filter, cursor=cursor, page_size=limit
        )
    if as_json:
        for row in page.data:
            typer.echo(json.dumps(row, ensure_ascii=False))
    else:
        for line in rows_table(page.data) if page.data else [f"no rows in {dataset}"]:
            typer.echo(line)
    if page.metadata.next_cursor is not None:
        typer.echo(f"next page: --cursor {page.metadata.next_cursor}", err=True)


def export(
    dataset: DatasetArgument,
    destination: Annotated[Path, typer.Argument(help="The file to write (.parquet, .csv or .jsonl).")],
    format: Annotated[str | None, typer.Option(help="parquet, csv or jsonl (default: from the file's suffix).")] = None,
    columns: ColumnsOption = None,
    filter: FilterOption = None,
    server: ServerOption = None,
    token: TokenOption = None,
) -> None:
    """Write every (matching) row of a dataset to a file, streamed from the server."""
    chosen = format or SUFFIXES.get(destination.suffix.lower())
    if chosen not in ("parquet", "csv", "jsonl"):
        raise typer.BadParameter("name a .parquet, .csv or .jsonl file, or give --format", param_hint="--format")
    with connect(server, token) as client:
        written = client.export(
            *dataset_address(dataset), destination, format=chosen, columns=_columns(columns), filter=filter
        )
    typer.echo(f"wrote {destination} ({count(written, 'byte')}, {chosen})")
