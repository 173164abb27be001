"""The DataLinks SDK's links and ontology: `/links/...` previews, rebuilds and adds links,
`/ontology/...` reads and activates them."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field
from sqlalchemy.ext.asyncio import AsyncSession
from starlette.requests import Request
from starlette.responses import JSONResponse

from datawell.api.routing import READABLE_DATASET, WRITABLE_DATASET, Context, Router, named_user
from datawell.api.schemas import ApiModel, WholeNumber
from datawell.errors import InvalidInput, SubError
from datawell.ontology.candidate import Candidate
from datawell.ontology.candidates import find_candidates
from datawell.ontology.links import (
    ACTIVE,
    SUGGESTED,
    FieldRef,
    MatchType,
    NewLink,
    bump_version,
    list_links,
    save_links,
)
from datawell.services import Services
from datawell.storage.access import NamespaceRef, Permission, authorize
from datawell.storage.datasets import DatasetRef, list_datasets
from datawell.storage.tables import Link, User

router = Router("datalinks")


class ApiLink(ApiModel):
    origin: str
    destination: str
    hits: WholeNumber = Field(ge=0, le=2**62)
    match_type: str


class ColumnId(ApiModel):
    username: str
    namespace: str
    dataset: str
    column_name: str


class AddLink(ApiModel):
    model_config = ApiModel.model_config | {"alias_generator": None}
    origin: ColumnId = Field(alias="from")
    to: ColumnId
    match_type: Literal["ExactMatch", "GeoMatch"] = Field(alias="matchType")
    options: dict[str, Any] | None = None


class LinkData(ApiModel):
    data: list[dict[str, Any]] = Field(default_factory=list)
    link: dict[str, dict[str, Any] | None] | None = None


class OntologyChange(ApiModel):
    add: list[ApiLink] | None = None
    remove: list[ApiLink] | None = None


def api_link(link: Link | Candidate) -> ApiLink:
    kind = link.match_type if isinstance(link.match_type, str) else link.match_type.value
    return ApiLink(origin=str(link.origin), destination=str(link.destination), hits=link.hits, match_type=kind)


def wanted_kinds(link: dict[str, Any] | None) -> set[MatchType]:
    """The candidate kinds a DataLinks `link` config asks for (all when none)."""
    if not link:
        return set(MatchType)
    kinds: set[MatchType] = set()
    if "ExactMatch" in link:
        kinds |= {MatchType.EXACT, MatchType.NORMALIZED}
    if "GeoMatch" in link:
        kinds.add(MatchType.GEO)
    return kinds or set(MatchType)


async def rebuild(services: Services, dataset: DatasetRef, link: dict[str, Any] | None, *, save: bool) -> list[ApiLink]:
    """The link candidates from and to the dataset, computed from the stored data; saved as
    suggestions when `save`."""
    async with services.db.session() as session:
        datasets = await list_datasets(session, dataset.namespace)
    found = await find_candidates(services.rows, services.vectors, services.embedder, datasets, focus=dataset.record.id)
    kinds = wanted_kinds(link)
    found = [c for c in found if c.match_type in kinds]
    if save:
        new = [
            NewLink(
                str(c.origin),
                str(c.destination),
                c.origin_dataset_id,
                c.destination_dataset_id,
                c.match_type,
                c.hits,
                c.score,
                c.evidence,
            )
            for c in found
        ]
        async with services.db.session() as session:
            await save_links(session, dataset.namespace.id, new, status=SUGGESTED, curated_by=None, model="")
    return [api_link(c) for c in found]


@router.post(
    "/links/preview/{username}/{namespace}/{datasetName}", list[ApiLink], body=LinkData, resolve=READABLE_DATASET
)
async def preview_links(
    request: Request, ctx: Context, user: User, body: LinkData, dataset: DatasetRef
) -> list[ApiLink]:
    """Preview a dataset's link candidates

    The candidates the stored data gives (of the kinds `link` names), nothing saved."""
    return await rebuild(ctx.services, dataset, body.link, save=False)


@router.post("/links/{username}/{namespace}/{datasetName}", list[ApiLink], body=LinkData, resolve=WRITABLE_DATASET)
async def rebuild_links(
    request: Request, ctx: Context, user: User, body: LinkData, dataset: DatasetRef
) -> list[ApiLink]:
    """Recompute a dataset's link candidates

    As preview, and the candidates are saved as suggested links (active links stay)."""
    return await rebuild(ctx.services, dataset, body.link, save=True)


async def dataset_links(ctx: Context, dataset: DatasetRef, status: str | None) -> list[ApiLink]:
    async with ctx.services.db.session() as session:
        links = await list_links(session, dataset.namespace.id, status=status, dataset_id=dataset.record.id)
    return [api_link(link) for link in links]


@router.get("/links/{username}/{namespace}/{datasetName}", list[ApiLink], resolve=READABLE_DATASET)
async def load_links(request: Request, ctx: Context, user: User, dataset: DatasetRef) -> list[ApiLink]:
    """A dataset's links

    The dataset's active and suggested links."""
    return await dataset_links(ctx, dataset, None)


