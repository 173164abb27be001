"""The second wall as a caller meets it: where rows live, byte caps, and what the database
itself refuses whatever SQL reaches it."""

from __future__ import annotations

import sqlite3
import uuid
from dataclasses import replace
from pathlib import Path

import pytest

from datawell.config import Settings
from datawell.errors import QueryError
from datawell.llm.embeddings import HashingEmbedder
from datawell.services import Overrides, Services, build_services
from datawell.storage.datasets import get_dataset
from datawell.storage.rows import RowStore
from datawell.tools.ql import QueryTools
from datawell.tools.sandbox import Limits
from datawell.tools.sandbox.postgres import PostgresSandbox
from tests.tools.conftest import World


def limited(world: World, **limits: int) -> QueryTools:
    query = world.query
    return QueryTools(
        query.db, query.rows, query.vectors, query.embedder, row_cap=100, limits=Limits(seconds=5, **limits)
    )  # fmt: skip


async def codes_of(tools: QueryTools, world: World, sql: str) -> list[str]:
    with pytest.raises(QueryError) as caught:
        await tools.run(world.alice, world.sales, sql)
    return [s.code for s in caught.value.sub_errors]


async def test_results_are_cut_at_the_byte_cap_and_huge_rows_refused(world: World) -> None:
    tools = limited(world, row_bytes=4096, result_bytes=4096)
    try:
        wide = "x" * 1000
        result = await tools.run(world.alice, world.sales, f"SELECT note, '{wide}' AS wide FROM orders")
        assert 0 < len(result.rows) < 5 and result.truncated is True
        assert await codes_of(tools, world, f"SELECT '{wide * 5}' AS wide FROM orders") == ["size_limit"]
        huge = (
            "WITH RECURSIVE r(s) AS (SELECT 'x' UNION ALL SELECT s || s FROM r) SELECT length(s) AS l FROM r LIMIT 30"
        )
        if tools.target == "sqlite":  # strings stop at the row cap; PostgreSQL's time limit stops this one
            assert await codes_of(tools, world, huge) == ["size_limit"]
    finally:
        await tools.close()


async def test_the_sandbox_reads_only_the_resolved_tables(world: World, services: Services) -> None:
    """Even SQL the checker never saw reads only the tables `compiled.tables` names."""
    async with services.db.session() as session:
        theirs = (await get_dataset(session, world.crm, "customers")).record.table_name
    compiled = await world.query.prepare(world.alice, world.sales, "SELECT order_id FROM orders")
    for sql in (f'SELECT * FROM "{theirs}"', "SELECT * FROM tokens", "SELECT 1 AS x FROM orders, tokens"):
        with pytest.raises(QueryError) as caught:
            await world.query.execute(replace(compiled, sql=sql))
        assert caught.value.sub_errors[0].code == "database_error"
        assert "Paris" not in caught.value.message


async def test_nested_ctes_of_one_name_and_refused_names(world: World) -> None:
    result = await world.query.run(
        world.alice, world.sales,
        "WITH a AS (SELECT 1 AS x) SELECT (WITH a AS (SELECT 2 AS x) SELECT x FROM a) AS inner_x, x FROM a",
    )  # fmt: skip
    assert [(r["inner_x"], r["x"]) for r in result.rows] == [(2, 1)]
    for name in ("orders", "ORDERS", "tokens", "ds_abc", "sqlite_master", "pg_class", "stg_x"):
        assert await codes_of(world.query, world, f"WITH {name} AS (SELECT 1 AS x) SELECT x FROM {name}") == [
            "cte_name_taken"
        ], name


async def test_rows_live_in_their_own_database_and_old_row_tables_move_there(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    old = sqlite3.connect(data / "datawell.db")  # an older data folder: a row table beside the metadata
    old.execute('CREATE TABLE "ds_0123456789abcdef01234567" (__id VARCHAR(36) PRIMARY KEY, x TEXT)')
    old.execute("INSERT INTO ds_0123456789abcdef01234567 VALUES ('1', 'kept')")
    old.commit()
    old.close()
    settings = Settings(
        data_dir=data, embeddings_enabled=False, embedded_model_enabled=False, run_worker_in_process=False
    )
    assert settings.resolved_rows_database_url.endswith("/rows.db")
    services = await build_services(settings, Overrides(embedder=HashingEmbedder()))
    await services.close()
    meta = sqlite3.connect(data / "datawell.db")
    rows = sqlite3.connect(data / "rows.db")
    assert not meta.execute("SELECT name FROM sqlite_master WHERE name LIKE 'ds%'").fetchall()
    assert rows.execute("SELECT x FROM ds_0123456789abcdef01234567").fetchall() == [("kept",)]
    assert not rows.execute("SELECT name FROM sqlite_master WHERE name IN ('tokens', 'users')").fetchall()


async def test_postgres_refuses_to_start_without_a_role_that_can_create_roles(database_url: str) -> None:
    if not database_url.startswith("postgresql"):
        pytest.skip("PostgreSQL only")
    import asyncpg

    name = f"dw_isolation_{uuid.uuid4().hex[:10]}"
    admin = await asyncpg.connect(database_url.replace("postgresql+asyncpg://", "postgresql://"))
    await admin.execute(f'CREATE ROLE "{name}" LOGIN')
    try:
        weak = database_url.replace("postgres@", f"{name}@", 1)
        rows = RowStore(weak)
        try:
            with pytest.raises(RuntimeError, match="CREATEROLE"):
                await PostgresSandbox(rows.engine, Limits(1, 1024, 1024, 4)).start()
        finally:
            await rows.close()
    finally:
        await admin.execute(f'DROP ROLE "{name}"')
        await admin.close()
