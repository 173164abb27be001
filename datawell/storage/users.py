"""Users and their API tokens (the token's id is the JWT `jti`)."""

from __future__ import annotations

import re
from datetime import timedelta

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from datawell.errors import Conflict, InvalidInput, NotFound, SubError
from datawell.storage.direct import DirectReads, timestamp
from datawell.storage.tables import Token, User, utcnow

NAME_PATTERN = re.compile(r"^[A-Za-z][A-Za-z0-9_-]{0,63}$")
# In a path or a body, this username names the caller (the DataLinks SDK sends it in every
# path), so no user may be called so.
SELF = "self"


def check_name(kind: str, name: str) -> None:
    if not NAME_PATTERN.fullmatch(name):
        raise InvalidInput(
            f"invalid {kind} name",
            sub_errors=[
                SubError(
                    "invalid_name",
                    f"{kind} {name!r}: start with a letter; letters, digits, '_' and '-' only; at most 64 characters",
                )
            ],
        )


async def create_user(session: AsyncSession, username: str) -> User:
    check_name("username", username)
    if username.lower() == SELF:
        raise InvalidInput(
            "invalid username",
            sub_errors=[SubError("reserved_name", f"username {username!r}: 'self' names the caller in paths")],
        )
    if await find_user(session, username) is not None:
        raise Conflict(f"user {username!r} already exists")
    user = User(username=username)
    session.add(user)
    await session.flush()
    return user


async def find_user(session: AsyncSession, username: str) -> User | None:
    return (await session.execute(select(User).where(User.username == username))).scalar_one_or_none()


async def get_user(session: AsyncSession, username: str) -> User:
    user = await find_user(session, username)
    if user is None:
        raise NotFound(f"no user named {username!r}")
    return user


async def usernames(session: AsyncSession, user_ids: set[str]) -> dict[str, str]:
    """User id -> username, in one query."""
    if not user_ids:
        return {}
    rows = await session.execute(select(User.id, User.username).where(User.id.in_(user_ids)))
    return dict(rows.tuples().all())


async def list_users(session: AsyncSession) -> list[User]:
    return list((await session.execute(select(User).order_by(User.username))).scalars())


async def create_token(session: AsyncSession, user: User, ttl: timedelta, description: str = "") -> Token:
    token = Token(user_id=user.id, expires_at=utcnow() + ttl, description=description)
    session.add(token)
    await session.flush()
    return token


async def revoke_token(session: AsyncSession, token_id: str) -> Token:
    token = await session.get(Token, token_id)
    if token is None:
        raise NotFound(f"no token with id {token_id!r}")
    if token.revoked_at is None:
        token.revoked_at = utcnow()
    return token


# Through the direct read path: the check every authenticated request makes.
TOKEN_USER = (
    "SELECT users.id, users.username, users.created_at, tokens.expires_at"
    " FROM tokens JOIN users ON users.id = tokens.user_id WHERE tokens.id = $1 AND tokens.revoked_at IS NULL"
)


async def active_token_user(reads: DirectReads, token_id: str) -> User | None:
    """The user of a token that exists, is not revoked and has not expired: one indexed
    lookup per request, never cached, so a revocation takes effect at the next request."""
    rows = await reads.fetch(TOKEN_USER, token_id)
    if not rows or timestamp(rows[0][3]) <= utcnow():
        return None
    user_id, username, created_at, _expires_at = rows[0]
    # Detached from any session: callers read its id and username only.
    return User(id=user_id, username=username, created_at=timestamp(created_at))


async def list_tokens(session: AsyncSession, user: User) -> list[Token]:
    """The user's tokens, newest first."""
    query = select(Token).where(Token.user_id == user.id).order_by(Token.created_at.desc())
    return list((await session.execute(query)).scalars())