@router.get("/ontology/{username}/{namespace}/{datasetName}", list[ApiLink], resolve=READABLE_DATASET)
async def ontology(request: Request, ctx: Context, user: User, dataset: DatasetRef) -> list[ApiLink]:
    """A dataset's ontology (active links)

    The dataset's active links: the joins the planners use."""
    return await dataset_links(ctx, dataset, ACTIVE)


def link_between(origin: FieldRef, destination: FieldRef, datasets: dict[str, DatasetRef]) -> tuple[str, str]:
    """The dataset ids of a link's ends, which must be datasets of the namespace with those fields."""
    ids = []
    for end in (origin, destination):
        dataset = datasets.get(end.dataset)
        if dataset is None or dataset.namespace.name != end.namespace:
            raise InvalidInput(
                f"no dataset {end.namespace}/{end.dataset} in this namespace",
                sub_errors=[SubError("unknown_dataset", f"{end}: links join datasets of one namespace")],
            )
        unknown = [f for f in end.fields if f not in dataset.record.schema_definition]
        if unknown:
            raise InvalidInput(
                f"no field {unknown[0]!r} in {end.namespace}/{end.dataset}",
                sub_errors=[SubError("unknown_field", f"{end}: unknown field {unknown[0]!r}")],
            )
        ids.append(dataset.record.id)
    return ids[0], ids[1]


async def activate(
    session: AsyncSession, user: User, namespace: NamespaceRef, links: list[tuple[str, str, str, int]]
) -> list[Link]:
    """Store links (origin, destination, match type, hits) as active, checked against the namespace."""
    datasets = {d.name: d for d in await list_datasets(session, namespace)}
    new = []
    for origin, destination, kind, hits in links:
        try:
            ends = FieldRef.parse(origin), FieldRef.parse(destination)
            match_type = MatchType(kind)
        except ValueError as exc:
            raise InvalidInput("invalid link", sub_errors=[SubError("invalid_link", str(exc))]) from None
        origin_id, destination_id = link_between(*ends, datasets)
        new.append(
            NewLink(origin, destination, origin_id, destination_id, match_type, hits, 1.0, f"added by {user.username}")
        )
    return await save_links(session, namespace.id, new, status=ACTIVE, curated_by=user.id, model="")


@router.post(
    "/ontology/{username}/{namespace}/{datasetName}", body=OntologyChange, status=204, resolve=WRITABLE_DATASET
)
async def save_ontology(request: Request, ctx: Context, user: User, body: OntologyChange, dataset: DatasetRef) -> None:
    """Change a dataset's ontology

    `add` activates links (`namespace/dataset.field` ends in the dataset's namespace);
    `remove` deletes the dataset's links with those ends."""
    async with ctx.services.db.session() as session:
        await activate(
            session,
            user,
            dataset.namespace,
            [(li.origin, li.destination, li.match_type, li.hits) for li in body.add or []],
        )
        gone = {frozenset((li.origin, li.destination)) for li in body.remove or []}
        if gone:
            for link in await list_links(session, dataset.namespace.id, dataset_id=dataset.record.id):
                if frozenset((link.origin, link.destination)) in gone:
                    await session.delete(link)
            await bump_version(session, dataset.namespace.id)


@router.post("/links/add", ApiLink, body=AddLink, status=201, also=(200,), errors=(403, 404))
async def add_link(request: Request, ctx: Context, user: User, body: AddLink) -> Any:
    """Add a link between two columns

    Activates a link between two fields of one namespace: 201 when it is new, 200 when
    it was already there (active)."""
    ends = [body.origin, body.to]
    owners = {named_user(end.username, user) for end in ends}
    if len(owners) != 1 or len({end.namespace for end in ends}) != 1:
        raise InvalidInput(
            "links join fields of one namespace",
            sub_errors=[SubError("cross_namespace", "from, to: name the same owner and namespace")],
        )
    origin = f"{body.origin.namespace}/{body.origin.dataset}.{body.origin.column_name}"
    destination = f"{body.to.namespace}/{body.to.dataset}.{body.to.column_name}"
    async with ctx.services.db.session() as session:
        namespace = await authorize(session, user, owners.pop(), body.origin.namespace, Permission.WRITE)
        before = {
            frozenset((link.origin, link.destination))
            for link in await list_links(session, namespace.id, status=ACTIVE)
        }
        (saved,) = await activate(session, user, namespace, [(origin, destination, body.match_type, 0)])
        status = 200 if frozenset((origin, destination)) in before else 201
        return JSONResponse(api_link(saved).model_dump(by_alias=True), status_code=status)
