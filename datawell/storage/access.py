"""Namespaces, grants and the access rule: a user owns their namespaces; a grant gives
another user `read` or `write` on one namespace. Every layer asks here."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from sqlalchemy import select, text
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


# The access rule, written once: a namespace's owner may write it; anyone else holds what
# their grant says, or nothing. Every path reads the namespace and the caller's grant with
# the one SQL below (the ORM sessions through `text`, the direct driver as is, the query
# tools once per run into a `Caller`) and decides with `held`.
ACCESS_COLUMNS = "namespaces.id, users.username, namespaces.name, grants.permission"
ACCESS_FROM = (
    "namespaces JOIN users ON users.id = namespaces.owner_id"
    " LEFT JOIN grants ON grants.namespace_id = namespaces.id AND grants.user_id = $1"
)
NAMED = "users.username = $2 AND namespaces.name = $3"
READABLE = "namespaces.owner_id = $1 OR grants.id IS NOT NULL"


def held(username: str, row: Sequence[Any]) -> Permission | None:
    """What `username` holds on the namespace of an access row (`ACCESS_COLUMNS` first)."""
    if row[1] == username:
        return Permission.WRITE
    return None if row[3] is None else Permission(row[3])


def allows(permission: Permission | None, wanted: Permission) -> bool:
    return permission is Permission.WRITE or (permission is Permission.READ and wanted is Permission.READ)


async def _access_rows(session: AsyncSession, where: str, *args: Any) -> list[Sequence[Any]]:
    """Access rows through an ORM session: the direct driver's `$n` placeholders, bound by name."""
    sql = re.sub(r"\$(\d)", r":p\1", f"SELECT {ACCESS_COLUMNS} FROM {ACCESS_FROM} WHERE {where}")
    return list(await session.execute(text(sql), {f"p{i}": a for i, a in enumerate(args, start=1)}))


def _ref(row: Sequence[Any]) -> NamespaceRef:
    return NamespaceRef(id=row[0], owner=row[1], name=row[2])


async def permission_of(session: AsyncSession, user: User, namespace: NamespaceRef) -> Permission | None:
    rows = await _access_rows(session, "namespaces.id = $2", user.id, namespace.id)
    return held(user.username, rows[0]) if rows else None


async def require_seen(
    session: AsyncSession, user: User, namespace: NamespaceRef, wanted: Permission, missing: NotFound
) -> None:
    """For something found by its id in `namespace`: `missing` (404) when `user` cannot even
    read the namespace, so its existence does not leak; 403 when they may read but want write."""
    permission = await permission_of(session, user, namespace)
    if permission is None:
        raise missing
    if not allows(permission, wanted):
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


def granted(user: User, owner: str, name: str, row: Sequence[Any] | None, wanted: Permission) -> NamespaceRef:
    """The namespace of an access row: 404 if there was none, 403 if `user` lacks `wanted`."""
    if row is None:
        raise NotFound(f"namespace {owner}/{name} does not exist")
    namespace = _ref(row)
    if not allows(held(user.username, row), wanted):
        raise Forbidden(f"user {user.username!r} has no {wanted.value} access to namespace {namespace}")
    return namespace


async def authorize(session: AsyncSession, user: User, owner: str, name: str, wanted: Permission) -> NamespaceRef:
    """The namespace `owner/name` if `user` holds `wanted` on it: 404 if it does not exist, 403 if not allowed."""
    rows = await _access_rows(session, NAMED, user.id, owner, name)
    return granted(user, owner, name, rows[0] if rows else None, wanted)


async def readable_namespaces(session: AsyncSession, user: User) -> list[NamespaceRef]:
    """Every namespace the user owns or holds a grant on."""
    rows = await _access_rows(session, f"{READABLE} ORDER BY users.username, namespaces.name", user.id)
    return [_ref(row) for row in rows]


@dataclass(frozen=True)
class Caller:
    """Who runs a question, with their access read once when the run starts: the graphs and
    the query tools check a namespace against `readable` and ask the database nothing more."""

    id: str
    name: str
    readable: tuple[NamespaceRef, ...]

    @classmethod
    async def of(cls, session: AsyncSession, user: User) -> Caller:
        return cls(user.id, user.username, tuple(await readable_namespaces(session, user)))

    def may_read(self, namespace: NamespaceRef) -> bool:
        return any(n.id == namespace.id for n in self.readable)

    def require_read(self, namespace: NamespaceRef) -> None:
        """403 unless the caller may read `namespace`."""
        if not self.may_read(namespace):
            raise Forbidden(f"user {self.name!r} has no read access to namespace {namespace}")

    def readable_named(self, owner: str, name: str) -> NamespaceRef | None:
        return next((n for n in self.readable if (n.owner, n.name) == (owner, name)), None)


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
