"""Recorded runs (the run viewer's data): one run, and the runs the caller may see.

A run is seen by the user who asked and by the owner of the namespace it ran in; anyone else
gets 404, as for a run that does not exist. Prompts and replies are shown to the asker only."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, Field
from starlette.requests import Request

from datawell.api.routing import Context, PathModel, Resolver, Router, uuid_in_path
from datawell.client.run_records import RunList, RunRecord, RunSummary
from datawell.errors import NotFound
from datawell.storage import run_records
from datawell.storage.tables import RunRow, User

router = Router("runs")


class RunsQuery(BaseModel):
    user: str | None = Field(None, description="Only runs asked by this username.")
    namespace_id: str | None = Field(None, alias="namespaceId", description="Only runs in this namespace.")
    outcome: str | None = Field(None, description="ok, cancelled, or an error code.")
    order: Literal["newest", "slowest"] = "newest"
    limit: int = Field(50, ge=1, le=500)


def run_summary(row: RunRow) -> RunSummary:
    """A run's line in the list: its record's own fields, the question as the list's column
    holds it (200 characters), and the run's token totals."""
    record = RunRecord.model_validate(row.record, extra="ignore")
    tokens = record.tokens()
    shown = record.model_dump(include=set(RunSummary.model_fields))
    totals = {"prompt_tokens": tokens["prompt"], "output_tokens": tokens["output"]}
    return RunSummary.model_validate(shown | totals | {"question": row.question})


class RunPath(PathModel):
    run_id: Annotated[str, uuid_in_path("run")]


async def visible_run(ctx: Context, user: User, path: RunPath) -> RunRecord:
    """The run as `user` may read it (no prompts unless they asked it); 404 otherwise."""
    async with ctx.services.db.session() as session:
        view = await run_records.get(session, user, path.run_id)
    if view is None:
        raise NotFound(f"run {path.run_id} does not exist")
    record = RunRecord.model_validate(view.row.record, extra="ignore")
    return record if view.full else record.without_prompts()


VISIBLE_RUN = Resolver("run", RunPath, visible_run, (404,))


@router.get("/runs/{runId}", RunRecord, resolve=VISIBLE_RUN)
async def read_run(request: Request, ctx: Context, user: User, run: RunRecord) -> RunRecord:
    """Read a recorded run

    A run's record: its stages, model calls (tokens, seconds; the prompts and replies for
    the user who asked), queries (text, row count, error), answer and outcome. Times are
    seconds from the run's start."""
    return run


@router.get("/runs", RunList, query=RunsQuery)
async def list_runs(request: Request, ctx: Context, user: User, query: RunsQuery) -> RunList:
    """List recorded runs

    The runs the caller asked, and the runs in namespaces the caller owns; newest or
    slowest first."""
    async with ctx.services.db.session() as session:
        rows = await run_records.listing(
            session,
            user,
            username=query.user,
            namespace_id=query.namespace_id,
            outcome=query.outcome,
            order=query.order,
            limit=query.limit,
        )
    return RunList(data=[run_summary(row) for row in rows])
