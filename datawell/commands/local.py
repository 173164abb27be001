"""Running a command in this process against the data folder: with every service (graphs,
models, vector store), or with only the metadata database, for the commands that manage
users, tokens and grants. Those never open the vector store, which one process at a time
may hold, so they work while `datawell serve` runs."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

import typer

from datawell.config import Settings
from datawell.errors import DatawellError

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncSession

    from datawell.services import Services
    from datawell.storage.db import Database
    from datawell.storage.tokens import TokenAuthority

T = TypeVar("T")


@dataclass(frozen=True)
class Metadata:
    settings: Settings
    db: Database
    tokens: TokenAuthority


def finish(main: Callable[[], Awaitable[T]]) -> T:
    """Run `main`; a DatawellError becomes one line on stderr and exit code 1."""
    try:
        return asyncio.run(main())  # type: ignore[arg-type]
    except DatawellError as exc:
        details = "".join(f"\n  {s.message}" for s in exc.sub_errors)
        typer.echo(f"error: {exc.message}{details}", err=True)
        raise typer.Exit(1) from None


def run(work: Callable[[Services], Awaitable[T]]) -> T:
    """Run one command against freshly built services."""
    from datawell.services import build_services

    async def main() -> T:
        services = await build_services(Settings())
        try:
            return await work(services)
        finally:
            await services.close()

    return finish(main)


def run_metadata(work: Callable[[Metadata], Awaitable[T]]) -> T:
    """Run one command against the metadata database only."""
    from datawell.storage.db import Database
    from datawell.storage.tokens import token_authority

    async def main() -> T:
        settings = Settings()
        settings.data_dir.mkdir(parents=True, exist_ok=True)
        db = Database(settings.resolved_database_url)
        try:
            await db.migrate()
            return await work(Metadata(settings, db, token_authority(db, settings)))
        finally:
            await db.close()

    return finish(main)


def run_in_session(work: Callable[[AsyncSession], Awaitable[T]]) -> T:
    """Run one command in one session of the metadata database (committed when it returns)."""

    async def in_session(metadata: Metadata) -> T:
        async with metadata.db.session() as session:
            return await work(session)

    return run_metadata(in_session)
