"""`datawell upload FILE OWNER/NAMESPACE/DATASET`: the whole multipart sequence with a
progress bar for the parts, then one for the ingestion (bytes, rows, status)."""

from __future__ import annotations

import csv
from pathlib import Path
from types import TracebackType
from typing import Annotated, Self

import typer
from rich.console import Console
from rich.progress import BarColumn, DownloadColumn, Progress, TaskID, TextColumn, TimeElapsedColumn

from datawell.client import ApiError, Client, IngestionAttempt, UploadProgress
from datawell.commands.data import DatasetArgument
from datawell.commands.output import count
from datawell.commands.remote import ServerOption, TokenOption, connect, dataset_address, fail

TABULAR = {".csv": ",", ".tsv": "\t"}


def upload(
    file: Annotated[Path, typer.Argument(exists=True, dir_okay=False, readable=True, show_default=False)],
    dataset: DatasetArgument,
    create: Annotated[bool, typer.Option("--create", help="Create the dataset first if it does not exist.")] = False,
    schema: Annotated[
        list[str] | None,
        typer.Option(
            "--schema",
            metavar="FIELD=DESCRIPTION",
            help="With --create: a field of the dataset and what it holds (repeat per field). "
            "Default for CSV/TSV: the file's header, one field per column.",
        ),
    ] = None,
    description: Annotated[str, typer.Option(help="With --create: what the dataset is about.")] = "",
    wait: Annotated[bool, typer.Option(help="Follow the ingestion until it finishes.")] = True,
    server: ServerOption = None,
    token: TokenOption = None,
) -> None:
    """Upload a file into a dataset and follow its ingestion; exits 1 if the ingestion fails."""
    owner, namespace, name = dataset_address(dataset)
    fields = parse_schema(schema or [])
    with connect(server, token) as client:
        if create:
            create_dataset(client, (owner, namespace, name), fields or header_fields(file), description)
        with UploadBar() as bar:
            attempt = client.upload(file, owner, namespace, name, wait=wait, progress=bar.update)
    report(dataset, attempt, wait)


def parse_schema(items: list[str]) -> dict[str, str]:
    fields = {}
    for item in items:
        field, sep, text = item.partition("=")
        if not sep or not field.strip():
            raise typer.BadParameter(f"{item!r}: give each field as FIELD=DESCRIPTION", param_hint="--schema")
        fields[field.strip()] = text.strip()
    return fields


def header_fields(file: Path) -> dict[str, str]:
    delimiter = TABULAR.get(file.suffix.lower())
    if delimiter is None:
        raise fail(f"name the dataset's fields with --schema FIELD=DESCRIPTION ({file.name} has no header to use)")
    with file.open(newline="", encoding="utf-8-sig", errors="replace") as handle:
        header = next(csv.reader(handle, delimiter=delimiter), [])
    if not any(column.strip() for column in header):
        raise fail(f"{file.name} has no header row: name the fields with --schema FIELD=DESCRIPTION")
    return {column.strip(): "" for column in header if column.strip()}


def create_dataset(client: Client, address: tuple[str, str, str], fields: dict[str, str], description: str) -> None:
    owner, namespace, name = address
    try:
        created = client.create_dataset(namespace, name, fields, description)
    except ApiError as exc:
        if exc.status != 409:
            raise
        typer.echo(f"{owner}/{namespace}/{name} exists: uploading into it", err=True)
        return
    if created.owner != owner:
        raise fail(f"datasets are created in your own namespace: {created.owner}/{namespace}/{name}, not {owner}'s")
    typer.echo(f"created {owner}/{namespace}/{name} with fields {', '.join(fields)}", err=True)


class UploadBar:
    """Two bars on stderr: the parts sent, then the ingestion's processed bytes with its
    rows and status."""

    def __init__(self) -> None:
        self.progress = Progress(
            TextColumn("{task.description:<10}"),
            BarColumn(),
            DownloadColumn(),
            TextColumn("{task.fields[detail]}"),
            TimeElapsedColumn(),
            console=Console(stderr=True),
        )
        self.parts: TaskID | None = None
        self.ingestion: TaskID | None = None

    def update(self, state: UploadProgress) -> None:
        if self.parts is None:
            self.parts = self.progress.add_task("parts", total=state.total_bytes, detail="")
        parts = f"{state.parts_done}/{state.parts_total} parts"
        self.progress.update(self.parts, completed=state.sent_bytes, detail=parts)
        attempt = state.attempt
        if attempt is None:
            return
        if self.ingestion is None:
            self.ingestion = self.progress.add_task("ingestion", total=attempt.expected_total_bytes, detail="")
        detail = f"{count(attempt.processed_rows, 'row')}  {attempt.status}"
        self.progress.update(self.ingestion, completed=attempt.processed_bytes, detail=detail)

    def __enter__(self) -> Self:
        self.progress.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.progress.stop()


def report(dataset: str, attempt: IngestionAttempt, waited: bool) -> None:
    if not waited:
        typer.echo(f"queued ingestion {attempt.id}: follow it with `datawell attempts {dataset}`")
        return
    if attempt.status != "SUCCEEDED":
        raise fail(f"ingestion {attempt.id} of {attempt.attributes.name} {attempt.status}: {attempt.status_message}")
    rows = count(attempt.processed_rows, "row")
    typer.echo(f"{dataset}: {rows} from {attempt.attributes.name} (ingestion {attempt.id})")
