"""The stored links a query may join on: a namespace's active links. Curating them is
`datawell.ontology.links`; the query tools read them here, as the catalog's neighbours."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from datawell.storage.tables import Link

SUGGESTED = "Suggested"
ACTIVE = "Active"


async def active_links(session: AsyncSession, namespace_id: str) -> list[Link]:
    """The namespace's active links (`origin`/`destination` as `namespace/dataset.field`)."""
    rows = await session.execute(
        select(Link)
        .where(Link.namespace_id == namespace_id, Link.status == ACTIVE)
        .order_by(Link.origin, Link.destination)
    )
    return list(rows.scalars())
