"""Recorded runs: saved when a run ends, read by the run viewer and `GET /api/v1/runs/{id}`.

Who may see a run: the user who asked, and the owner of the namespace it ran in (who answers
for that data). The record's prompts and replies are the asker's alone; `RunView.full` says
which of the two the reader is."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Literal

from sqlalchemy import ColumnElement, delete, or_, select
from sqlalchemy.ext.asyncio import AsyncSession

from datawell.storage.tables import Namespace, RunRow, User, utcnow

Order = Literal["newest", "slowest"]


@dataclass(frozen=True)
class RunView:
    row: RunRow
    full: bool  # the reader asked the question: prompts and replies included


def _visible(user: User) -> ColumnElement[bool]:
    owned = select(Namespace.id).where(Namespace.owner_id == user.id)
    return or_(RunRow.user_id == user.id, RunRow.namespace_id.in_(owned))


async def save(session: AsyncSession, row: RunRow, retention_days: float) -> None:
    """Store a finished run and drop the runs past the retention (0: keep none)."""
    if retention_days <= 0:
        return
    session.add(row)
    await session.execute(delete(RunRow).where(RunRow.started_at < utcnow() - timedelta(days=retention_days)))


async def get(session: AsyncSession, user: User, run_id: str) -> RunView | None:
    """The run if `user` may see it; None alike for a missing run and another's."""
    row = (await session.execute(select(RunRow).where(RunRow.id == run_id, _visible(user)))).scalar_one_or_none()
    return None if row is None else RunView(row, row.user_id == user.id)


async def listing(
    session: AsyncSession,
    user: User,
    *,
    username: str | None = None,
    namespace_id: str | None = None,
    outcome: str | None = None,
    order: Order = "newest",
    since: datetime | None = None,
    limit: int = 50,
) -> list[RunRow]:
    """The runs `user` may see, filtered, newest (or slowest) first."""
    query: Any = select(RunRow).where(_visible(user))
    if username:
        query = query.join(User, User.id == RunRow.user_id).where(User.username == username)
    if namespace_id:
        query = query.where(RunRow.namespace_id == namespace_id)
    if outcome:
        query = query.where(RunRow.outcome == outcome)
    if since is not None:
        query = query.where(RunRow.started_at >= since)
    ordering = RunRow.seconds.desc() if order == "slowest" else RunRow.started_at.desc()
    rows = await session.execute(query.order_by(ordering).limit(limit))
    return list(rows.scalars())
