"""The `datawell` command line.

The graphs, the model clients and the vector store take seconds to import, so commands
import them when they run: `datawell --help` and the eval commands that only read files
answer at once."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer

from datawell.config import Settings
from datawell.errors import DatawellError, InvalidInput, NotFound
from datawell.evals.commands import eval_app
from datawell.storage import access, ingestions, users

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncSession

    from datawell.services import Services
    from datawell.storage.tables import User

app = typer.Typer(help="Datawell: an open data platform for agents.", no_args_is_help=True)
users_app = typer.Typer(help="Manage users.", no_args_is_help=True)
token_app = typer.Typer(help="Issue and revoke API tokens.", no_args_is_help=True)
grants_app = typer.Typer(help="Share namespaces with other users.", no_args_is_help=True)
ingestions_app = typer.Typer(help="Manage ingestion attempts.", no_args_is_help=True)
app.add_typer(users_app, name="users")
app.add_typer(token_app, name="token")
app.add_typer(grants_app, name="grants")
app.add_typer(ingestions_app, name="ingestions")
app.add_typer(eval_app, name="eval")

T = TypeVar("T")


def run(work: Callable[[Services], Awaitable[T]]) -> T:
    """Run one command against freshly built services; errors become a message and exit code 1."""

    from datawell.app import build_services

    async def main() -> T:
        services = await build_services(Settings())
        try:
            return await work(services)
        finally:
            await services.close()

    try:
        return asyncio.run(main())
    except DatawellError as exc:
        details = "".join(f"\n  {s.message}" for s in exc.sub_errors)
        typer.echo(f"error: {exc.message}{details}", err=True)
        raise typer.Exit(1) from None


def split_namespace(value: str) -> tuple[str, str]:
    owner, sep, name = value.partition("/")
    if not sep or not owner or not name:
        raise typer.BadParameter("give the namespace as OWNER/NAMESPACE")
    return owner, name


@app.command()
def serve(
    host: Annotated[str | None, typer.Option(help="Address to listen on (default DATAWELL_HOST).")] = None,
    port: Annotated[int | None, typer.Option(help="Port to listen on (default DATAWELL_PORT).")] = None,
) -> None:
    """Run the API (and, by default, the ingestion worker) in this process."""
    import uvicorn

    from datawell.app import create_app

    settings = Settings()
    uvicorn.run(create_app(settings), host=host or settings.host, port=port or settings.port)


@app.command()
def worker(
    name: Annotated[
        str | None, typer.Option(help="Name recorded on the attempts it claims (default host:pid:random).")
    ] = None,
) -> None:
    """Run an ingestion worker: claim queued ingestions from the database until stopped (Ctrl-C or SIGTERM)."""
    import signal

    from datawell.ingest.worker import Worker

    async def work(services: Services) -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        main = asyncio.current_task()
        # SIGTERM ends the worker like Ctrl-C: a running ingestion goes back to the queue.
        if main is not None:
            loop.add_signal_handler(signal.SIGTERM, main.cancel)
        await Worker(services, name).run(stop)

    with contextlib.suppress(KeyboardInterrupt, asyncio.CancelledError):
        run(work)


@users_app.command("create")
def users_create(name: str) -> None:
    """Create a user."""

    async def work(services: Services) -> None:
        async with services.db.session() as session:
            await users.create_user(session, name)

    run(work)
    typer.echo(f"created user {name}")


@users_app.command("list")
def users_list() -> None:
    """List users."""

    async def work(services: Services) -> list[str]:
        async with services.db.session() as session:
            return [u.username for u in await users.list_users(session)]

    for name in run(work):
        typer.echo(name)


@token_app.command("issue")
def token_issue(
    user: str,
    ttl: Annotated[int | None, typer.Option(help="Lifetime in seconds (default DATAWELL_TOKEN_TTL_SECONDS).")] = None,
    description: Annotated[str, typer.Option(help="What the token is for.")] = "",
) -> None:
    """Issue a bearer token for USER; prints the token id (for revoke) and the token."""

    async def work(services: Services) -> tuple[str, str]:
        lifetime = timedelta(seconds=ttl or services.settings.token_ttl_seconds)
        token, encoded = await services.tokens.issue(user, lifetime, description)
        return token.id, encoded

    token_id, encoded = run(work)
    typer.echo(f"token id: {token_id}", err=True)
    typer.echo(encoded)


@token_app.command("revoke")
def token_revoke(token_id: str) -> None:
    """Revoke a token by its id; requests with it get 401 from then on."""

    async def work(services: Services) -> None:
        async with services.db.session() as session:
            await users.revoke_token(session, token_id)

    run(work)
    typer.echo(f"revoked token {token_id}")


@grants_app.command("add")
def grants_add(
    namespace: Annotated[str, typer.Argument(help="OWNER/NAMESPACE")],
    user: str,
    permission: Annotated[access.Permission, typer.Option(help="read or write")] = access.Permission.READ,
) -> None:
    """Give USER read or write access to a namespace."""
    owner, name = split_namespace(namespace)

    async def work(services: Services) -> None:
        async with services.db.session() as session:
            await access.set_grant(session, owner, name, user, permission)

    run(work)
    typer.echo(f"granted {permission.value} on {namespace} to {user}")


@grants_app.command("remove")
def grants_remove(namespace: Annotated[str, typer.Argument(help="OWNER/NAMESPACE")], user: str) -> None:
    """Take away USER's access to a namespace."""
    owner, name = split_namespace(namespace)

    async def work(services: Services) -> bool:
        async with services.db.session() as session:
            return await access.remove_grant(session, owner, name, user)

    removed = run(work)
    typer.echo(f"removed {user}'s grant on {namespace}" if removed else f"{user} had no grant on {namespace}")


