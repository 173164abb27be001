"""Dataset records: coordinate, description, schema, inferred field types, row table."""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from datawell.errors import Conflict, InvalidInput, NotFound, SubError
from datawell.storage.access import NamespaceRef, Permission, access_query, granted
from datawell.storage.tables import Dataset, Namespace, User
from datawell.storage.users import check_name

# As the OpenAPI document states it (ECMA 262); `fullmatch` below adds nothing but the
# refusal of a trailing newline that `$` lets through.
FIELD_PATTERN_TEXT = r"^(?!__)[A-Za-z_][A-Za-z0-9_]{0,62}$"
FIELD_PATTERN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,62}$")
MAX_FIELDS = 500


@dataclass(frozen=True)
class DatasetRef:
    """A dataset with the namespace it lives in."""

    record: Dataset
    namespace: NamespaceRef

    @property
    def name(self) -> str:
        return self.record.name


def check_schema(schema: dict[str, str]) -> None:
    """Field names must be usable as column names; say which are not and why."""
    problems: list[SubError] = []
    seen: dict[str, str] = {}
    if not schema:
        problems.append(SubError("empty_schema", "schemaDefinition: give at least one field"))
    if len(schema) > MAX_FIELDS:
        problems.append(SubError("too_many_fields", f"schemaDefinition: at most {MAX_FIELDS} fields"))
    for name in schema:
        where = f"schemaDefinition.{name}"
        if not FIELD_PATTERN.fullmatch(name):
            problems.append(
                SubError(
                    "invalid_field_name",
                    f"{where}: use letters, digits and '_', not starting with a digit, at most 63 characters",
                )
            )
        elif name.startswith("__"):
            problems.append(
                SubError("reserved_field_name", f"{where}: names starting with '__' are reserved for internal fields")
            )
        elif name.lower() in seen:
            problems.append(
                SubError(
                    "duplicate_field_name",
                    f"{where}: same column name as {seen[name.lower()]!r} (names are case-insensitive)",
                )
            )
        seen.setdefault(name.lower(), name)
    if problems:
        raise InvalidInput("the dataset schema is invalid", sub_errors=problems)


async def create_dataset(
    session: AsyncSession, namespace: NamespaceRef, name: str, description: str, schema: dict[str, str], creator: User
) -> DatasetRef:
    check_name("dataset", name)
    check_schema(schema)
    if await find_dataset(session, namespace, name) is not None:
        raise Conflict(f"dataset {namespace}/{name} already exists")
    record = Dataset(
        namespace_id=namespace.id,
        name=name,
        description=description,
        schema_definition=schema,
        table_name=f"ds_{uuid.uuid4().hex[:24]}",
        created_by=creator.id,
    )
    session.add(record)
    await session.flush()
    return DatasetRef(record, namespace)


async def find_dataset(session: AsyncSession, namespace: NamespaceRef, name: str) -> DatasetRef | None:
    record = (
        await session.execute(select(Dataset).where(Dataset.namespace_id == namespace.id, Dataset.name == name))
    ).scalar_one_or_none()
    return None if record is None else DatasetRef(record, namespace)


async def get_dataset(session: AsyncSession, namespace: NamespaceRef, name: str) -> DatasetRef:
    dataset = await find_dataset(session, namespace, name)
    if dataset is None:
        raise NotFound(f"dataset {namespace}/{name} does not exist")
    return dataset


async def readable_datasets(session: AsyncSession, user: User, owner: str, name: str) -> list[DatasetRef]:
    """The datasets of namespace `owner/name` that `user` may read (404, 403 as `authorize`),
    access and data in one query: the commonest read of the API."""
    query = access_query(user, owner, name).add_columns(Dataset)
    rows = (
        await session.execute(query.outerjoin(Dataset, Dataset.namespace_id == Namespace.id).order_by(Dataset.name))
    ).all()
    namespace = granted(user, owner, name, rows[0] if rows else None, Permission.READ)
    return [DatasetRef(row[2], namespace) for row in rows if row[2] is not None]


async def list_datasets(session: AsyncSession, namespace: NamespaceRef) -> list[DatasetRef]:
    rows = await session.execute(select(Dataset).where(Dataset.namespace_id == namespace.id).order_by(Dataset.name))
    return [DatasetRef(record, namespace) for record in rows.scalars()]


async def settle_field_types(session: AsyncSession, dataset_id: str, inferred: dict[str, str]) -> dict[str, str]:
    """The dataset's column types: `inferred` if it has none yet, else the ones it has.
    The dataset row is locked, so two first ingestions running at once agree on one set."""
    query = select(Dataset).where(Dataset.id == dataset_id).execution_options(populate_existing=True)
    if session.get_bind().dialect.name == "postgresql":
        query = query.with_for_update()
    record = (await session.execute(query)).scalar_one()
    if not record.field_types:
        record.field_types = dict(inferred)
    return dict(record.field_types)
