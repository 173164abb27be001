"""`datawell datasets`, `attempts`, `retry`, `clear`, `update`, `rename`, `rename-namespace`
and `delete`: a server's datasets, their ingestions and their life, through the client."""

from __future__ import annotations

from typing import Annotated

import typer

from datawell.commands.output import rows_table
from datawell.commands.remote import ServerOption, TokenOption, connect, dataset_address, namespace_address

DatasetArgument = Annotated[str, typer.Argument(help="OWNER/NAMESPACE/DATASET", show_default=False)]
YesOption = Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")]


def confirm_irreversible(question: str, yes: bool) -> None:
    """Ask before a change that cannot be undone, unless `--yes` answered already."""
    if not yes:
        typer.confirm(f"{question}? This cannot be undone", abort=True)


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
    yes: YesOption = False,
    server: ServerOption = None,
    token: TokenOption = None,
) -> None:
    """Remove every row, vector and link of a dataset, irreversibly (the dataset and its schema stay)."""
    address = dataset_address(dataset)
    confirm_irreversible(f"Remove all data and links of {dataset}", yes)
    with connect(server, token) as client:
        cleared = client.clear(*address)
    typer.echo(
        f"cleared {dataset}: {cleared.rows_deleted} rows, {cleared.vectors_deleted} vectors, "
        f"{cleared.links_deleted} links removed; {cleared.ingestions_cancelled} ingestions stopped"
    )


def rename(
    dataset: DatasetArgument,
    new_name: Annotated[str, typer.Argument(help="The dataset's new name.", show_default=False)],
    server: ServerOption = None,
    token: TokenOption = None,
) -> None:
    """Rename a dataset; its links and the verified examples naming it follow."""
    with connect(server, token) as client:
        renamed = client.rename_dataset(*dataset_address(dataset), new_name)
    typer.echo(f"renamed {dataset} to {renamed.owner}/{renamed.namespace}/{renamed.dataset_name}")


def rename_namespace(
    namespace: Annotated[str, typer.Argument(help="OWNER/NAMESPACE", show_default=False)],
    new_name: Annotated[str, typer.Argument(help="The namespace's new name.", show_default=False)],
    server: ServerOption = None,
    token: TokenOption = None,
) -> None:
    """Rename a namespace; links and verified examples follow."""
    with connect(server, token) as client:
        renamed = client.rename_namespace(*namespace_address(namespace), new_name)
    typer.echo(f"renamed {namespace} to {renamed.owner}/{renamed.name}")


def update(
    dataset: DatasetArgument,
    description: Annotated[str | None, typer.Option(help="The new description.")] = None,
    add: Annotated[list[str] | None, typer.Option(help="Add a field: NAME=DESCRIPTION (repeatable).")] = None,
    remove: Annotated[list[str] | None, typer.Option(help="Remove a field (repeatable).")] = None,
    force: Annotated[bool, typer.Option(help="Remove fields even though rows hold values in them.")] = False,
    server: ServerOption = None,
    token: TokenOption = None,
) -> None:
    """Change a dataset's description or fields: an added field is a new empty column; a field
    rows hold values in is only removed with --force."""
    address = dataset_address(dataset)
    with connect(server, token) as client:
        schema = None
        if add or remove:
            schema = dict(client.get_dataset(*address).schema_definition)
            for item in add or []:
                name, sep, text = item.partition("=")
                if not sep or not name.strip():
                    raise typer.BadParameter("give a field as NAME=DESCRIPTION", param_hint="--add")
                schema[name.strip()] = text.strip()
            for name in remove or []:
                if schema.pop(name, None) is None:
                    raise typer.BadParameter(f"{dataset} has no field {name!r}", param_hint="--remove")
        updated = client.update_dataset(*address, description=description, schema=schema, force=force)
    typer.echo(f"updated {dataset}: fields {', '.join(updated.schema_definition)}")


def delete(
    dataset: DatasetArgument,
    yes: YesOption = False,
    server: ServerOption = None,
    token: TokenOption = None,
) -> None:
    """Delete a dataset with its rows, vectors, links, files and the verified examples naming it, irreversibly."""
    address = dataset_address(dataset)
    confirm_irreversible(f"Delete {dataset} and everything in it", yes)
    with connect(server, token) as client:
        deleted = client.delete_dataset(*address)
    typer.echo(
        f"deleted {dataset}: {deleted.rows_deleted} rows, {deleted.vectors_deleted} vectors, "
        f"{deleted.links_deleted} links, {deleted.objects_deleted} files, {deleted.examples_deleted} examples; "
        f"{deleted.ingestions_ended} ingestions stopped"
    )
