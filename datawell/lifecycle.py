"""A dataset's whole life after creation: its description and schema changed, renamed (or its
namespace renamed), cleared, deleted. Each takes the namespace's write rule and leaves no trace of the
old state in any store: rows, vectors, links, uploaded objects, verified examples, attempts.

Metadata changes commit first, in one transaction (so a deleted dataset's name is free at
once and nothing can read it any more); the stores outside that transaction (the row table,
vectors, objects) are cleaned after it, by what the transaction found."""

from __future__ import annotations

from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy import delete, func, or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession
from sqlglot import exp

from datawell.client.models import Deleted
from datawell.errors import Conflict, InvalidInput, QueryError, SubError
from datawell.ontology.links import bump_version, remove_dataset_links
from datawell.storage import hints
from datawell.storage.access import NamespaceRef, Permission, authorize, find_namespace
from datawell.storage.datasets import DatasetRef, check_schema, find_dataset, get_dataset
from datawell.storage.db import Database, has_table
from datawell.storage.ingestions import cancel_active
from datawell.storage.objects import ObjectStore
from datawell.storage.pgvector import PgVectorStore
from datawell.storage.row_tables import column_type, stage_table, staging_name
from datawell.storage.rows import RowStore
from datawell.storage.tables import Dataset, Ingestion, Link, Namespace, Upload, User, VerifiedExample
from datawell.storage.users import check_name
from datawell.storage.vectors import FIELDS, ROWS, VectorStore
from datawell.tools.checker import QL_DIALECT, TableRef, parse


@dataclass(frozen=True)
class Stores:
    """Where a dataset keeps anything."""

    db: Database
    rows: RowStore
    vectors: VectorStore
    objects: ObjectStore


async def delete_dataset(stores: Stores, user: User, owner: str, namespace: str, name: str) -> Deleted:
    """Delete the dataset and everything of it; its name is free when this returns."""
    async with stores.db.session() as session:
        target = await _writable(session, user, owner, namespace, name)
        record = target.record
        ended = await cancel_active(session, record.id, f"ended: {user.username} deleted the dataset")
        attempts = list((await session.execute(select(Ingestion).where(Ingestion.dataset_id == record.id))).scalars())
        uploads = list((await session.execute(select(Upload).where(Upload.dataset_id == record.id))).scalars())
        examples = await _rewrite_examples(session, target, None)
        links = await remove_dataset_links(session, record.id)
        await session.execute(delete(Ingestion).where(Ingestion.dataset_id == record.id))
        await session.execute(delete(Upload).where(Upload.dataset_id == record.id))
        await session.delete(record)
    rows = await stores.rows.count(record)
    vectors = await _drop_tables(stores, record, [a.id for a in attempts])
    objects = 0
    for key in dict.fromkeys([a.object_key for a in attempts] + [u.key for u in uploads]):
        if key:
            await stores.objects.delete(key)
            objects += 1
    for upload in uploads:
        if upload.status in ("OPEN", "COMPLETING"):
            await stores.objects.abort_multipart(upload.key, upload.id)
    return Deleted(
        rows_deleted=rows,
        vectors_deleted=vectors,
        links_deleted=links,
        uploads_deleted=len(uploads),
        objects_deleted=objects,
        examples_deleted=examples,
        ingestions_ended=ended,
    )


async def clear_dataset(stores: Stores, record: Dataset) -> tuple[int, int]:
    """Delete the dataset's rows and vectors: how many of each. Vectors in the rows' own
    database (pgvector) go in the rows' transaction."""
    rows, vectors = stores.rows, stores.vectors
    if isinstance(vectors, PgVectorStore) and vectors.engine is rows.engine:
        async with rows.engine.begin() as connection:
            cleared = await rows.clear(record, connection)
            dropped = await vectors.drop(connection, ROWS, record.id) + await vectors.drop(
                connection, FIELDS, record.id
            )
        return cleared, dropped
    cleared = await rows.clear(record)
    return cleared, await vectors.delete(ROWS, record.id) + await vectors.delete(FIELDS, record.id)


