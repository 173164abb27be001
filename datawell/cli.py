"""The `datawell` command line.

The graphs, the model clients and the vector store take seconds to import, so commands
import them when they run: `datawell --help` and the eval commands that only read files
answer at once."""

from __future__ import annotations

import asyncio
import contextlib
import gc
from datetime import timedelta
from typing import TYPE_CHECKING, Annotated

import typer

from datawell.commands import ask, data, demo, rows, upload
from datawell.commands.examples import examples_app
from datawell.commands.local import Metadata, run, run_in_session, run_metadata
from datawell.config import Settings
from datawell.errors import NotFound
from datawell.evals.commands import eval_app
from datawell.storage import access, ingestions, users

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncSession

    from datawell.services import Services

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
app.add_typer(examples_app, name="examples")


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
    from datawell.observability import logs

    settings = Settings()
    logs.configure(settings.log_format)
    app = create_app(settings)  # its start-up freezes the objects of the imports (datawell.app)
    # log_config=None: uvicorn's lines go through the handler above (trace ids, JSON).
    uvicorn.run(app, host=host or settings.host, port=port or settings.port, log_config=None)


@app.command()
def worker(
    name: Annotated[
        str | None, typer.Option(help="Name recorded on the attempts it claims (default host:pid:random).")
    ] = None,
) -> None:
    """Run an ingestion worker: claim queued ingestions from the database until stopped (Ctrl-C or SIGTERM)."""
    import signal

    from datawell.ingest.worker import Worker
    from datawell.observability import logs, tracing

    settings = Settings()
    logs.configure(settings.log_format)
    tracing.configure(settings)

    async def work(services: Services) -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        main = asyncio.current_task()
        # SIGTERM ends the worker like Ctrl-C: a running ingestion goes back to the queue.
        if main is not None:
            loop.add_signal_handler(signal.SIGTERM, main.cancel)
        # As `serve` does: the start-up's objects frozen, out of the collector's full passes
        # (one fell inside each 100,000-row attempt of a fresh process: 0.2-0.45 s).
        gc.collect()
        gc.freeze()
        await Worker(services, name).run(stop)

    with contextlib.suppress(KeyboardInterrupt, asyncio.CancelledError):
        run(work)
    tracing.shutdown()


@users_app.command("create")
def users_create(name: str) -> None:
    """Create a user."""
    run_in_session(lambda session: users.create_user(session, name))
    typer.echo(f"created user {name}")


@users_app.command("list")
def users_list() -> None:
    """List users."""

    async def work(session: AsyncSession) -> list[str]:
        return [u.username for u in await users.list_users(session)]

    for name in run_in_session(work):
        typer.echo(name)


@token_app.command("issue")
def token_issue(
    user: str,
    ttl: Annotated[int | None, typer.Option(help="Lifetime in seconds (default DATAWELL_TOKEN_TTL_SECONDS).")] = None,
    description: Annotated[str, typer.Option(help="What the token is for.")] = "",
) -> None:
    """Issue a bearer token for USER; prints the token id (for revoke) and the token."""

    async def work(metadata: Metadata) -> tuple[str, str]:
        lifetime = timedelta(seconds=ttl or metadata.settings.token_ttl_seconds)
        token, encoded = await metadata.tokens.issue(user, lifetime, description)
        return token.id, encoded

    token_id, encoded = run_metadata(work)
    typer.echo(f"token id: {token_id}", err=True)
    typer.echo(encoded)


@token_app.command("revoke")
def token_revoke(token_id: str) -> None:
    """Revoke a token by its id; requests with it get 401 from then on."""
    run_in_session(lambda session: users.revoke_token(session, token_id))
    typer.echo(f"revoked token {token_id}")


@grants_app.command("add")
def grants_add(
    namespace: Annotated[str, typer.Argument(help="OWNER/NAMESPACE")],
    user: str,
    permission: Annotated[access.Permission, typer.Option(help="read or write")] = access.Permission.READ,
) -> None:
    """Give USER read or write access to a namespace."""
    owner, name = split_namespace(namespace)

    run_in_session(lambda session: access.set_grant(session, owner, name, user, permission))
    typer.echo(f"granted {permission.value} on {namespace} to {user}")


@grants_app.command("remove")
def grants_remove(namespace: Annotated[str, typer.Argument(help="OWNER/NAMESPACE")], user: str) -> None:
    """Take away USER's access to a namespace."""
    owner, name = split_namespace(namespace)

    removed = run_in_session(lambda session: access.remove_grant(session, owner, name, user))
    typer.echo(f"removed {user}'s grant on {namespace}" if removed else f"{user} had no grant on {namespace}")


@grants_app.command("list")
def grants_list(namespace: Annotated[str, typer.Argument(help="OWNER/NAMESPACE")]) -> None:
    """List who has access to a namespace."""
    owner, name = split_namespace(namespace)

    for grantee, permission in run_in_session(lambda session: access.list_grants(session, owner, name)):
        typer.echo(f"{grantee}\t{permission}")


@ingestions_app.command("cancel")
def ingestions_cancel(ingestion_id: str) -> None:
    """Cancel a queued or running ingestion; its worker stops and removes what it staged."""

    async def work(session: AsyncSession) -> None:
        ingestion = await ingestions.get_ingestion(session, ingestion_id)
        if ingestion is None:
            raise NotFound(f"ingestion {ingestion_id} does not exist")
        await ingestions.cancel(session, ingestion, "cancelled from the command line")

    run_in_session(work)
    typer.echo(f"cancelled ingestion {ingestion_id}")


# Client commands: they talk to a running server (see datawell/commands/).
app.command()(upload.upload)
app.command()(data.datasets)
app.command()(data.attempts)
app.command()(data.retry)
app.command()(data.clear)
app.command()(data.update)
app.command()(data.rename)
app.command("rename-namespace")(data.rename_namespace)
app.command()(data.delete)
app.command()(rows.rows)
app.command()(rows.export)
app.command()(ask.ask)
app.command()(demo.demo)


def main() -> None:
    app()