@grants_app.command("list")
def grants_list(namespace: Annotated[str, typer.Argument(help="OWNER/NAMESPACE")]) -> None:
    """List who has access to a namespace."""
    owner, name = split_namespace(namespace)

    async def work(services: Services) -> list[tuple[str, str]]:
        async with services.db.session() as session:
            return await access.list_grants(session, owner, name)

    for grantee, permission in run(work):
        typer.echo(f"{grantee}\t{permission}")


@ingestions_app.command("cancel")
def ingestions_cancel(ingestion_id: str) -> None:
    """Cancel a queued or running ingestion; its worker stops and removes what it staged."""

    async def work(services: Services) -> None:
        async with services.db.session() as session:
            ingestion = await ingestions.get_ingestion(session, ingestion_id)
            if ingestion is None:
                raise NotFound(f"ingestion {ingestion_id} does not exist")
            await ingestions.cancel(session, ingestion, "cancelled from the command line")

    run(work)
    typer.echo(f"cancelled ingestion {ingestion_id}")


async def resolve_caller_and_namespace(
    session: AsyncSession, namespace: str, username: str | None
) -> tuple[User, access.NamespaceRef]:
    """`ask`'s caller: --user, else the owner named in OWNER/NAME, else the only user."""
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


def rows_table(rows: list[dict[str, Any]], width: int = 40) -> list[str]:
    """Rows as aligned text; internal `__` fields are left out."""
    columns = list(dict.fromkeys(k for row in rows for k in row if not k.startswith("__")))
    cells = [[("" if row.get(c) is None else str(row.get(c)))[:width] for c in columns] for row in rows]
    widths = [max([len(c), *(len(line[i]) for line in cells)]) for i, c in enumerate(columns)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(columns, widths, strict=True)).rstrip()]
    lines += ["  ".join(v.ljust(w) for v, w in zip(line, widths, strict=True)).rstrip() for line in cells]
    return lines


@app.command()
def ask(
    question: str,
    namespace: Annotated[str, typer.Option(help="NAME (the user's own namespace) or OWNER/NAME.")],
    user: Annotated[
        str | None, typer.Option(help="Whose access applies (default: the owner in OWNER/NAME, else the only user).")
    ] = None,
    model: Annotated[str | None, typer.Option(help="Model for this question (a litellm name).")] = None,
    provider: Annotated[str | None, typer.Option(help="Provider of --model.")] = None,
) -> None:
    """Ask a question in plain language: prints the generated query and its rows."""
    from datawell.graphs.events import QueryGenerated, RowsReady, RunFailed
    from datawell.llm.models import ModelChoice, StageChoices
    from datawell.runs import AskRequest, Runs

    async def work(services: Services) -> list[Any]:
        async with services.db.session() as session:
            caller, ref = await resolve_caller_and_namespace(session, namespace, user)
        request = AskRequest(caller, ref, question, choices=StageChoices(default=ModelChoice(model, provider)))
        run = await Runs(services).start_nl2ql(request)
        return [event async for event in run.events()]

    for event in run(work):
        if isinstance(event, QueryGenerated):
            typer.echo(event.query)
            typer.echo("")
        elif isinstance(event, RowsReady):
            for line in rows_table(event.rows):
                typer.echo(line)
            typer.echo(f"({len(event.rows)} rows{'; cut by the row cap' if event.truncated else ''})")
        elif isinstance(event, RunFailed):
            typer.echo(f"error: {event.message}", err=True)
            raise typer.Exit(1)


DEMO_QUESTION = "Which customer spent the most in total, and how much?"


@app.command()
def demo(
    question: Annotated[str, typer.Argument(help="The question to ask about the demo data.")] = DEMO_QUESTION,
    user: Annotated[str, typer.Option(help="The user who owns the demo namespace (created if missing).")] = "demo",
    model: Annotated[str | None, typer.Option(help="Model for every stage (a litellm name).")] = None,
    provider: Annotated[str | None, typer.Option(help="Provider of --model.")] = None,
) -> None:
    """Load the bundled shop demo (customers, orders) through the real ingestion path, then
    ask the assistant a question about it and print its plan, steps and answer."""
    from datawell import demo as demo_data
    from datawell.graphs.events import AnswerReady, PlanReady, RunFailed, StepFinished
    from datawell.llm.models import ModelChoice, StageChoices
    from datawell.runs import AskRequest, Runs

    async def work(services: Services) -> None:
        caller, namespace, report = await demo_data.load(services, user)
        for line in report:
            typer.echo(line)
        typer.echo(f"\nQ: {question}\n")
        request = AskRequest(caller, namespace, question, choices=StageChoices(default=ModelChoice(model, provider)))
        started = await Runs(services).start_assistant(request)
        async for event in started.events():
            if isinstance(event, PlanReady):
                typer.echo("plan:")
                for number, step in enumerate(event.steps, 1):
                    typer.echo(f"  {number}. {step}")
            elif isinstance(event, StepFinished):
                typer.echo(f"\nstep {event.index}: {event.query or event.error}")
                for line in rows_table(event.rows[:10]):
                    typer.echo(f"  {line}")
            elif isinstance(event, AnswerReady):
                typer.echo(f"\nA: {event.text}")
            elif isinstance(event, RunFailed):
                typer.echo(f"error: {event.message}", err=True)
                raise typer.Exit(1)

    run(work)


def main() -> None:
    app()
