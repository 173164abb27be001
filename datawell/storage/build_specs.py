"""Build specifications: sources, a destination and an opaque payload, versioned by edits."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from datawell.errors import Conflict, NotFound
from datawell.storage.tables import BuildSpec, User, utcnow


async def create_build_spec(
    session: AsyncSession, owner: User, sources: list[dict[str, Any]], destination: dict[str, Any], payload: str
) -> BuildSpec:
    spec = BuildSpec(owner_id=owner.id, sources=sources, destination=destination, payload=payload)
    session.add(spec)
    await session.flush()
    return spec


async def get_build_spec(session: AsyncSession, owner: User, spec_id: str) -> BuildSpec:
    """The caller's BuildSpec; another user's is reported as absent."""
    spec = await session.get(BuildSpec, spec_id)
    if spec is None or spec.owner_id != owner.id:
        raise NotFound(f"no BuildSpec with id {spec_id}")
    return spec


async def list_build_specs(session: AsyncSession, owner: User) -> list[BuildSpec]:
    rows = await session.execute(select(BuildSpec).where(BuildSpec.owner_id == owner.id).order_by(BuildSpec.created_at))
    return list(rows.scalars())


async def replace_build_spec(
    session: AsyncSession,
    spec: BuildSpec,
    sources: list[dict[str, Any]],
    destination: dict[str, Any],
    payload: str,
    expected_version: int | None,
) -> BuildSpec:
    if expected_version is not None and expected_version != spec.version:
        raise Conflict(
            f"BuildSpec {spec.id} is at version {spec.version}, not {expected_version}; read it again and retry"
        )
    spec.sources = sources
    spec.destination = destination
    spec.payload = payload
    spec.version += 1
    spec.updated_at = utcnow()
    await session.flush()
    return spec
