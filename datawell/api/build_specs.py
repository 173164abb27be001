"""BuildSpecs: stored definitions reading source datasets and writing a destination dataset.
The code payload is opaque: stored byte for byte and never interpreted."""

from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import Field
from sqlalchemy.ext.asyncio import AsyncSession
from starlette.requests import Request

from datawell.api.openapi import IF_MATCH_PATTERN
from datawell.api.routing import Context, PathModel, Router, uuid_in_path
from datawell.api.schemas import ApiModel
from datawell.client.models import BuildSpec as BuildSpecResponse
from datawell.client.models import BuildSpecCode, BuildSpecList, DatasetCoordinate
from datawell.errors import InvalidInput, NotFound, SubError
from datawell.storage.access import Permission, authorize
from datawell.storage.build_specs import create_build_spec, get_build_spec, list_build_specs, replace_build_spec
from datawell.storage.datasets import find_dataset
from datawell.storage.tables import BuildSpec, User

router = Router("build-specs")


class BuildSpecRequest(ApiModel):
    sources: list[DatasetCoordinate] = Field(min_length=1)
    destination: DatasetCoordinate
    code: BuildSpecCode

    def stored(self) -> tuple[list[dict[str, Any]], dict[str, Any], str]:
        """The definition as storage keeps it: sources and destination as JSON, the payload."""
        sources = [s.model_dump(by_alias=True) for s in self.sources]
        return sources, self.destination.model_dump(by_alias=True), self.code.payload


def build_spec_response(spec: BuildSpec, owner: User) -> BuildSpecResponse:
    return BuildSpecResponse(
        id=spec.id,
        owner=owner.username,
        version=spec.version,
        sources=[DatasetCoordinate.model_validate(s) for s in spec.sources],
        destination=DatasetCoordinate.model_validate(spec.destination),
        code=BuildSpecCode(payload=spec.payload),
        created_at=spec.created_at,
        updated_at=spec.updated_at,
    )


async def check_coordinates(session: AsyncSession, user: User, body: BuildSpecRequest) -> None:
    """Sources must be readable and the destination writable by the caller: 403 when the
    caller lacks access, 422 naming every coordinate that does not exist."""
    wanted = [(f"sources.{i}", c, Permission.READ) for i, c in enumerate(body.sources)]
    wanted.append(("destination", body.destination, Permission.WRITE))
    missing = []
    for where, coordinate, permission in wanted:
        try:
            namespace = await authorize(session, user, coordinate.owner, coordinate.namespace, permission)
        except NotFound:
            namespace = None
        if namespace is None or await find_dataset(session, namespace, coordinate.dataset_name) is None:
            missing.append(SubError("unknown_dataset", f"{where}: dataset {coordinate} does not exist"))
    if missing:
        raise InvalidInput("the BuildSpec names datasets that do not exist", sub_errors=missing)


class BuildSpecPath(PathModel):
    build_spec_id: Annotated[str, uuid_in_path("BuildSpec")]


def parse_if_match(request: Request) -> int | None:
    value = request.headers.get("if-match")
    if value is None or value.strip() == "*":
        return None
    if not re.fullmatch(IF_MATCH_PATTERN, value):
        raise InvalidInput(
            "If-Match must be a BuildSpec version",
            sub_errors=[SubError("invalid_header", f"If-Match: {value!r} is not an integer version")],
        )
    return int(value.strip().removeprefix("W/").strip('"'))


@router.post("/build-specs", BuildSpecResponse, body=BuildSpecRequest, status=201, errors=(403,))
async def create(request: Request, ctx: Context, user: User, body: BuildSpecRequest) -> BuildSpecResponse:
    """Create a BuildSpec

    Creates a BuildSpec at version 1, owned by the caller."""
    async with ctx.services.db.session() as session:
        await check_coordinates(session, user, body)
        spec = await create_build_spec(session, user, *body.stored())
        return build_spec_response(spec, user)


@router.get("/build-specs", BuildSpecList)
async def list_all(request: Request, ctx: Context, user: User) -> BuildSpecList:
    """List the caller's BuildSpecs

    Lists the caller's BuildSpecs, oldest first."""
    async with ctx.services.db.session() as session:
        return BuildSpecList(data=[build_spec_response(s, user) for s in await list_build_specs(session, user)])


@router.get("/build-specs/{buildSpecId}", BuildSpecResponse, errors=(404,), params=BuildSpecPath)
async def read(request: Request, ctx: Context, user: User, path: BuildSpecPath) -> BuildSpecResponse:
    """Read a BuildSpec

    Reads one of the caller's BuildSpecs."""
    async with ctx.services.db.session() as session:
        return build_spec_response(await get_build_spec(session, user, path.build_spec_id), user)


@router.put(
    "/build-specs/{buildSpecId}",
    BuildSpecResponse,
    body=BuildSpecRequest,
    errors=(403, 404, 409),
    headers=(("If-Match", "Optional: the version the edit is based on; a different current version gives 409."),),
    params=BuildSpecPath,
)
async def replace(
    request: Request, ctx: Context, user: User, body: BuildSpecRequest, path: BuildSpecPath
) -> BuildSpecResponse:
    """Replace a BuildSpec

    Replaces the definition as a whole and bumps the version."""
    expected = parse_if_match(request)
    async with ctx.services.db.session() as session:
        spec = await get_build_spec(session, user, path.build_spec_id)
        await check_coordinates(session, user, body)
        spec = await replace_build_spec(session, spec, *body.stored(), expected)
        return build_spec_response(spec, user)


@router.delete("/build-specs/{buildSpecId}", status=204, errors=(404,), params=BuildSpecPath)
async def delete(request: Request, ctx: Context, user: User, path: BuildSpecPath) -> None:
    """Delete a BuildSpec

    Deletes one of the caller's BuildSpecs."""
    async with ctx.services.db.session() as session:
        await session.delete(await get_build_spec(session, user, path.build_spec_id))
