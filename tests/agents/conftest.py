from __future__ import annotations

import pytest

from tests.agents.a2a_client import Agent, discover


@pytest.fixture
async def agents(client) -> dict[str, Agent]:
    return await discover(client)
