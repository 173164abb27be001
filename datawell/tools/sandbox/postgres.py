"""PostgreSQL: each query runs in a READ ONLY transaction switched to a role that may read only
the tables the checker resolved (`SET LOCAL ROLE`), with `statement_timeout`, `work_mem` and
`search_path` set for that transaction alone.

Roles: one per row table (`dwr_<db>_<table>`, SELECT on that table) and one per set of tables a
query reads together (`dwq_<db>_<hash>`, a member of each table's role). They are created once,
committed, and cached, so a query pays one `SET LOCAL` round trip: granting per query would
update the table's catalogue row and serialise every query of a dataset behind each other.

Two hatches PostgreSQL leaves open to every role are closed in Datawell's database at start:
`set_config('role', ...)`, with which a role switches back to the session's own user, and the
system catalogues, which list every tenant's tables and columns. The service's role must be a
superuser to close them, or an administrator does it once (the start-up error says how; see
docs/query-language.md). Query roles then cannot leave the role a query runs as."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
from collections.abc import Sequence
from typing import Any

from sqlalchemy.ext.asyncio import AsyncEngine

from datawell.tools.checker.allowed import ARRAY_AGG_FUNCTION, CAPPED_FUNCTION, STRING_AGG_FUNCTION
from datawell.tools.sandbox import Fetched, Limits, Refusal, Statement, Turns, collect

log = logging.getLogger(__name__)

SET_CONFIG = "pg_catalog.set_config(text, text, boolean)"
GRACE = 1.0  # seconds a statement may run past its time limit before its backend is stopped
ACTIVE = "SELECT state = 'active' FROM pg_catalog.pg_stat_activity WHERE pid = $1"
# Run once per database at start. The catalogues list every tenant's tables, columns and roles;
# the planner and executor read them without privilege checks, so queries work without them.
_CLOSE_HATCHES = (
    f"REVOKE EXECUTE ON FUNCTION {SET_CONFIG} FROM PUBLIC",
    "REVOKE SELECT ON ALL TABLES IN SCHEMA pg_catalog, information_schema FROM PUBLIC",
)


def value_caps(schema: str, most: int) -> str:
    """The functions `checker.dialects.cap_growing_values` calls, in the service's schema (on
    the query roles' search path; PUBLIC may execute a new function): each refuses a value of
    more than `most` bytes with program_limit_exceeded, which `_refusal` reads as a size limit."""
    s = f'"{schema}"'
    refuse = f"RAISE EXCEPTION 'a value is longer than {most} bytes' USING ERRCODE = 'program_limit_exceeded'"
    return f"""
CREATE OR REPLACE FUNCTION {s}.{CAPPED_FUNCTION}(value text) RETURNS text
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
BEGIN IF octet_length(value) > {most} THEN {refuse}; END IF; RETURN value; END $$;
CREATE OR REPLACE FUNCTION {s}.{CAPPED_FUNCTION}(value anyarray) RETURNS anyarray
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
BEGIN IF pg_column_size(value) > {most} THEN {refuse}; END IF; RETURN value; END $$;
CREATE OR REPLACE FUNCTION {s}.{STRING_AGG_FUNCTION}_step(state text, value text, separator text) RETURNS text
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
BEGIN
  IF value IS NULL THEN RETURN state; END IF;
  state := CASE WHEN state IS NULL THEN value ELSE state || coalesce(separator, '') || value END;
  IF octet_length(state) > {most} THEN {refuse}; END IF;
  RETURN state;
END $$;
CREATE OR REPLACE AGGREGATE {s}.{STRING_AGG_FUNCTION}(text, text) (SFUNC = {s}.{STRING_AGG_FUNCTION}_step, STYPE = text);
CREATE OR REPLACE FUNCTION {s}.{ARRAY_AGG_FUNCTION}_step(state anycompatiblearray, value anycompatible)
RETURNS anycompatiblearray LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
BEGIN
  state := array_append(state, value);
  IF pg_column_size(state) > {most} THEN {refuse}; END IF;
  RETURN state;
END $$;
CREATE OR REPLACE AGGREGATE {s}.{ARRAY_AGG_FUNCTION}(anycompatible)
  (SFUNC = {s}.{ARRAY_AGG_FUNCTION}_step, STYPE = anycompatiblearray);
