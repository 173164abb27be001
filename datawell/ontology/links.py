"""Link storage. Links are `Suggested` or `Active`; only active links feed the planners.

A link joins a field of one dataset to a field of another dataset of the same namespace.
`origin` and `destination` are written `namespace/dataset.field`; a `GeoMatch` joins two
coordinate pairs and writes both fields, latitude first: `namespace/dataset.lat,lon`.

Every change to a namespace's links bumps that namespace's row in `link_versions` in the
same transaction; `links_version` reads it, so every process can tell whether a graph it
built earlier is still current (`ontology.graph`)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum

from sqlalchemy import delete, func, or_, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncSession

from datawell.errors import NotFound
from datawell.storage.links import ACTIVE, SUGGESTED
from datawell.storage.tables import Link, LinkVersion, utcnow

_REFERENCE = re.compile(r"(?P<namespace>[^/]+)/(?P<dataset>[^./]+)\.(?P<fields>[A-Za-z0-9_]+(,[A-Za-z0-9_]+)?)")


class MatchType(StrEnum):
    EXACT = "ExactMatch"
    NORMALIZED = "NormalizedMatch"
    FUZZY = "FuzzyMatch"
    SEMANTIC = "SemanticMatch"
    GEO = "GeoMatch"


@dataclass(frozen=True)
class FieldRef:
    """A link end parsed: `sales/orders.customer` or, for coordinates, `sales/stores.lat,lon`."""

    namespace: str
    dataset: str
    fields: tuple[str, ...]

    @classmethod
    def parse(cls, text: str) -> FieldRef:
        match = _REFERENCE.fullmatch(text)
        if match is None:
            raise ValueError(f"{text!r} is not a link end (namespace/dataset.field)")
        return cls(match["namespace"], match["dataset"], tuple(match["fields"].split(",")))

    def __str__(self) -> str:
        return f"{self.namespace}/{self.dataset}.{','.join(self.fields)}"


@dataclass(frozen=True)
class NewLink:
    """A link to store: what the curator selected, with the evidence from the data."""

    origin: str
    destination: str
    origin_dataset_id: str
    destination_dataset_id: str
    match_type: MatchType
    hits: int
    score: float
    reason: str


async def list_links(
    session: AsyncSession, namespace_id: str, *, status: str | None = None, dataset_id: str | None = None
) -> list[Link]:
    """The namespace's links, optionally only those with a status or touching one dataset."""
    query = select(Link).where(Link.namespace_id == namespace_id)
    if status is not None:
        query = query.where(Link.status == status)
    if dataset_id is not None:
        query = query.where(or_(Link.origin_dataset_id == dataset_id, Link.destination_dataset_id == dataset_id))
    rows = await session.execute(query.order_by(Link.origin, Link.destination))
    return list(rows.scalars())


async def get_link(session: AsyncSession, link_id: str) -> Link:
    link = await session.get(Link, link_id)
    if link is None:
        raise NotFound(f"link {link_id} does not exist")
    return link


async def save_links(
    session: AsyncSession,
    namespace_id: str,
    links: Sequence[NewLink],
    *,
    status: str,
    curated_by: str | None,
    model: str,
) -> list[Link]:
    """Insert or update links (one row per origin/destination pair, in either direction).
    Saving as `Suggested` never demotes a link that is already `Active`."""
    wanted = {frozenset((new.origin, new.destination)) for new in links}
    existing = {
        pair: link
        for link in await list_links(session, namespace_id)
        if (pair := frozenset((link.origin, link.destination))) in wanted
    }
    saved: list[Link] = []
    for new in links:
        link = existing.get(frozenset((new.origin, new.destination)))
        if link is None:
            link = Link(namespace_id=namespace_id, status=status)
            session.add(link)
        elif status == SUGGESTED and link.status == ACTIVE:
            saved.append(link)
            continue
        link.origin, link.destination = new.origin, new.destination
        link.origin_dataset_id, link.destination_dataset_id = new.origin_dataset_id, new.destination_dataset_id
        link.match_type = new.match_type.value
        link.hits, link.score, link.reason = new.hits, new.score, new.reason
        link.status, link.curated_by, link.model = status, curated_by, model
        link.updated_at = utcnow()
        saved.append(link)
    await session.flush()
    await bump_version(session, namespace_id)
    return saved


async def drop_suggested(session: AsyncSession, namespace_id: str, dataset_ids: Iterable[str]) -> int:
    """Forget the suggestions touching these datasets (before a new curation run suggests again)."""
    ids = list(dataset_ids)
    result = await session.execute(
        delete(Link).where(
            Link.namespace_id == namespace_id,
            Link.status == SUGGESTED,
            or_(Link.origin_dataset_id.in_(ids), Link.destination_dataset_id.in_(ids)),
        )
    )
    await bump_version(session, namespace_id)
    return int(result.rowcount or 0)  # type: ignore[attr-defined]


async def set_status(session: AsyncSession, link: Link, status: str) -> Link:
    link.status = status
    link.updated_at = utcnow()
    await session.flush()
    await bump_version(session, link.namespace_id)
    return link


async def delete_link(session: AsyncSession, link: Link) -> None:
    await session.delete(link)
    await session.flush()
    await bump_version(session, link.namespace_id)


async def remove_dataset_links(session: AsyncSession, dataset_id: str) -> int:
    """Delete every link from or to a dataset (clearing a dataset removes its links); returns how many."""
    namespaces = (
        await session.execute(
            select(Link.namespace_id)
            .where(or_(Link.origin_dataset_id == dataset_id, Link.destination_dataset_id == dataset_id))
            .distinct()
        )
    ).scalars()
    namespace_ids = list(namespaces)
    result = await session.execute(
        delete(Link).where(or_(Link.origin_dataset_id == dataset_id, Link.destination_dataset_id == dataset_id))
    )
    for namespace_id in namespace_ids:
        await bump_version(session, namespace_id)
    return int(result.rowcount or 0)  # type: ignore[attr-defined]


async def bump_version(session: AsyncSession, namespace_id: str) -> None:
    """Count a change to the namespace's links (upsert, so concurrent writers both count)."""
    dialect = session.get_bind().dialect.name
    insert = postgresql.insert if dialect == "postgresql" else sqlite.insert
    statement = insert(LinkVersion).values(namespace_id=namespace_id, version=1)
    await session.execute(
        statement.on_conflict_do_update(
            index_elements=[LinkVersion.namespace_id], set_={"version": LinkVersion.version + 1}
        )
    )


async def links_version(session: AsyncSession, namespace_id: str) -> tuple[int, int]:
    """A stamp that changes whenever the namespace's active links change: the change counter,
    and the number of active links (which also moves when a dataset delete cascades)."""
    version = (
        await session.execute(select(LinkVersion.version).where(LinkVersion.namespace_id == namespace_id))
    ).scalar_one_or_none()
    active = (
        await session.execute(
            select(func.count()).select_from(Link).where(Link.namespace_id == namespace_id, Link.status == ACTIVE)
        )
    ).scalar_one()
    return int(version or 0), int(active)
