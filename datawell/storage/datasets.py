"""Dataset records: coordinate, description, schema, inferred field types, row table."""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from datawell.errors import Conflict, InvalidInput, NotFound, SubError
from datawell.storage.access import ACCESS_COLUMNS, ACCESS_FROM, NAMED, NamespaceRef, Permission, granted
from datawell.storage.direct import DirectReads, Row, json_value, timestamp
from datawell.storage.tables import Dataset, User
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


def check_schema(schema: dict[str, str], *, allow_empty: bool = False) -> None:
    """Field names must be usable as column names; say which are not and why. A dataset may
    be created without fields (`allow_empty`): its first rows bring them."""
    problems: list[SubError] = []
    seen: dict[str, str] = {}
    if not schema and not allow_empty:
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
    check_schema(schema, allow_empty=True)
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


@dataclass(frozen=True)
class DatasetSummary:
    """A dataset as the API shows it, read past the ORM (`storage.direct`)."""

    id: str
    name: str
    description: str
    schema_definition: dict[str, str]
    field_types: dict[str, str]
    created_at: datetime
    updated_at: datetime


# The API's commonest reads, through the direct read path: the namespace `owner/name` with
# the reader's access (the one access rule's SQL, `storage.access`) and its datasets (all, or
# the one named by a fourth parameter), in one round trip; a namespace without them gives
# one row of nulls.
READABLE_DATASETS = (
    f"SELECT {ACCESS_COLUMNS}, datasets.id, datasets.name, datasets.description,"
    " datasets.schema_definition, datasets.field_types, datasets.created_at, datasets.updated_at"
    f" FROM {ACCESS_FROM}"
    " LEFT JOIN datasets ON datasets.namespace_id = namespaces.id{dataset}"
    f" WHERE {NAMED} ORDER BY datasets.name"
)
DATA = 4  # where a row's dataset columns start
ALL_DATASETS = READABLE_DATASETS.format(dataset="")
ONE_DATASET = READABLE_DATASETS.format(dataset=" AND datasets.name = $4")


async def readable_datasets(
    reads: DirectReads, user: User, owner: str, name: str
) -> tuple[NamespaceRef, list[DatasetSummary]]:
    """The datasets of namespace `owner/name` if `user` may read it (404, 403 as `authorize`)."""
    rows = await reads.fetch(ALL_DATASETS, user.id, owner, name)
    namespace = granted(user, owner, name, rows[0] if rows else None, Permission.READ)
    return namespace, [_summary(row) for row in rows if row[DATA] is not None]


async def readable_dataset(
    reads: DirectReads, user: User, owner: str, name: str, dataset: str
) -> tuple[NamespaceRef, DatasetSummary]:
    """The dataset `owner/name/dataset` if `user` may read it (404, 403 as `authorize`)."""
    rows = await reads.fetch(ONE_DATASET, user.id, owner, name, dataset)
    namespace = granted(user, owner, name, rows[0] if rows else None, Permission.READ)
    if rows[0][DATA] is None:
        raise NotFound(f"dataset {namespace}/{dataset} does not exist")
    return namespace, _summary(rows[0])


def _summary(row: Row) -> DatasetSummary:
    """The dataset columns of a `READABLE_DATASETS` row."""
    id_, name, description, schema, types, created_at, updated_at = row[DATA:]
    return DatasetSummary(
        id_, name, description, json_value(schema), json_value(types), timestamp(created_at), timestamp(updated_at)
    )


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
