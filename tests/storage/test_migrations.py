"""The migrations build the schema `storage/tables.py` declares: a fresh database brought to
the newest revision differs from the declared tables in nothing alembic can compare (tables,
columns, types, nullability, indexes, unique and foreign keys), on SQLite and PostgreSQL."""

from __future__ import annotations

from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy.engine import Connection

from datawell.storage.db import Database
from datawell.storage.tables import Base


async def test_the_newest_revision_is_the_declared_schema(database_url: str) -> None:
    database = Database(database_url)
    try:
        await database.migrate()

        def differences(connection: Connection) -> list[object]:
            context = MigrationContext.configure(connection, opts={"compare_type": True})
            return list(compare_metadata(context, Base.metadata))

        async with database.engine.connect() as connection:
            assert await connection.run_sync(differences) == []
    finally:
        await database.engine.dispose()
