"""Assistant runs as records: started, then completed (with the answer and its steps) or
failed; the caller may rate a completed one. Usage is read from them (tokens per run)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from datawell.errors import NotFound
from datawell.storage.tables import AgentRun, User, utcnow

RUNNING = "running"
COMPLETED = "completed"
FAILED = "failed"


async def start(session: AsyncSession, user: User, conversation_id: str | None, question: str) -> AgentRun:
    run = AgentRun(user_id=user.id, conversation_id=conversation_id, question=question, status=RUNNING)
    session.add(run)
    await session.flush()
    return run


async def end(
    session: AsyncSession, run_id: str, *, result: dict[str, Any] | None, error: str | None, tokens: int
) -> None:
    run = await session.get(AgentRun, run_id)
    if run is None:  # deleted while it ran
        return
    run.status = COMPLETED if error is None else FAILED
    run.result, run.error_message, run.tokens = result, error, tokens
    run.updated_at = utcnow()


async def own(session: AsyncSession, user: User, run_id: str) -> AgentRun:
    """The caller's run; another user's is reported exactly like a missing one."""
    run = await session.get(AgentRun, run_id)
    if run is None or run.user_id != user.id:
        raise NotFound(f"agent run {run_id} does not exist")
    return run


async def history(
    session: AsyncSession,
    user: User,
    on_or_after: datetime | None,
    before: datetime | None,
    limit: int,
    after: tuple[datetime, str] | None = None,
) -> list[AgentRun]:
    """The caller's runs, oldest first, from the cursor (created_at, id) on."""
    query = select(AgentRun).where(AgentRun.user_id == user.id)
    if on_or_after is not None:
        query = query.where(AgentRun.created_at >= on_or_after)
    if before is not None:
        query = query.where(AgentRun.created_at < before)
    if after is not None:
        stamp, run_id = after
        query = query.where((AgentRun.created_at > stamp) | ((AgentRun.created_at == stamp) & (AgentRun.id > run_id)))
    rows = await session.execute(query.order_by(AgentRun.created_at, AgentRun.id).limit(limit))
    return list(rows.scalars())
