"""`datawell ask`: a question to a running server's assistant (AutoRAG, streamed: plan,
steps, answer), or with `--local` to the nl2ql graph in this process (the generated query
and its rows; no server, but the data folder's vector store to itself)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Annotated, Any

import typer

from datawell.commands.local import run
from datawell.commands.output import rows_table
from datawell.commands.remote import ServerOption, TokenOption, connect
from datawell.errors import InvalidInput
from datawell.storage import access, users

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncSession

    from datawell.services import Services
    from datawell.storage.tables import User

SHOWN_ROWS = 10


def ask(
    question: str,
    namespace: Annotated[str, typer.Option(help="NAME (your own namespace) or OWNER/NAME.")],
    model: Annotated[str | None, typer.Option(help="Model for this question (a litellm name).")] = None,
    provider: Annotated[str | None, typer.Option(help="Provider of --model.")] = None,
    conversation: Annotated[
        str | None, typer.Option(help="Continue this conversation (its id is printed after each answer).")
    ] = None,
    local: Annotated[
        bool, typer.Option("--local", help="Run the nl2ql graph in this process instead: print the query and rows.")
    ] = False,
    user: Annotated[
        str | None, typer.Option(help="With --local: whose access applies (default: the owner, else the only user).")
    ] = None,
    server: ServerOption = None,
    token: TokenOption = None,
) -> None:
    """Ask a question in plain language about a namespace's data."""
    if local:
        ask_locally(question, namespace, user, model, provider)
        return
    owner, _, name = namespace.rpartition("/")
    with connect(server, token) as client:
        events = client.ask(
            name, question, username=owner or None, model=model, provider=provider, conversation_id=conversation
        )
        conversation_id = print_run((event.event, event.data) for event in events)
    if conversation_id:
        typer.echo(f"\n(conversation {conversation_id}: continue it with --conversation {conversation_id})", err=True)


def print_run(events: Iterable[tuple[str, dict[str, Any]]]) -> str:
    """Print the assistant's events as they arrive; returns the conversation id."""
    conversation_id, streamed = "", False
    for name, data in events:
        if name == "run-started":
            conversation_id = data.get("conversationId") or ""
        elif name == "plan":
            typer.echo("plan:")
            for number, step in enumerate(data.get("steps", []), 1):
                typer.echo(f"  {number}. {step}")
        elif name == "step":
            typer.echo(f"\nstep {data.get('index')}: {data.get('query') or data.get('error')}")
            for line in change_lines(data.get("changes") or []):
                typer.echo(f"  {line}")
            rows = data.get("data") or []
            for line in rows_table(rows[:SHOWN_ROWS]) if rows else []:
                typer.echo(f"  {line}")
            if len(rows) > SHOWN_ROWS:
                typer.echo(f"  … {len(rows)} rows")
        elif name == "answer-delta":  # the answer, once the service checked it against the rows
            typer.echo(("\nA: " if not streamed else "") + data.get("text", ""), nl=False)
            streamed = True
        elif name == "answer":
            typer.echo("" if streamed else f"\nA: {data.get('text', '')}")
    return conversation_id


def change_lines(changes: list[dict[str, str]]) -> list[str]:
    """Each rewrite rule of the service that changed the query (issue 47): its name and the
    query before and after it."""
    lines = []
    for change in changes:
        lines += [
            f"rule {change.get('rule')}: {change.get('reason')}",
            f"  before: {change.get('before')}",
            f"  after:  {change.get('after')}",
        ]
    return lines


def ask_locally(question: str, namespace: str, user: str | None, model: str | None, provider: str | None) -> None:
    from datawell.graphs.events import QueryGenerated, RowsReady, RunFailed
    from datawell.llm.models import StageChoices
    from datawell.runs import AskRequest, Runs

    async def work(services: Services) -> list[Any]:
        async with services.db.session() as session:
            caller, ref = await resolve_caller_and_namespace(session, namespace, user)
        request = AskRequest(caller, ref, question, choices=StageChoices.named(model, provider))
        started = await Runs(services).start_nl2ql(request)
        return [event async for event in started.events()]

    for event in run(work):
        if isinstance(event, QueryGenerated):
            typer.echo(event.query)
            for line in change_lines(event.changes):
                typer.echo(f"  {line}")
            typer.echo("")
        elif isinstance(event, RowsReady):
            for line in rows_table(event.rows):
                typer.echo(line)
            typer.echo(f"({len(event.rows)} rows{'; cut by the row cap' if event.truncated else ''})")
        elif isinstance(event, RunFailed):
            typer.echo(f"error: {event.message}", err=True)
            raise typer.Exit(1)


async def resolve_caller_and_namespace(
    session: AsyncSession, namespace: str, username: str | None
) -> tuple[User, access.NamespaceRef]:
    """The local caller: --user, else the owner named in OWNER/NAME, else the only user."""
    owner, _, name = namespace.rpartition("/")
    if username or owner:
        caller = await users.get_user(session, username or owner)
    else:
        everyone = await users.list_users(session)
        if len(everyone) != 1:
            raise InvalidInput(
                "there are several users: name the one whose access applies with --user"
                if everyone
                else "no users yet: create one with `datawell users create NAME`"
            )
        caller = everyone[0]
    ref = await access.namespace_named(session, owner or caller.username, name)
    return caller, ref
