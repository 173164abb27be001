"""`datawell examples`: a namespace's verified question → query pairs, through the client."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

import typer

from datawell.commands.output import rows_table
from datawell.commands.remote import ServerOption, TokenOption, connect, namespace_address

examples_app = typer.Typer(help="Verified question -> query examples of a namespace.", no_args_is_help=True)
NamespaceArgument = Annotated[str, typer.Argument(help="OWNER/NAMESPACE", show_default=False)]


class Verdict(StrEnum):
    GOOD = "good"
    BAD = "bad"


@examples_app.command("add")
def add(
    namespace: NamespaceArgument,
    question: Annotated[str, typer.Argument(help="The question.", show_default=False)],
    query: Annotated[str, typer.Argument(help="The query that answers it.", show_default=False)],
    server: ServerOption = None,
    token: TokenOption = None,
) -> None:
    """Store a question and the query that answers it; the query is checked as you first."""
    with connect(server, token) as client:
        example = client.add_example(*namespace_address(namespace), question, query)
    typer.echo(f"added example {example.id}")


@examples_app.command("list")
def list_examples(namespace: NamespaceArgument, server: ServerOption = None, token: TokenOption = None) -> None:
    """List a namespace's verified examples, newest first."""
    with connect(server, token) as client:
        found = client.list_examples(*namespace_address(namespace)).data
    rows = [
        {"id": e.id, "question": e.question, "query": e.query, "source": e.source, "by": e.created_by} for e in found
    ]
    for line in rows_table(rows, width=60) if rows else [f"no verified examples in {namespace}"]:
        typer.echo(line)


@examples_app.command("delete")
def delete(
    namespace: NamespaceArgument,
    example_id: Annotated[str, typer.Argument(help="The example's id (see `datawell examples list`).")],
    server: ServerOption = None,
    token: TokenOption = None,
) -> None:
    """Delete a verified example."""
    with connect(server, token) as client:
        client.delete_example(*namespace_address(namespace), example_id)
    typer.echo(f"deleted example {example_id}")


@examples_app.command("mark")
def mark(
    conversation_id: Annotated[str, typer.Argument(help="Your conversation's id (from `datawell ask`).")],
    step: Annotated[int, typer.Argument(min=1, help="The step's number in the turn (1-based).")],
    verdict: Annotated[Verdict, typer.Argument(help="good: keep it as an example; bad: remove it.")],
    turn: Annotated[int | None, typer.Option(min=1, help="The turn (1-based); default the latest.")] = None,
    question: Annotated[str | None, typer.Option(help="Store the query under this question instead.")] = None,
    server: ServerOption = None,
    token: TokenOption = None,
) -> None:
    """Mark a past answer's query good (it becomes a verified example) or bad (it is removed)."""
    with connect(server, token) as client:
        marked = client.mark_step(conversation_id, step, verdict.value, turn=turn, question=question)
    if marked.example is not None:
        typer.echo(f"verified example {marked.example.id}: {marked.question!r} -> {marked.query}")
    else:
        typer.echo(f"removed {marked.removed} example(s) for {marked.question!r}")
