"""A hostile-query corpus: each query is run through the real run path (`QueryTools.run`) on
every store, once with the checker and once with the checker's table and allow-list checks
switched off (`CheckerOff`, a test-only subclass), so the second wall must hold by itself.
Every query must be refused, or return only the caller's data within the limits.

The caller is alice (namespace sales, dataset orders). Bob's dataset `vault`, a token and the
row tables' own names are what an attacker aims at; and, with pgvector (a third database),
the vector tables beside the rows, whose payloads hold the rows' text."""

from __future__ import annotations

import json
import time
import uuid
from datetime import UTC, datetime, timedelta

import pytest
import sqlglot
from sqlglot import exp

from datawell.errors import Forbidden, QueryError
from datawell.services import Services
from datawell.storage.access import NamespaceRef
from datawell.storage.datasets import get_dataset
from datawell.storage.tables import Dataset, Token, User
from datawell.storage.vectors import ROWS, Point
from datawell.tools.checker import TARGETS, CompiledQuery, TableRef
from datawell.tools.ql import QueryTools
from datawell.tools.sandbox import Limits
from tests.pgvector_server import WITH_PGVECTOR
from tests.tools.conftest import World, load

pytestmark = pytest.mark.parametrize("database_url", WITH_PGVECTOR, indirect=True)

SECONDS = 1.0
ROW_BYTES = 64 << 10
RESULT_BYTES = 256 << 10
ROW_CAP = 50
SECRETS = ("BOBSECRET", "TOKENSECRET", "ds_", "stg_", "CREATE TABLE", '"bob"', "crm")

