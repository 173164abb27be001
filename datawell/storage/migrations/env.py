"""Alembic environment: runs on the connection `Database.migrate` hands over, or on the
URL in the config when invoked from the `alembic` command line."""

from __future__ import annotations

import asyncio

from alembic import context
from sqlalchemy.engine import Connection

from datawell.storage.db import create_engine
from datawell.storage.tables import Base

target_metadata = Base.metadata


def run_on(connection: Connection) -> None:
    context.configure(connection=connection, target_metadata=target_metadata, render_as_batch=True)
    with context.begin_transaction():
        context.run_migrations()


async def run_from_url(url: str) -> None:
    engine = create_engine(url)
    async with engine.begin() as connection:
        await connection.run_sync(run_on)
    await engine.dispose()


connection = context.config.attributes.get("connection")
if connection is not None:
    run_on(connection)
else:
    asyncio.run(run_from_url(context.config.get_main_option("sqlalchemy.url") or ""))
