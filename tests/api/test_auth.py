"""Bearer tokens: what a client sees for each way a token can be wrong."""

from __future__ import annotations

import asyncio
import time
from datetime import timedelta

import jwt

from datawell.config import Settings
from datawell.services import Services
from datawell.storage.db import Database
from datawell.storage.tables import Token, utcnow
from datawell.storage.users import get_user, revoke_token
from tests.conftest import Account

PROTECTED = "/api/v1/build-specs"


def assert_unauthorized(response, fragment: str) -> None:
    assert response.status_code == 401
    body = response.json()
    assert body["error_code"] == "UNAUTHORIZED"
    assert fragment in body["message"]
    assert response.headers["www-authenticate"] == "Bearer"


async def test_missing_token_is_401(client) -> None:
    assert_unauthorized(await client.get(PROTECTED), "missing bearer token")


async def test_wrong_scheme_is_401(client, alice: Account) -> None:
    assert_unauthorized(await client.get(PROTECTED, headers={"Authorization": f"Basic {alice.token}"}), "Bearer")


async def test_garbage_token_is_401(client) -> None:
    assert_unauthorized(await client.get(PROTECTED, headers={"Authorization": "Bearer not-a-jwt"}), "not a valid JWT")


async def test_token_signed_with_another_key_is_401(client, alice: Account) -> None:
    claims = jwt.decode(alice.token, options={"verify_signature": False})
    forged = jwt.encode(claims, "another-key-another-key-another-key", algorithm="HS256")
    assert_unauthorized(await client.get(PROTECTED, headers={"Authorization": f"Bearer {forged}"}), "invalid")


async def test_expired_token_is_401(client, services: Services, alice: Account) -> None:
    _, expired = await services.tokens.issue("alice", timedelta(seconds=-5))
    assert_unauthorized(await client.get(PROTECTED, headers={"Authorization": f"Bearer {expired}"}), "expired")


async def test_revoked_token_is_401(client, services: Services, alice: Account) -> None:
    assert (await client.get(PROTECTED, headers=alice.headers)).status_code == 200
    async with services.db.session() as session:
        await revoke_token(session, alice.token_id)
    assert_unauthorized(await client.get(PROTECTED, headers=alice.headers), "revoked")


async def test_revocation_by_another_process_counts_at_the_next_request(
    client, services: Services, settings: Settings, alice: Account
) -> None:
    # The token was just accepted (its signature is now remembered); a revocation written
    # through another engine, as `datawell tokens revoke` does from its own process, must
    # still refuse the very next request.
    assert (await client.get(PROTECTED, headers=alice.headers)).status_code == 200
    other = Database(settings.resolved_database_url)
    try:
        async with other.session() as session:
            await revoke_token(session, alice.token_id)
    finally:
        await other.close()
    assert_unauthorized(await client.get(PROTECTED, headers=alice.headers), "revoked")


async def test_token_expiring_after_a_check_is_refused(client, services: Services, alice: Account) -> None:
    _, short = await services.tokens.issue("alice", timedelta(seconds=2))
    headers = {"Authorization": f"Bearer {short}"}
    assert (await client.get(PROTECTED, headers=headers)).status_code == 200
    expires = jwt.decode(short, options={"verify_signature": False})["exp"]
    await asyncio.sleep(max(0.0, expires - time.time()) + 0.05)
    assert_unauthorized(await client.get(PROTECTED, headers=headers), "expired")


async def test_token_expired_in_the_database_is_refused(client, services: Services, alice: Account) -> None:
    # The database's expiry decides, even while the JWT's `exp` is still ahead.
    assert (await client.get(PROTECTED, headers=alice.headers)).status_code == 200
    async with services.db.session() as session:
        token = await session.get(Token, alice.token_id)
        assert token is not None
        token.expires_at = utcnow() - timedelta(seconds=1)
    assert_unauthorized(await client.get(PROTECTED, headers=alice.headers), "revoked or is unknown")


async def test_deleted_users_token_is_refused(client, services: Services, alice: Account) -> None:
    assert (await client.get(PROTECTED, headers=alice.headers)).status_code == 200
    async with services.db.session() as session:
        await session.delete(await get_user(session, "alice"))
    assert_unauthorized(await client.get(PROTECTED, headers=alice.headers), "revoked or is unknown")


async def test_valid_token_passes(client, alice: Account) -> None:
    response = await client.get(PROTECTED, headers=alice.headers)
    assert response.status_code == 200
    assert response.json() == {"data": []}