async def rename_dataset(stores: Stores, user: User, owner: str, namespace: str, name: str, new: str) -> DatasetRef:
    """Rename the dataset; its links and the verified examples that name it follow."""
    check_name("dataset", new)
    async with stores.db.session() as session:
        target = await _writable(session, user, owner, namespace, name)
        if new != name and await find_dataset(session, target.namespace, new) is not None:
            raise Conflict(f"dataset {target.namespace}/{new} already exists")
        record = target.record
        await _rewrite_examples(session, target, new)  # before the record takes its new name
        record.name = new
        old_prefix, new_prefix = f"{namespace}/{name}.", f"{namespace}/{new}."
        for column, dataset_column in (
            (Link.origin, Link.origin_dataset_id),
            (Link.destination, Link.destination_dataset_id),
        ):
            await _replace_prefix(session, column, old_prefix, new_prefix, dataset_column == record.id)
        await _bump_links(session, record.id)
        await session.flush()
        return DatasetRef(record, target.namespace)


async def rename_namespace(stores: Stores, user: User, owner: str, namespace: str, new: str) -> NamespaceRef:
    """Rename the namespace; its links and the verified examples that name it follow."""
    check_name("namespace", new)
    async with stores.db.session() as session:
        ref = await authorize(session, user, owner, namespace, Permission.WRITE)
        if new != namespace and await find_namespace(session, owner, new) is not None:
            raise Conflict(f"namespace {owner}/{new} already exists")
        await session.execute(update(Namespace).where(Namespace.id == ref.id).values(name=new))
        for column in (Link.origin, Link.destination):
            await _replace_prefix(session, column, f"{namespace}/", f"{new}/", Link.namespace_id == ref.id)
        await bump_version(session, ref.id)
        renamed = NamespaceRef(ref.id, owner, new)
        datasets = (await session.execute(select(Dataset).where(Dataset.namespace_id == ref.id))).scalars()
        for record in datasets:
            await _rewrite_examples(session, DatasetRef(record, ref), record.name, moved_to=renamed)
        return renamed


async def update_definition(
    stores: Stores,
    user: User,
    owner: str,
    namespace: str,
    name: str,
    description: str | None,
    schema: dict[str, str] | None,
    *,
    force: bool = False,
) -> DatasetRef:
    """Change the description and/or the schema. An added field is a new nullable column; a
    removed one is refused (409) while a row holds a value in it, unless `force`."""
    if schema is not None:
        check_schema(schema)
    async with stores.db.session() as session:
        target = await _writable(session, user, owner, namespace, name)
        record = target.record
        if description is not None:
            record.description = description
        if schema is not None and schema != record.schema_definition:
            await _change_columns(stores.rows, record, schema, force)
            record.field_types = {f: t for f, t in record.field_types.items() if f in schema}
            record.schema_definition = dict(schema)
        await session.flush()
        result = DatasetRef(record, target.namespace)
    if schema is not None:
        await hints.refresh(stores.db, stores.rows, record)
    return result


async def _writable(session: AsyncSession, user: User, owner: str, namespace: str, name: str) -> DatasetRef:
    ref = await authorize(session, user, owner, namespace, Permission.WRITE)
    return await get_dataset(session, ref, name)


async def _change_columns(rows: RowStore, record: Dataset, schema: dict[str, str], force: bool) -> None:
    current = {f.lower(): f for f in record.schema_definition}
    wanted = {f.lower(): f for f in schema}
    renamed = [f"{current[k]} -> {wanted[k]}" for k in current.keys() & wanted.keys() if current[k] != wanted[k]]
    if renamed:
        message = f"a field's case cannot change (columns ignore case): {', '.join(sorted(renamed))}"
        raise InvalidInput("the dataset schema is invalid", sub_errors=[SubError("field_case_changed", message)])
    added = [wanted[k] for k in wanted.keys() - current.keys()]
    removed = [current[k] for k in current.keys() - wanted.keys()]
    table = rows.table(record)
    async with rows.engine.begin() as connection:
        if not await has_table(connection, table.name):
            return
        used = {}
        for field in removed:
            count = await connection.scalar(select(func.count()).select_from(table).where(table.c[field].is_not(None)))
            if count:
                used[field] = int(count)
        if used and not force:
            details = [
                SubError("field_in_use", f"schemaDefinition: {f!r} has values in {n:,} rows") for f, n in used.items()
            ]
            raise Conflict(
                "removing these fields would delete values; send force=true to remove them anyway", sub_errors=details
            )
        for field in removed:
            await connection.exec_driver_sql(f'ALTER TABLE "{table.name}" DROP COLUMN "{field}"')
        for field in added:
            kind = column_type("text").compile(dialect=connection.dialect)
            await connection.exec_driver_sql(f'ALTER TABLE "{table.name}" ADD COLUMN "{field}" {kind}')


