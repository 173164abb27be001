"""The sandbox of a rows database's dialect. Apart from the package's `__init__`, which holds
what both sandboxes share and import, so that neither imports the package that imports it."""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncEngine

from datawell.tools.sandbox import Limits, Sandbox
from datawell.tools.sandbox.postgres import PostgresSandbox
from datawell.tools.sandbox.sqlite import SqliteSandbox


def open_sandbox(engine: AsyncEngine, limits: Limits) -> Sandbox:
    """The sandbox for the rows database behind `engine` (its writer)."""
    if engine.dialect.name == "postgresql":
        return PostgresSandbox(engine, limits)
    database = engine.url.database
    if not database or database == ":memory:":
        raise ValueError("the rows database must be a file for queries to open it read-only")
    return SqliteSandbox(database, limits)
