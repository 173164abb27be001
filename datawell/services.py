"""The service objects every request handler, worker and command shares, built once by
`datawell.app.build_services` and handed down explicitly."""

from __future__ import annotations

from dataclasses import dataclass

from datawell.api.auth import TokenAuthority
from datawell.config import Settings
from datawell.storage.db import Database


@dataclass
class Services:
    settings: Settings
    db: Database
    tokens: TokenAuthority

    async def close(self) -> None:
        await self.db.close()
