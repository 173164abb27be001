"""The DataLinks SDK's caller and tokens: `/user/me`, `/user/tokens`, `/user/token`."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from pydantic import Field
from sqlalchemy.ext.asyncio import AsyncSession
from starlette.requests import Request

from datawell.api.routing import Context, PathModel, Router
from datawell.api.schemas import ApiModel
from datawell.errors import InvalidInput, NotFound, SubError
from datawell.storage.tables import Token, User, utcnow
from datawell.storage.users import list_tokens

router = Router("datalinks")


TOKEN_TTL = timedelta(days=365)  # a token created without `expires_at`


class CurrentUser(ApiModel):
    id: str
    username: str
    name: str | None = None
    email: str | None = None


class PermissionEntry(ApiModel):
    username: str
    namespace: str
    dataset: str | None = None


class TokenCreate(ApiModel):
    model_config = ApiModel.model_config | {"alias_generator": None}
    name: str = Field(min_length=1, max_length=200)
    expires_at: str | None = None
    access_restricted_to: list[PermissionEntry] | None = Field(None, alias="accessRestrictedTo")


class UserToken(ApiModel):
    """As the SDK reads it: snake_case keys."""

    model_config = ApiModel.model_config | {"alias_generator": None}
    id: str
    name: str
    created_at: str
    expires_at: str
    last_used_at: str | None = None
    token: str | None = Field(None, description="The secret; only in the answer that creates the token.")


class TokenPermissions(ApiModel):
    restricted: bool
    permissions: list[PermissionEntry] | None = None


@router.get("/user/me", CurrentUser)
async def me(request: Request, ctx: Context, user: User) -> CurrentUser:
    """The caller

    The user the token belongs to."""
    return CurrentUser(id=user.id, username=user.username)


def user_token(token: Token, secret: str | None = None) -> UserToken:
    return UserToken(
        id=token.id,
        name=token.description,
        created_at=token.created_at.isoformat(),
        expires_at=token.expires_at.isoformat(),
        token=secret,
    )


@router.get("/user/tokens", list[UserToken])
async def tokens(request: Request, ctx: Context, user: User) -> list[UserToken]:
    """The caller's tokens

    The caller's tokens that are not revoked, newest first (never their secrets)."""
    async with ctx.services.db.session() as session:
        return [user_token(t) for t in await list_tokens(session, user) if t.revoked_at is None]


@router.post("/user/token", UserToken, body=TokenCreate, status=201)
async def add_token(request: Request, ctx: Context, user: User, body: TokenCreate) -> UserToken:
    """Create a token

    A new token for the caller; the answer is the only place its secret appears. Tokens
    carry the caller's whole access: `accessRestrictedTo` is refused (docs/datalinks.md)."""
    if body.access_restricted_to:
        raise InvalidInput(
            "tokens restricted to some datasets are not supported",
            sub_errors=[SubError("unsupported", "accessRestrictedTo: tokens carry the user's access")],
        )
    ttl = TOKEN_TTL
    if body.expires_at is not None:
        try:
            expires = datetime.fromisoformat(body.expires_at)
        except ValueError:
            raise InvalidInput(
                "invalid expiry", sub_errors=[SubError("invalid_datetime", "expires_at: not ISO 8601")]
            ) from None
        expires = expires if expires.tzinfo else expires.replace(tzinfo=UTC)
        ttl = expires - utcnow()
        if ttl <= timedelta(0):
            raise InvalidInput("the expiry is past", sub_errors=[SubError("past", "expires_at: in the past")])
    token, secret = await ctx.services.tokens.issue(user.username, ttl, body.name)
    return user_token(token, secret)


async def own_token(session: AsyncSession, user: User, token_id: str) -> Token:
    token = await session.get(Token, token_id)
    if token is None or token.user_id != user.id or token.revoked_at is not None:
        raise NotFound(f"no token with id {token_id!r}")
    return token


class TokenPath(PathModel):
    token_id: str


@router.delete("/user/token/{tokenId}", status=204, errors=(404,), params=TokenPath)
async def delete_token(request: Request, ctx: Context, user: User, path: TokenPath) -> None:
    """Revoke a token

    Revokes one of the caller's tokens; it stops working at once."""
    async with ctx.services.db.session() as session:
        token = await own_token(session, user, path.token_id)
        token.revoked_at = utcnow()


@router.get("/user/tokens/{tokenId}/permissions", TokenPermissions, errors=(404,), params=TokenPath)
async def token_permissions(request: Request, ctx: Context, user: User, path: TokenPath) -> TokenPermissions:
    """A token's permissions

    Tokens carry their user's whole access: never restricted."""
    async with ctx.services.db.session() as session:
        await own_token(session, user, path.token_id)
    return TokenPermissions(restricted=False)