async def _drop_tables(stores: Stores, record: Dataset, attempts: list[str]) -> int:
    """The dataset's row table, any staging table its attempts left, and its vectors: how many
    vectors. Vectors in the rows' own database (pgvector) go in the same transaction."""
    rows, vectors = stores.rows, stores.vectors
    tables = [rows.table(record)] + [stage_table(staging_name(a), {}) for a in attempts]
    async with rows.engine.begin() as connection:
        for table in tables:
            await connection.run_sync(table.drop, checkfirst=True)
        if isinstance(vectors, PgVectorStore) and vectors.engine is rows.engine:
            return await vectors.drop(connection, ROWS, record.id) + await vectors.drop(connection, FIELDS, record.id)
    return await vectors.delete(ROWS, record.id) + await vectors.delete(FIELDS, record.id)


async def _replace_prefix(
    session: AsyncSession, column: sa.orm.InstrumentedAttribute[str], old: str, new: str, where: sa.ColumnElement[bool]
) -> None:
    """`old` at the start of `column` becomes `new`, in the rows `where` picks."""
    await session.execute(
        update(Link)
        .where(where, column.startswith(old, autoescape=True))
        .values({column: new + func.substr(column, len(old) + 1)})
        .execution_options(synchronize_session=False)
    )


async def _bump_links(session: AsyncSession, dataset_id: str) -> None:
    found = await session.execute(
        select(Link.namespace_id)
        .where(or_(Link.origin_dataset_id == dataset_id, Link.destination_dataset_id == dataset_id))
        .distinct()
    )
    for namespace_id in list(found.scalars()):
        await bump_version(session, namespace_id)


async def _rewrite_examples(
    session: AsyncSession, target: DatasetRef, new: str | None, *, moved_to: NamespaceRef | None = None
) -> int:
    """The verified examples whose query names the dataset: removed (`new` None) or made to name
    it `new` (in `moved_to`, a renamed namespace). Their queries are parsed, so a word that only
    looks like the name (in a string, a column) is left alone. How many."""
    name, namespace = target.name, target.namespace
    candidates = (
        await session.execute(select(VerifiedExample).where(VerifiedExample.query.contains(name, autoescape=True)))
    ).scalars()
    touched = 0
    for example in list(candidates):
        # A namespace's new name changes only the queries that spell it out.
        local = example.namespace_id == namespace.id and moved_to is None
        named = _names(example.query, namespace, name, local)
        if not named:
            continue
        touched += 1
        if new is None:
            await session.delete(example)
            continue
        for table in named:
            qualified = table.args.get("db") is not None
            table.set("this", exp.to_identifier(new, quoted=True))
            if qualified and moved_to is not None:
                table.set("db", exp.to_identifier(moved_to.name, quoted=True))
        example.query = named[0].root().sql(dialect=QL_DIALECT)
    return touched


def _names(query: str, namespace: NamespaceRef, name: str, local: bool) -> list[exp.Table]:
    """The table nodes of `query` naming dataset `name` of `namespace` (`local`: bare names count)."""
    try:
        parsed = parse(query)
    except QueryError:
        return []
    return [table for table, ref in parsed.tables if _means(ref, namespace, name, local)]


def _means(ref: TableRef, namespace: NamespaceRef, name: str, local: bool) -> bool:
    if ref.name != name:
        return False
    if ref.owner is None and ref.namespace is None:
        return local
    return ref.owner == namespace.owner and ref.namespace == namespace.name
