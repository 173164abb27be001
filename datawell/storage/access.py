"""Namespaces, grants and the access rule: a user owns their namespaces; a grant gives
another user `read` or `write` on one namespace. Every layer asks here."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from sqlalchemy import Select, or_, select
from sqlalchemy.ext.asyncio import AsyncSession

from datawell.errors import Forbidden, NotFound
from datawell.storage.tables import Grant, Namespace, User
from datawell.storage.users import check_name, find_user


class Permission(StrEnum):
    READ = "read"
    WRITE = "write"


@dataclass(frozen=True)
class NamespaceRef:
    """A namespace as users name it: owner username and namespace name."""

    id: str
    owner: str
    name: str

    def __str__(self) -> str:
        return f"{self.owner}/{self.name}"


async def find_namespace(session: AsyncSession, owner: str, name: str) -> NamespaceRef | None:
    row = (
        await session.execute(
            select(Namespace.id, User.username)
            .join(User, User.id == Namespace.owner_id)
            .where(User.username == owner, Namespace.name == name)
        )
    ).one_or_none()
    return None if row is None else NamespaceRef(id=row[0], owner=row[1], name=name)


async def namespace_by_id(session: AsyncSession, namespace_id: str) -> NamespaceRef:
    row = (
        await session.execute(
            select(Namespace.name, User.username)
            .join(User, User.id == Namespace.owner_id)
            .where(Namespace.id == namespace_id)
        )
    ).one_or_none()
    if row is None:
        raise NotFound(f"namespace {namespace_id} does not exist")
    return NamespaceRef(id=namespace_id, owner=row[1], name=row[0])


async def ensure_namespace(session: AsyncSession, owner: User, name: str) -> NamespaceRef:
    """The caller's namespace, created on first use."""
    check_name("namespace", name)
    existing = await find_namespace(session, owner.username, name)
    if existing is not None:
        return existing
    namespace = Namespace(owner_id=owner.id, name=name)
    session.add(namespace)
    await session.flush()
    return NamespaceRef(id=namespace.id, owner=owner.username, name=name)


async def permission_of(session: AsyncSession, user: User, namespace: NamespaceRef) -> Permission | None:
    if namespace.owner == user.username:
        return Permission.WRITE
    grant = (
        await session.execute(
            select(Grant.permission).where(Grant.namespace_id == namespace.id, Grant.user_id == user.id)
        )
    ).scalar_one_or_none()
    return None if grant is None else Permission(grant)


def allows(held: Permission | None, wanted: Permission) -> bool:
    return held is Permission.WRITE or (held is Permission.READ and wanted is Permission.READ)


async def require_seen(
    session: AsyncSession, user: User, namespace: NamespaceRef, wanted: Permission, missing: NotFound
) -> None:
    """For something found by its id in `namespace`: `missing` (404) when `user` cannot even
    read the namespace, so its existence does not leak; 403 when they may read but want write."""
    held = await permission_of(session, user, namespace)
    if held is None:
        raise missing
    if not allows(held, wanted):
        raise Forbidden(f"user {user.username!r} has no {wanted.value} access to namespace {namespace}")


async def namespace_named(session: AsyncSession, owner: str, name: str) -> NamespaceRef:
    """The namespace `owner/name`; 404 if it does not exist."""
    namespace = await find_namespace(session, owner, name)
    if namespace is None:
        raise NotFound(f"namespace {owner}/{name} does not exist")
    return namespace


async def require(session: AsyncSession, user: User, namespace: NamespaceRef, wanted: Permission) -> None:
    """403 unless `user` holds `wanted` on `namespace`."""
    if not allows(await permission_of(session, user, namespace), wanted):
        raise Forbidden(f"user {user.username!r} has no {wanted.value} access to namespace {namespace}")


def access_query(user: User, owner: str, name: str) -> Select[str, str | None]:
    """The namespace `owner/name` and the user's grant on it (null when none), in one row;
    callers add the columns of what they read from it, so access and data come in one query."""
    return (
        select(Namespace.id, Grant.permission)
        .join(User, User.id == Namespace.owner_id)
        .outerjoin(Grant, (Grant.namespace_id == Namespace.id) & (Grant.user_id == user.id))
        .where(User.username == owner, Namespace.name == name)
    )


def granted(user: User, owner: str, name: str, row: Sequence[Any] | None, wanted: Permission) -> NamespaceRef:
    """The namespace from a row of `access_query`: 404 if there was none, 403 if `user` lacks `wanted`."""
    if row is None:
        raise NotFound(f"namespace {owner}/{name} does not exist")
    namespace = NamespaceRef(id=row[0], owner=owner, name=name)
    held = Permission.WRITE if owner == user.username else (None if row[1] is None else Permission(row[1]))
    if not allows(held, wanted):
        raise Forbidden(f"user {user.username!r} has no {wanted.value} access to namespace {namespace}")
    return namespace


async def authorize(session: AsyncSession, user: User, owner: str, name: str, wanted: Permission) -> NamespaceRef:
    """The namespace `owner/name` if `user` holds `wanted` on it: 404 if it does not exist, 403 if not allowed."""
    row = (await session.execute(access_query(user, owner, name))).one_or_none()
    return granted(user, owner, name, row, wanted)


async def readable_namespaces(session: AsyncSession, user: User) -> list[NamespaceRef]:
    """Every namespace the user owns or holds a grant on."""
    rows = await session.execute(
        select(Namespace.id, User.username, Namespace.name)
        .join(User, User.id == Namespace.owner_id)
        .outerjoin(Grant, (Grant.namespace_id == Namespace.id) & (Grant.user_id == user.id))
        .where(or_(Namespace.owner_id == user.id, Grant.id.is_not(None)))
        .order_by(User.username, Namespace.name)
    )
    return [NamespaceRef(id=i, owner=o, name=n) for i, o, n in rows]


async def set_grant(session: AsyncSession, owner: str, name: str, grantee: str, permission: Permission) -> None:
    namespace = await find_namespace(session, owner, name)
    if namespace is None:
        raise NotFound(f"namespace {owner}/{name} does not exist")
    user = await find_user(session, grantee)
    if user is None:
        raise NotFound(f"no user named {grantee!r}")
    grant = (
        await session.execute(select(Grant).where(Grant.namespace_id == namespace.id, Grant.user_id == user.id))
    ).scalar_one_or_none()
    if grant is None:
        session.add(Grant(namespace_id=namespace.id, user_id=user.id, permission=permission.value))
    else:
        grant.permission = permission.value


async def remove_grant(session: AsyncSession, owner: str, name: str, grantee: str) -> bool:
    namespace = await find_namespace(session, owner, name)
    user = await find_user(session, grantee)
    if namespace is None or user is None:
        return False
    grant = (
        await session.execute(select(Grant).where(Grant.namespace_id == namespace.id, Grant.user_id == user.id))
    ).scalar_one_or_none()
    if grant is None:
        return False
    await session.delete(grant)
    return True


async def list_grants(session: AsyncSession, owner: str, name: str) -> list[tuple[str, str]]:
    namespace = await find_namespace(session, owner, name)
    if namespace is None:
        raise NotFound(f"namespace {owner}/{name} does not exist")
    rows = await session.execute(
        select(User.username, Grant.permission)
        .join(User, User.id == Grant.user_id)
        .where(Grant.namespace_id == namespace.id)
        .order_by(User.username)
    )
    return [(u, p) for u, p in rows]
