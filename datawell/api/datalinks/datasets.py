"""The DataLinks SDK's dataset listings and schemas: `/data`, `/schema/...`, the dataset's
information and sort order."""

from __future__ import annotations

from typing import Literal

from pydantic import Field
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm.attributes import flag_modified
from starlette.requests import Request

from datawell.api.routing import (
    READABLE_DATASET,
    WRITABLE_DATASET,
    Context,
    NamespaceNamed,
    NamespacePath,
    PathModel,
    Router,
    namespace_for,
)
from datawell.api.schemas import ApiModel
from datawell.errors import InvalidInput, NotFound, SubError
from datawell.services import Services
from datawell.storage.access import NamespaceRef, Permission, readable_namespaces
from datawell.storage.datasets import DatasetRef, list_datasets
from datawell.storage.tables import Dataset, User
from datawell.storage.users import check_name, find_user

router = Router("datalinks")


DATASET_PATH = "/data/{username}/{namespace}/{datasetName}"
PRIVATE: Literal["Private"] = "Private"  # DataLinks removed public datasets: every dataset is shared per user


class UserPath(PathModel):
    user: str


class UserNamespacePath(NamespacePath):
    """`/schema/{user}/{namespace}/...`: the user owns the namespace."""

    username: str = Field(alias="user")


class DatasetDescription(ApiModel):
    name: str
    namespace: str
    owner: str
    visibility: Literal["Public", "Private"] = PRIVATE


class DatasetMetadata(ApiModel):
    column_names: list[str]
    row_count: int
    data_description: str | None = None
    schema_definition: dict[str, str] | None = None


class DatasetInfo(ApiModel):
    dataset: DatasetDescription
    metadata: DatasetMetadata


class NamespaceItem(ApiModel):
    name: str
    owner: str


class SortOrder(ApiModel):
    order: list[str] = Field(min_length=1)


def describe(namespace: NamespaceRef, dataset: Dataset) -> DatasetDescription:
    return DatasetDescription(name=dataset.name, namespace=namespace.name, owner=namespace.owner)


async def readable_listing(session: AsyncSession, user: User, namespace: str | None = None) -> list[DatasetDescription]:
    """Every dataset the caller may read, or those of the namespaces named `namespace`."""
    listed: list[DatasetDescription] = []
    for ns in await readable_namespaces(session, user):
        if namespace is None or ns.name == namespace:
            listed += [describe(ns, d.record) for d in await list_datasets(session, ns)]
    return listed


@router.get("/data", list[DatasetDescription])
async def list_all(request: Request, ctx: Context, user: User) -> list[DatasetDescription]:
    """List the datasets the caller may read

    Every dataset of every namespace the caller owns or holds a grant on."""
    async with ctx.services.db.session() as session:
        return await readable_listing(session, user)


@router.get("/data/{namespace}", list[DatasetDescription], errors=(422,), params=NamespaceNamed)
async def list_named(request: Request, ctx: Context, user: User, path: NamespaceNamed) -> list[DatasetDescription]:
    """List the datasets of namespaces of a name

    The datasets of the caller's namespaces, and namespaces shared with the caller, of this name."""
    check_name("namespace", path.namespace)
    async with ctx.services.db.session() as session:
        return await readable_listing(session, user, path.namespace)


@router.get("/schema/datasets/all", list[DatasetDescription])
async def schema_all(request: Request, ctx: Context, user: User) -> list[DatasetDescription]:
    """List the datasets the caller may read

    As `GET /data`."""
    return await list_all(request, ctx, user)


@router.get(
    "/schema/{user}/{namespace}/datasets",
    list[DatasetDescription],
    resolve=namespace_for(Permission.READ, UserNamespacePath),
)
async def schema_namespace(
    request: Request, ctx: Context, user: User, namespace: NamespaceRef
) -> list[DatasetDescription]:
    """List the datasets of a namespace

    The datasets of namespace `user/namespace` (`self`: the caller's)."""
    async with ctx.services.db.session() as session:
        return [describe(namespace, d.record) for d in await list_datasets(session, namespace)]


@router.get("/schema/{user}/namespaces", list[NamespaceItem], errors=(404,), params=UserPath)
async def namespaces(request: Request, ctx: Context, user: User, path: UserPath) -> list[NamespaceItem]:
    """List a user's namespaces

    The namespaces of a user (`self`: the caller) that the caller may read."""
    owner = path.user
    async with ctx.services.db.session() as session:
        if await find_user(session, owner) is None:
            raise NotFound(f"no user named {owner!r}")
        return [
            NamespaceItem(name=ns.name, owner=ns.owner)
            for ns in await readable_namespaces(session, user)
            if ns.owner == owner
        ]


@router.get(DATASET_PATH, DatasetInfo, resolve=READABLE_DATASET)
async def dataset_info(request: Request, ctx: Context, user: User, dataset: DatasetRef) -> DatasetInfo:
    """Read a dataset

    The dataset, its columns (in their sort order) and how many rows it holds."""
    services: Services = ctx.services
    record = dataset.record
    return DatasetInfo(
        dataset=describe(dataset.namespace, record),
        metadata=DatasetMetadata(
            column_names=list(record.schema_definition),
            row_count=await services.rows.count(record),
            data_description=record.description,
            schema_definition=dict(record.schema_definition),
        ),
    )


@router.put(
    "/schema/{username}/{namespace}/{datasetName}/sort-order", body=SortOrder, status=204, resolve=WRITABLE_DATASET
)
async def sort_order(request: Request, ctx: Context, user: User, body: SortOrder, dataset: DatasetRef) -> None:
    """Set the order of a dataset's columns

    Reorders the dataset's fields (the schema keeps its order: listings, catalog and
    `columnNames` follow it). `order` names every field once."""
    async with ctx.services.db.session() as session:
        session.add(dataset.record)
        schema = dict(dataset.record.schema_definition)
        if sorted(body.order) != sorted(schema):
            raise InvalidInput(
                "the order must name every field of the dataset once",
                sub_errors=[SubError("invalid_order", f"order: expected a permutation of {list(schema)}")],
            )
        # Equal as dicts: the change is in the order alone, which SQLAlchemy's comparison misses.
        dataset.record.schema_definition = {name: schema[name] for name in body.order}
        flag_modified(dataset.record, "schema_definition")