CORPUS = [
    # DDL and DML, alone and hidden in a CTE
    "CREATE TABLE x (a int)", "DROP TABLE orders", "DROP TABLE {bob}", "INSERT INTO orders (order_id) VALUES (9)",
    "UPDATE orders SET total = 0", "DELETE FROM orders", "DELETE FROM {bob}", "ALTER TABLE orders ADD COLUMN x int",
    "TRUNCATE orders", "CREATE TABLE t AS SELECT * FROM {bob}", "WITH gone AS (DELETE FROM orders RETURNING *) SELECT * FROM gone",
    "SELECT * INTO copy FROM orders", "GRANT SELECT ON {bob} TO PUBLIC", "CREATE ROLE evil SUPERUSER", "VACUUM",
    "SELECT * FROM orders FOR UPDATE",
    # several statements
    "SELECT 1; DROP TABLE orders", "SELECT 1; SELECT * FROM tokens", "SELECT * FROM orders; SELECT * FROM {bob}",
    "BEGIN; SELECT * FROM tokens; COMMIT", "SET ROLE postgres; SELECT * FROM tokens", "RESET ROLE; SELECT * FROM users",
    # attach, pragma, extensions
    "ATTACH DATABASE '{metadata}' AS m", "ATTACH '{metadata}' AS m", "SELECT * FROM m.tokens", "PRAGMA query_only = 0",
    "PRAGMA table_info(tokens)", "PRAGMA database_list", "SELECT * FROM pragma_table_info('tokens')",
    "SELECT load_extension('/tmp/evil')", "SELECT * FROM pragma_database_list",
    # system catalogues
    "SELECT * FROM sqlite_master", "SELECT name, sql FROM sqlite_schema", "SELECT * FROM sqlite_temp_master",
    "SELECT * FROM main.sqlite_master", "SELECT COUNT(*) AS n FROM sqlite_master", "SELECT * FROM pg_catalog.pg_tables",
    "SELECT * FROM pg_tables", "SELECT * FROM pg_shadow", "SELECT * FROM pg_authid", "SELECT * FROM pg_stat_activity",
    "SELECT * FROM information_schema.tables", "SELECT relname FROM pg_class", "SELECT * FROM pg_settings",
    "SELECT current_setting('data_directory')", "SELECT * FROM pg_roles",
    # physical names
    "SELECT * FROM {bob}", 'SELECT * FROM "{bob}"', "SELECT * FROM main.{bob}", "SELECT * FROM public.{bob}",
    "SELECT * FROM {mine}", 'SELECT * FROM "{BOB}"', "SELECT * FROM orders JOIN {bob} ON TRUE",
    "SELECT * FROM orders WHERE order_id IN (SELECT 1 FROM {bob})",
    # metadata
    "SELECT * FROM tokens", "SELECT * FROM users", "SELECT * FROM datasets", "SELECT * FROM grants",
    "SELECT * FROM namespaces", "SELECT * FROM checkpoints", "SELECT * FROM checkpoint_blobs", "SELECT * FROM writes",
    "SELECT * FROM alembic_version", "SELECT * FROM conversations", "SELECT * FROM public.tokens",
    # another tenant, spelled every way
    "SELECT * FROM bob.crm.vault", 'SELECT * FROM "bob"."crm"."vault"', "SELECT * FROM BOB.CRM.VAULT",
    "SELECT * FROM crm.vault", "SELECT * FROM vault", 'SELECT * FROM "bob.crm.vault"', 'SELECT * FROM bob.crm."VAULT"',
    "SELECT * FROM ｂｏｂ.crm.vault", "SELECT * FROM bob.crm.vаult", "SELECT * FROM bob . crm . vault",
    "SELECT * FROM bob.crm.vault AS orders", "SELECT * FROM orders WHERE EXISTS (SELECT 1 FROM bob.crm.vault)",
    "SELECT code FROM bob.crm.vault UNION SELECT customer FROM orders",
    # comments
    "SELECT 1 /* ; DROP TABLE orders */", "SELECT 1 -- ; DELETE FROM orders",
    "SELECT * FROM/**/tokens", "SELECT 1 /* /* */ ; SELECT * FROM tokens; /* */ */", "SELECT * FROM -- x\n tokens",
    "SELECT customer FROM orders /* */ UNION ALL SELECT id FROM /**/ tokens",
    # CTE shadowing in every scope (the first rows are issue 12's attacks)
    "SELECT * FROM tokens WHERE 1 IN (WITH tokens AS (SELECT 1 AS x) SELECT x FROM tokens)",
    "SELECT * FROM users WHERE 1 IN (WITH users AS (SELECT 1 AS x) SELECT x FROM users)",
    "SELECT * FROM sqlite_master WHERE 1 IN (WITH sqlite_master AS (SELECT 1 AS x) SELECT x FROM sqlite_master)",
    "SELECT * FROM {bob} WHERE 1 IN (WITH {bob} AS (SELECT 1 AS x) SELECT x FROM {bob})",
    "SELECT * FROM pg_shadow WHERE 1 IN (WITH pg_shadow AS (SELECT 1 AS x) SELECT x FROM pg_shadow)",
    "SELECT * FROM pg_stat_activity WHERE 1 IN (WITH pg_stat_activity AS (SELECT 1 AS x) SELECT x FROM pg_stat_activity)",
    "SELECT * FROM checkpoint_blobs WHERE 1 IN (WITH checkpoint_blobs AS (SELECT 1 AS x) SELECT x FROM checkpoint_blobs)",
    "SELECT * FROM pg_tables WHERE 1 IN (WITH pg_tables AS (SELECT 1 AS x) SELECT x FROM pg_tables)",
    'WITH "{BOB}" AS (SELECT 1 AS x) SELECT * FROM {bob}', 'WITH "TOKENS" AS (SELECT 1 AS x) SELECT * FROM tokens',
    'WITH "Vault" AS (SELECT 1 AS x) SELECT * FROM vault',
    "WITH tokens AS (SELECT * FROM tokens) SELECT * FROM tokens", "WITH x AS (SELECT * FROM x) SELECT * FROM x",
    "WITH a AS (SELECT * FROM tokens), tokens AS (SELECT 1 AS x) SELECT * FROM a",
    "WITH a AS (SELECT * FROM {bob}), {bob} AS (SELECT 1 AS x) SELECT * FROM a",
    "WITH RECURSIVE a AS (SELECT * FROM b), b AS (SELECT 1 AS x) SELECT * FROM a",
    "SELECT * FROM (WITH tokens AS (SELECT 1 AS x) SELECT * FROM tokens) t, tokens",
    "SELECT (WITH users AS (SELECT 1 AS x) SELECT x FROM users) AS a, * FROM users",
    "SELECT x FROM (WITH tokens AS (SELECT 1 AS x) SELECT x FROM tokens) a UNION ALL SELECT id FROM tokens",
    "WITH a AS (WITH tokens AS (SELECT 1 AS x) SELECT * FROM tokens) SELECT * FROM a, tokens",
    "WITH orders AS (SELECT * FROM {bob}) SELECT * FROM orders", "WITH orders AS (SELECT 1 AS x) SELECT * FROM orders",
    "SELECT * FROM users WHERE EXISTS (WITH users AS (SELECT 1 AS x) SELECT * FROM users)",
    "WITH RECURSIVE tokens(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM tokens WHERE x < 3) SELECT * FROM tokens",
    "SELECT COUNT(*) FROM orders HAVING 1 IN (WITH tokens AS (SELECT 1 AS x) SELECT x FROM tokens) AND (SELECT COUNT(*) FROM tokens) > 0",
    "SELECT * FROM orders, LATERAL (SELECT * FROM tokens) t",
    "WITH v AS (SELECT 1 AS x) SELECT * FROM v, vault", "WITH a AS (SELECT 1 AS x), b AS (SELECT * FROM a) SELECT * FROM b",
    # recursion, size and time bombs
    "WITH RECURSIVE r(s) AS (SELECT 'x' UNION ALL SELECT s || s FROM r) SELECT length(s) AS l FROM r LIMIT 30",
    "WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r) SELECT COUNT(*) AS n FROM r",
    "WITH RECURSIVE r(s) AS (SELECT note FROM orders UNION ALL SELECT s || s FROM r) SELECT MAX(length(s)) AS m FROM r",
    "SELECT lpad('a', 50000000, 'b') AS big FROM orders", "SELECT repeat('x', 100000000) AS big",
    "SELECT zeroblob(1000000000) AS z", "SELECT randomblob(1000000000) AS z",
    "SELECT COUNT(*) AS n FROM orders a, orders b, orders c, orders d, orders e, orders f, orders g, orders h, orders i, orders j",
    "SELECT string_agg(a.note, ',') AS s FROM orders a, orders b, orders c, orders d, orders e, orders f, orders g",
    "SELECT a.note || b.note || c.note AS s FROM orders a, orders b, orders c, orders d, orders e",
    # files, sleeping, other ways out
    "SELECT pg_read_file('/etc/passwd')", "SELECT pg_ls_dir('.')", "SELECT pg_sleep(30)", "SELECT readfile('/etc/passwd')",
    "SELECT writefile('/tmp/isolation-x/w', 'y')", "SELECT lo_import('/etc/passwd')", "COPY tokens TO '/tmp/isolation-x/t'",
    "SELECT * FROM read_csv('/etc/passwd')", "SELECT query_to_xml('select * from tokens', true, false, '') AS x",
    "SELECT set_config('role', 'postgres', true) AS r, query_to_xml('select * from tokens', true, false, '') AS x",
    "SELECT set_config('role', 'none', true) AS r, query_to_xml('select * from {bob}', true, false, '') AS x",
    "SELECT table_to_xml('tokens', true, false, '') AS x", "SELECT pg_sleep(5) FROM orders", "SELECT sqlite_version() AS v",
    "SELECT fts3_tokenizer('simple') AS t", "SELECT * FROM generate_series(1, 100000000)",
    # injection inside semantic()
    "SELECT * FROM orders ORDER BY semantic('x''); DROP TABLE orders; --')",
    "SELECT * FROM orders WHERE semantic('a'') UNION SELECT * FROM tokens --') > 0",
    "SELECT semantic(tokens, 'x') AS s FROM orders", "SELECT * FROM orders WHERE semantic((SELECT id FROM tokens), 'x') > 0",
    "SELECT semantic('x', (SELECT * FROM users)) AS s FROM orders", "SELECT semantic('x') AS s FROM tokens",
    # the vectors beside the rows (pgvector): their payloads hold the rows' text
    "SELECT payload::text AS p FROM vectors_rows_hashing", "SELECT * FROM public.vectors_rows_hashing",
    "SELECT v.payload ->> 'text' AS t FROM orders o JOIN vectors_rows_hashing v ON v.id = o.__id",
]  # fmt: skip


