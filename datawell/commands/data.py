"""`datawell datasets`, `attempts`, `retry` and `clear`: a server's datasets and their
ingestions, through the client."""

from __future__ import annotations

from typing import Annotated

import typer

from datawell.commands.output import rows_table
from datawell.commands.remote import ServerOption, TokenOption, connect, dataset_address, namespace_address

DatasetArgument = Annotated[str, typer.Argument(help="OWNER/NAMESPACE/DATASET", show_default=False)]


def datasets(
    namespace: Annotated[str, typer.Argument(help="OWNER/NAMESPACE", show_default=False)],
    server: ServerOption = None,
    token: TokenOption = None,
) -> None:
    """List the datasets of a namespace: name, fields and description."""
    owner, name = namespace_address(namespace)
    with connect(server, token) as client:
        found = client.list_datasets(owner, name).data
    rows = [
        {"dataset": d.dataset_name, "fields": ", ".join(d.schema_definition), "description": d.data_description}
        for d in found
    ]
    for line in rows_table(rows, width=80) if rows else [f"no datasets in {namespace}"]:
        typer.echo(line)


def attempts(
    dataset: DatasetArgument,
    limit: Annotated[int, typer.Option(min=1, max=100, help="Show at most this many, newest first.")] = 20,
    server: ServerOption = None,
    token: TokenOption = None,
) -> None:
    """List a dataset's ingestion attempts, newest first."""
    with connect(server, token) as client:
        found = client.list_attempts(*dataset_address(dataset), page_size=limit).data
    rows = [
        {
            "id": a.id,
            "status": a.status,
            "rows": a.processed_rows,
            "bytes": f"{a.processed_bytes}/{a.expected_total_bytes}",
            "file": a.attributes.name,
            "seen": a.attributes.seen_at.strftime("%Y-%m-%d %H:%M:%S"),
            "message": a.status_message,
        }
        for a in found
    ]
    for line in rows_table(rows, width=60) if rows else [f"no ingestion attempts for {dataset}"]:
        typer.echo(line)


def retry(
    ingestion_id: Annotated[
        str, typer.Argument(help="A FAILED or CANCELLED ingestion's id (see `datawell attempts`).")
    ],
    server: ServerOption = None,
    token: TokenOption = None,
) -> None:
    """Ingest a failed or cancelled attempt's file again, as a new attempt; prints its id."""
    with connect(server, token) as client:
        retried = client.retry(ingestion_id)
    typer.echo(f"queued ingestion {retried.id} (a retry of {ingestion_id})")


def clear(
    dataset: DatasetArgument,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")] = False,
    server: ServerOption = None,
    token: TokenOption = None,
) -> None:
    """Remove every row, vector and link of a dataset, irreversibly (the dataset and its schema stay)."""
    address = dataset_address(dataset)
    if not yes:
        typer.confirm(f"Remove all data and links of {dataset}? This cannot be undone", abort=True)
    with connect(server, token) as client:
        cleared = client.clear(*address)
    typer.echo(
        f"cleared {dataset}: {cleared.rows_deleted} rows, {cleared.vectors_deleted} vectors, "
        f"{cleared.links_deleted} links removed; {cleared.ingestions_cancelled} ingestions stopped"
    )
