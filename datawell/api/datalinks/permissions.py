"""The DataLinks SDK's shares: who else may read or write a namespace or a dataset
(`/permissions/...`); only the owner shares."""

from __future__ import annotations

from typing import Literal

from pydantic import Field
from sqlalchemy.ext.asyncio import AsyncSession
from starlette.requests import Request

from datawell.api.routing import READABLE_DATASET, READABLE_NAMESPACE, Context, NamespacePath, Resolver, Router
from datawell.api.routing import DatasetPath as RoutedDatasetPath
from datawell.api.schemas import ApiModel
from datawell.errors import Conflict, Forbidden, NotFound
from datawell.storage.access import NamespaceRef, Permission, list_grants, remove_grant, set_grant
from datawell.storage.datasets import DatasetRef
from datawell.storage.tables import User

router = Router("datalinks")


ROLES = {"viewer": Permission.READ, "editor": Permission.WRITE}


class Share(ApiModel):
    username: str = Field(min_length=1)
    role: Literal["viewer", "editor"]


class AccessGrant(ApiModel):
    username: str
    role: Literal["viewer", "editor"]


def only_the_owner(user: User, namespace: NamespaceRef) -> None:
    if namespace.owner != user.username:
        raise Forbidden(f"only {namespace.owner!r} may share namespace {namespace}")


async def _owned(ctx: Context, user: User, path: NamespacePath) -> NamespaceRef:
    namespace = await READABLE_NAMESPACE.resolve(ctx, user, path)
    only_the_owner(user, namespace)
    return namespace


async def _owned_dataset(ctx: Context, user: User, path: RoutedDatasetPath) -> DatasetRef:
    dataset = await READABLE_DATASET.resolve(ctx, user, path)
    only_the_owner(user, dataset.namespace)
    return dataset


# The path's namespace (or dataset), which only its owner may share: 404, 403 as any, then 403.
OWNED_NAMESPACE = Resolver("namespace", NamespacePath, _owned, (403, 404))
OWNED_DATASET = Resolver("dataset", RoutedDatasetPath, _owned_dataset, (403, 404))


async def grants(session: AsyncSession, namespace: NamespaceRef) -> list[AccessGrant]:
    return [
        AccessGrant(username=name, role="editor" if permission == Permission.WRITE else "viewer")
        for name, permission in await list_grants(session, namespace.owner, namespace.name)
    ]


NAMESPACE_SHARES = "/permissions/namespaces/{username}/{namespace}/shares"
DATASET_SHARES = "/permissions/datasets/{username}/{namespace}/{datasetName}/shares"


@router.get(NAMESPACE_SHARES, list[AccessGrant], resolve=OWNED_NAMESPACE)
async def namespace_shares(request: Request, ctx: Context, user: User, namespace: NamespaceRef) -> list[AccessGrant]:
    """Who may use a namespace

    The namespace's grants: `viewer` is read, `editor` is write."""
    async with ctx.services.db.session() as session:
        return await grants(session, namespace)


@router.post(NAMESPACE_SHARES, body=Share, status=204, errors=(409,), resolve=OWNED_NAMESPACE)
async def share_namespace(request: Request, ctx: Context, user: User, body: Share, namespace: NamespaceRef) -> None:
    """Share a namespace

    Grants a user read (`viewer`) or write (`editor`) on the namespace, replacing an earlier grant."""
    async with ctx.services.db.session() as session:
        if body.username == user.username:
            raise Conflict("the owner already has every access")
        await set_grant(session, namespace.owner, namespace.name, body.username, ROLES[body.role])


@router.delete(NAMESPACE_SHARES, body=Share, status=204, resolve=OWNED_NAMESPACE)
async def revoke_namespace(request: Request, ctx: Context, user: User, body: Share, namespace: NamespaceRef) -> None:
    """Stop sharing a namespace

    Removes the user's grant on the namespace (404 when they hold none with that role)."""
    async with ctx.services.db.session() as session:
        held = {g.username: g.role for g in await grants(session, namespace)}
        if held.get(body.username) != body.role:
            raise NotFound(f"{body.username!r} holds no {body.role} grant on {namespace}")
        await remove_grant(session, namespace.owner, namespace.name, body.username)


@router.get(DATASET_SHARES, list[AccessGrant], resolve=OWNED_DATASET)
async def dataset_shares(request: Request, ctx: Context, user: User, dataset: DatasetRef) -> list[AccessGrant]:
    """Who may use a dataset

    Grants are per namespace: the dataset's users are its namespace's."""
    async with ctx.services.db.session() as session:
        return await grants(session, dataset.namespace)
