"""The DataLinks SDK's agent runs: a run's status, deleting it, feedback on it, and resuming
its event stream."""

from __future__ import annotations

from typing import Any

from pydantic import Field
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from datawell.api.routing import Context, PathModel, Router
from datawell.api.schemas import ApiModel
from datawell.errors import InvalidInput, SubError
from datawell.storage import agent_runs
from datawell.storage.tables import AgentRun, User

router = Router("datalinks")


class RunPath(PathModel):
    run_id: str


class RunStatus(ApiModel):
    run_id: str
    agent_kind: str = "auto_rag"
    question: str
    status: str = Field(description="running, completed or failed")
    can_resume: bool = Field(False, description="Always false: runs keep no checkpoint to resume from.")
    error_message: str | None = None
    result: dict[str, Any] | None = Field(None, description="`{response, steps}` once completed.")


class Feedback(ApiModel):
    thumbs_up: bool
    comment: str | None = Field(None, max_length=10000)


def run_status(run: AgentRun) -> RunStatus:
    return RunStatus(
        run_id=run.id, question=run.question, status=run.status, error_message=run.error_message, result=run.result
    )


@router.get("/query/runs/{runId}", RunStatus, errors=(404,), params=RunPath)
async def run_status_of(request: Request, ctx: Context, user: User, path: RunPath) -> RunStatus:
    """An agent run's status

    One of the caller's assistant runs (`runId` comes on `/query/ask`'s `run-started`)."""
    async with ctx.services.db.read() as session:
        return run_status(await agent_runs.own(session, user, path.run_id))


@router.delete("/query/runs/{runId}", status=204, errors=(404,), params=RunPath)
async def delete_run(request: Request, ctx: Context, user: User, path: RunPath) -> None:
    """Delete an agent run

    Deletes the run's record (its conversation keeps the turn)."""
    async with ctx.services.db.session() as session:
        await session.delete(await agent_runs.own(session, user, path.run_id))


@router.post("/query/runs/{runId}/feedback", body=Feedback, status=204, errors=(404,), params=RunPath)
async def feedback(request: Request, ctx: Context, user: User, body: Feedback, path: RunPath) -> None:
    """Rate an agent run's answer

    Thumbs up or down, with a comment, on a completed run; again replaces the rating."""
    async with ctx.services.db.session() as session:
        run = await agent_runs.own(session, user, path.run_id)
        if run.status != agent_runs.COMPLETED:
            raise InvalidInput(
                f"agent run {run.id} is {run.status}: only a completed run is rated",
                sub_errors=[SubError("not_completed", f"runId: the run is {run.status}")],
            )
        run.thumbs_up, run.comment = body.thumbs_up, body.comment


@router.post("/query/runs/{runId}/resume", RunStatus, status=410, also=(409, 422), errors=(404,), params=RunPath)
async def resume(request: Request, ctx: Context, user: User, path: RunPath) -> Response:
    """Resume an agent run

    Runs keep no mid-run checkpoint, so none is resumed: a completed run answers 410 with
    its question and result, a failed one 422 with its error, a running one 409 (poll its
    status), as the SDK expects of runs that cannot be streamed."""
    async with ctx.services.db.read() as session:
        run = await agent_runs.own(session, user, path.run_id)
    body = run_status(run).model_dump(mode="json", by_alias=True)
    code = {agent_runs.COMPLETED: 410, agent_runs.FAILED: 422}.get(run.status, 409)
    return JSONResponse(body, status_code=code)