class CheckerOff(QueryTools):
    """TEST ONLY: the checker's table and allow-list checks switched off. Names of the caller's
    datasets become their row tables (as a checker with a bug would still resolve them), and
    everything else is left as written, so only the sandbox stands between the query and the
    data. Not reachable from settings or requests: it exists only in this file."""

    async def prepare(self, user: User, namespace: NamespaceRef, query: str) -> CompiledQuery:
        target = TARGETS[self.rows.dialect]
        try:
            statements = [s for s in sqlglot.parse(query, read="postgres") if s is not None]
        except sqlglot.errors.SqlglotError:
            return CompiledQuery(query, query, target, [], [], None)
        read = {}
        for statement in statements:
            for table in list(statement.find_all(exp.Table)):
                ref = TableRef(table.catalog or None, table.db or None, table.name)
                try:
                    info = (await self.resolve(user, namespace, [ref]))[ref]
                except QueryError:
                    continue
                read[info.physical] = info
                alias = table.args.get("alias") or exp.TableAlias(this=exp.to_identifier(table.name))
                table.replace(exp.Table(this=exp.to_identifier(info.physical, quoted=True), alias=alias))
        sql = "; ".join(s.sql(dialect=target) for s in statements)
        return CompiledQuery(query, sql or query, target, [], list(read.values()), None)


