"""`datawell demo`: the bundled shop data loaded and asked about, in this process, or through
the running server when one answers (the server holds the data folder's vector store)."""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING, Annotated

import httpx
import typer

from datawell.client import ApiError
from datawell.commands.ask import print_run
from datawell.commands.local import Metadata, run, run_metadata
from datawell.commands.output import count, rows_table
from datawell.commands.remote import connect
from datawell.config import Settings
from datawell.storage.users import create_user, find_user

if TYPE_CHECKING:
    from datawell.services import Services

DEMO_QUESTION = "Which customer spent the most in total, and how much?"


def demo(
    question: Annotated[str, typer.Argument(help="The question to ask about the demo data.")] = DEMO_QUESTION,
    user: Annotated[str, typer.Option(help="The user who owns the demo namespace (created if missing).")] = "demo",
    model: Annotated[str | None, typer.Option(help="Model for every stage (a litellm name).")] = None,
    provider: Annotated[str | None, typer.Option(help="Provider of --model.")] = None,
) -> None:
    """Load the bundled shop demo (customers, orders) through the real ingestion path, then
    ask the assistant a question about it and print its plan, steps and answer. When a
    server answers (DATAWELL_SERVER, else where `datawell serve` listens), through it."""
    settings = Settings()
    if server_answers(settings.server_url):
        demo_through_server(settings.server_url, question, user, model, provider)
        return
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


def server_answers(url: str) -> bool:
    try:
        return httpx.get(f"{url}/health", timeout=1.0).status_code == 200
    except httpx.TransportError:
        return False


def demo_through_server(url: str, question: str, user: str, model: str | None, provider: str | None) -> None:
    """The demo as a client: the user (created if missing) gets an hour's token from the data
    folder's database, which the server shares; the files go up as `datawell upload` sends them."""
    from datawell.demo import DATASETS, FOLDER, NAMESPACE

    async def issue(metadata: Metadata) -> str:
        async with metadata.db.session() as session:
            await find_user(session, user) or await create_user(session, user)
        _, encoded = await metadata.tokens.issue(user, timedelta(hours=1), "datawell demo")
        return encoded

    typer.echo(f"using the server at {url}", err=True)
    with connect(url, run_metadata(issue)) as client:
        for item in DATASETS:
            try:
                client.create_dataset(NAMESPACE, item.name, item.schema, item.description)
            except ApiError as exc:
                if exc.status != 409:
                    raise
                typer.echo(f"{user}/{NAMESPACE}/{item.name}: already loaded")
                continue
            attempt = client.upload(FOLDER / f"{item.name}.csv", user, NAMESPACE, item.name)
            typer.echo(f"{user}/{NAMESPACE}/{item.name}: {attempt.status}, {count(attempt.processed_rows, 'row')}")
        typer.echo(f"\nQ: {question}\n")
        print_run((e.event, e.data) for e in client.ask(NAMESPACE, question, model=model, provider=provider))