"""


class PostgresSandbox:
    def __init__(self, engine: AsyncEngine, limits: Limits) -> None:
        self.engine = engine
        self.limits = limits
        self.roles: dict[tuple[str, ...], str] = {}
        self.schema = ""
        self.prefix = ""
        self.superuser = False
        self.turns = Turns(limits.concurrency)

    async def start(self) -> None:
        """Check the service's role can build the wall, and close the set_config hatch."""
        async with self.engine.connect() as connection:
            pg: Any = (await connection.get_raw_connection()).driver_connection
            me = await pg.fetchrow(
                "SELECT current_user AS name, rolsuper, rolcreaterole, current_schema() AS schema, "
                "current_database() AS database FROM pg_roles WHERE rolname = current_user"
            )
            if not (me["rolsuper"] or me["rolcreaterole"]):
                raise RuntimeError(
                    f"the PostgreSQL role {me['name']!r} cannot create roles, which Datawell needs to run queries "
                    f'with read access to the queried datasets only: ALTER ROLE "{me["name"]}" CREATEROLE'
                )
            hatches = await pg.fetchrow(
                f"SELECT has_function_privilege('public', '{SET_CONFIG}', 'EXECUTE') AS set_config, "
                "has_table_privilege('public', 'pg_catalog.pg_class', 'SELECT') AS catalogs"
            )
            if hatches["set_config"] or hatches["catalogs"]:
                if not me["rolsuper"]:
                    raise RuntimeError(
                        f"in database {me['database']!r} PUBLIC may call set_config() or read the system catalogues, "
                        "so a query could leave its read-only role or list every tenant's tables; as a superuser run "
                        "there once: "
                        + "; ".join(_CLOSE_HATCHES)
                        + f'; GRANT EXECUTE ON FUNCTION {SET_CONFIG} TO "'
                        + me["name"]
                        + '"; GRANT SELECT ON ALL TABLES IN SCHEMA pg_catalog, information_schema TO "'
                        + me["name"]
                        + '"'
                    )
                await pg.execute("; ".join(_CLOSE_HATCHES))
            self.schema = me["schema"]
            self.prefix = role_prefix(me["database"])
            self.superuser = me["rolsuper"]
            async with pg.transaction():  # one service at a time replaces them
                await pg.execute("SELECT pg_advisory_xact_lock(hashtext('datawell value caps'))")
                await pg.execute(value_caps(self.schema, self.limits.row_bytes))

    async def _role(self, tables: Sequence[str]) -> str:
        key = tuple(sorted(set(tables)))
        if key in self.roles:
            return self.roles[key]
        if not self.schema:
            await self.start()
        name = self.prefix + "q_" + hashlib.sha256("\n".join(key).encode()).hexdigest()[:20]
        async with self.engine.connect() as connection:
            pg: Any = (await connection.get_raw_connection()).driver_connection
            async with pg.transaction():
                await _create_role(pg, name)
                for table in key:
                    reader = self.prefix + "r_" + table
                    await _create_role(pg, reader)
                    if not await pg.fetchval(
                        "SELECT has_table_privilege($1, $2, 'SELECT')", reader, f'"{self.schema}"."{table}"'
                    ):
                        await pg.execute(f'GRANT SELECT ON "{self.schema}"."{table}" TO "{reader}"')
                    await pg.execute(f'GRANT "{reader}" TO "{name}"')
                await pg.execute(f'GRANT USAGE ON SCHEMA "{self.schema}" TO "{name}"')
                if not self.superuser:  # SET ROLE needs the session's user to be a member
                    await pg.execute(f'GRANT "{name}" TO CURRENT_USER')
        self.roles[key] = name
        return name

    async def reader_setup(self, tables: Sequence[str]) -> list[str]:
        """What a read-only transaction runs first to read only `tables`, for a process of its
        own (an export): the role and search path a query gets, without the time limit."""
        role = await self._role(tables)
        return [f'SET LOCAL ROLE "{role}"', f'SET LOCAL search_path = pg_catalog, "{self.schema}"']

    async def run(self, statement: Statement) -> Fetched:
        async with self.turns.turn(statement.caller):
            return await self._run(statement)

    async def _run(self, statement: Statement) -> Fetched:
        import asyncpg

        stopped: list[str] = []
        try:
            role = await self._role(statement.tables)
            # temp_file_limit is a superuser's setting: set before the role switch, or by an
            # administrator (docs/query-language.md).
            temp = f"SET LOCAL temp_file_limit = '{self.limits.temp_file_mb}MB'; " if self.superuser else ""
            async with self.engine.connect() as connection:
                pg: Any = (await connection.get_raw_connection()).driver_connection
                watchdog = asyncio.create_task(self._watch(pg.get_server_pid(), statement.seconds, stopped))
                try:
                    # One round trip opens the transaction and sets it up; it is rolled back, never committed.
                    # statement_timeout covers parsing and planning too (they run within the statement).
                    await pg.execute(
                        f'BEGIN READ ONLY; {temp}SET LOCAL ROLE "{role}"; '
                        f"SET LOCAL statement_timeout = {max(1, int(statement.seconds * 1000))}; "
                        f"SET LOCAL work_mem = '{self.limits.work_mem_mb}MB'; "
                        f'SET LOCAL search_path = pg_catalog, "{self.schema}"'
                    )
                    prepared = await pg.prepare(statement.sql)
                    columns = [a.name for a in prepared.get_attributes()]
                    cursor = await prepared.cursor(*statement.parameters)
                    records, cut = await collect(cursor.fetch, self.limits)
                    await pg.execute("ROLLBACK")
                except BaseException:
                    if stopped or pg.is_closed():  # its backend was stopped: never hand it out again
                        await connection.invalidate()
                    else:
                        with contextlib.suppress(Exception):
                            await pg.execute("ROLLBACK")
                    raise
                finally:
                    watchdog.cancel()
            return Fetched(columns, records, cut)
        except asyncpg.PostgresError as exc:
            raise _refusal(exc) from None
        except (asyncpg.InterfaceError, OSError) as exc:
            if stopped:
                raise Refusal(f"the query was stopped after {statement.seconds:g} s", "time") from None
            raise Refusal(f"the connection to the database failed ({type(exc).__name__})") from None

    async def _watch(self, pid: int, seconds: float, stopped: list[str]) -> None:
        """The backend running a statement, stopped if it is still at work `GRACE` seconds past
        its time limit: statement_timeout is only read where PostgreSQL checks for interrupts,
        which some planning and some functions do not. Cancelled first, then terminated, and
        each step confirmed from another connection; a backend that outlives both is logged."""
        await asyncio.sleep(seconds + GRACE)
        async with self.engine.connect() as connection:
            admin: Any = (await connection.get_raw_connection()).driver_connection
            stopped.append("cancel")
            await admin.fetchval("SELECT pg_cancel_backend($1)", pid)
            for _ in range(int(GRACE / 0.1)):
                await asyncio.sleep(0.1)
                if not await admin.fetchval(ACTIVE, pid):
                    return
            stopped.append("terminate")
            if not await admin.fetchval("SELECT pg_terminate_backend($1, $2)", pid, int(GRACE * 1000)):
                log.error("PostgreSQL backend %d ran past its query's time limit and could not be stopped", pid)

    async def close(self) -> None:
        return None