def tools(world: World, kind: type[QueryTools]) -> QueryTools:
    query = world.query
    limits = Limits(SECONDS, row_bytes=ROW_BYTES, result_bytes=RESULT_BYTES)
    return kind(query.db, query.rows, query.vectors, query.embedder, row_cap=ROW_CAP, limits=limits)


async def physical(services: Services, namespace: NamespaceRef, name: str) -> str:
    return (await get_dataset_of(services, namespace, name)).table_name


async def get_dataset_of(services: Services, namespace: NamespaceRef, name: str) -> Dataset:
    async with services.db.session() as session:
        return (await get_dataset(session, namespace, name)).record


async def corpus_failures(world: World, services: Services, kind: type[QueryTools]) -> list[str]:
    await load(
        services, world.crm, world.bob, "vault", {"code": "a secret"}, {"code": "text"}, [{"code": "BOBSECRET-1"}]
    )
    vault_id = (await get_dataset_of(services, world.crm, "vault")).id
    [vector] = await services.embedder.embed(["BOBSECRET-1"])
    await services.vectors.upsert(ROWS, vault_id, [Point(str(uuid.uuid4()), vector, {"text": "BOBSECRET-1"})])
    async with services.db.session() as session:
        session.add(
            Token(user_id=world.bob.id, description="TOKENSECRET", expires_at=datetime.now(UTC) + timedelta(days=1))
        )
    bob, mine = await physical(services, world.crm, "vault"), await physical(services, world.sales, "orders")
    metadata = services.settings.resolved_database_url.rsplit("///", 1)[-1]
    runner = tools(world, kind)
    failures = []
    try:
        for template in CORPUS:
            sql = template.replace("{bob}", bob).replace("{BOB}", bob.upper()).replace("{mine}", mine)
            sql = sql.replace("{metadata}", metadata)
            started = time.monotonic()
            try:
                result = await runner.run(world.alice, world.sales, sql)
            except (QueryError, Forbidden):
                outcome = None
            else:
                outcome = json.dumps(result.rows, default=str)
            took = time.monotonic() - started
            if outcome is not None and any(secret in outcome for secret in SECRETS):
                failures.append(f"LEAK {template}: {outcome[:200]}")
            elif outcome is not None and (len(outcome) > 2 * RESULT_BYTES or len(result.rows) > ROW_CAP):
                failures.append(f"SIZE {template}: {len(outcome):,} bytes")
            elif took > SECONDS + 4:
                failures.append(f"TIME {template}: {took:.1f} s")
    finally:
        await runner.close() if hasattr(runner, "close") else None
    # nothing was changed
    check = await world.query.run(world.alice, world.sales, "SELECT COUNT(*) AS n FROM orders")
    if check.rows[0]["n"] != 5:
        failures.append("orders changed")
    return failures


async def test_the_corpus_is_refused_or_answered_with_the_callers_data(world: World, services: Services) -> None:
    assert len(CORPUS) >= 100
    failures = await corpus_failures(world, services, QueryTools)
    assert not failures, f"{len(failures)} of {len(CORPUS)} hostile queries got through:\n" + "\n".join(failures)


async def test_the_second_wall_holds_with_the_checker_off(world: World, services: Services) -> None:
    failures = await corpus_failures(world, services, CheckerOff)
    assert not failures, f"{len(failures)} of {len(CORPUS)} hostile queries got through:\n" + "\n".join(failures)
