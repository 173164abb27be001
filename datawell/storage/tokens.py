"""Bearer tokens (the API checks them in `datawell.api.routing`): HS256 JWTs signed by the service and revocable by id (`jti`), or,
when configured, JWTs of an external OpenID issuer verified against its JWKS."""

from __future__ import annotations

import secrets
import time
from datetime import timedelta
from typing import Any

import jwt

from datawell.config import Settings
from datawell.errors import Unauthorized
from datawell.storage.db import Database
from datawell.storage.tables import Token, User
from datawell.storage.users import active_token_user, create_token, find_user, get_user

ISSUER = "datawell"
VERIFIED_TOKENS = 10_000  # emptied when full: a miss costs one verification


class TokenAuthority:
    def __init__(
        self,
        db: Database,
        secret: str,
        *,
        oidc_issuer: str | None = None,
        oidc_jwks_url: str | None = None,
        oidc_audience: str | None = None,
    ) -> None:
        self.db = db
        self.secret = secret
        self.oidc_issuer = oidc_issuer
        self.oidc_audience = oidc_audience
        self.jwks = jwt.PyJWKClient(oidc_jwks_url) if oidc_jwks_url else None
        # Claims of own tokens whose signature checked out, by token text: parsing and
        # verifying a JWT costs more than the database lookup. The text and key decide the
        # signature for good, so this needs no invalidation; expiry is checked on every use
        # and revocation in the database on every request (`active_token_user`).
        self.verified: dict[str, dict[str, Any]] = {}

    def encode(self, token: Token, user: User) -> str:
        claims = {
            "iss": ISSUER,
            "sub": user.username,
            "jti": token.id,
            "iat": int(token.created_at.timestamp()),
            "exp": int(token.expires_at.timestamp()),
        }
        return jwt.encode(claims, self.secret, algorithm="HS256")

    async def issue(self, username: str, ttl: timedelta, description: str = "") -> tuple[Token, str]:
        async with self.db.session() as session:
            user = await get_user(session, username)
            token = await create_token(session, user, ttl, description)
        return token, self.encode(token, user)

    async def authenticate(self, authorization: str | None) -> User:
        if not authorization:
            raise Unauthorized("missing bearer token: send 'Authorization: Bearer <token>'")
        scheme, _, raw = authorization.partition(" ")
        if scheme.lower() != "bearer" or not raw.strip():
            raise Unauthorized("the Authorization header must be 'Bearer <token>'")
        raw = raw.strip()
        claims = self.verified.get(raw)
        if claims is None:
            try:
                header = jwt.get_unverified_header(raw)
            except jwt.PyJWTError:
                raise Unauthorized("the bearer token is not a valid JWT") from None
            if header.get("alg") != "HS256":
                return await self._external_token(raw)
            claims = self._verify(raw)
        elif claims["exp"] <= time.time():  # as jwt.decode checks it
            raise Unauthorized("the bearer token has expired")
        user = await active_token_user(self.db.direct, claims["jti"])
        if user is None:
            raise Unauthorized("the bearer token has been revoked or is unknown")
        return user

    def _verify(self, raw: str) -> dict[str, Any]:
        try:
            claims: dict[str, Any] = jwt.decode(
                raw, self.secret, algorithms=["HS256"], issuer=ISSUER, options={"require": ["exp", "jti", "sub"]}
            )
        except jwt.ExpiredSignatureError:
            raise Unauthorized("the bearer token has expired") from None
        except jwt.PyJWTError:
            raise Unauthorized("the bearer token is invalid") from None
        if len(self.verified) >= VERIFIED_TOKENS:
            self.verified.clear()
        self.verified[raw] = claims
        return claims

    async def _external_token(self, raw: str) -> User:
        if self.jwks is None:
            raise Unauthorized("the bearer token is invalid")
        try:
            key = self.jwks.get_signing_key_from_jwt(raw)
            claims = jwt.decode(
                raw, key.key, algorithms=["RS256", "ES256"], issuer=self.oidc_issuer, audience=self.oidc_audience
            )
        except jwt.ExpiredSignatureError:
            raise Unauthorized("the bearer token has expired") from None
        except jwt.PyJWTError:
            raise Unauthorized("the bearer token is invalid") from None
        username = claims.get("preferred_username") or claims.get("sub")
        async with self.db.session() as session:
            user = await find_user(session, str(username))
        if user is None:
            raise Unauthorized(f"no Datawell user for the identity {username!r}")
        return user


def signing_secret(settings: Settings) -> str:
    """The configured JWT key, or one generated once into the data folder."""
    if settings.jwt_secret is not None:
        return settings.jwt_secret.get_secret_value()
    path = settings.data_dir / "jwt-secret"
    if not path.exists():
        settings.data_dir.mkdir(parents=True, exist_ok=True)
        path.write_text(secrets.token_urlsafe(48))
        path.chmod(0o600)
    return path.read_text().strip()


def token_authority(db: Database, settings: Settings) -> TokenAuthority:
    return TokenAuthority(
        db,
        signing_secret(settings),
        oidc_issuer=settings.oidc_issuer,
        oidc_jwks_url=settings.oidc_jwks_url,
        oidc_audience=settings.oidc_audience,
    )