async def _create_role(pg: Any, name: str) -> None:
    """CREATE ROLE unless it exists (PostgreSQL 15 has no IF NOT EXISTS for roles)."""
    await pg.execute(
        f'DO $$ BEGIN CREATE ROLE "{name}" NOLOGIN; EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL; END $$'
    )


def role_prefix(database: str) -> str:
    """Roles are cluster-wide: each database's query roles carry a prefix of its own."""
    return "dw" + hashlib.sha256(database.encode()).hexdigest()[:8]


async def drop_roles(admin: Any, database: str) -> None:
    """Drop a (dropped) database's query roles; for tests and for removing a deployment."""
    prefix = role_prefix(database)
    names = await admin.fetch("SELECT rolname FROM pg_roles WHERE starts_with(rolname, $1)", prefix)
    for (name,) in sorted(names, key=lambda r: not r[0].startswith(prefix + "q_")):
        await admin.execute(f'DROP ROLE IF EXISTS "{name}"')


def _refusal(exc: Exception) -> Refusal:
    message = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    lowered = message.lower()
    if "statement timeout" in lowered:
        return Refusal(message, "time")
    if (
        "out of memory" in lowered
        or "a value is longer than" in lowered
        or "invalid memory alloc" in lowered
        or "temp_file_limit" in lowered
    ):
        return Refusal(message, "size")
    return Refusal(message)
