"""The ontology: link curation by the curator agent, listing and deleting links.

A namespace in a request is either the caller's own (`shop`) or `owner/namespace`
(`alice/shop`). Curation and deletion need write access to it, listing needs read access."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field
from sqlalchemy.ext.asyncio import AsyncSession
from starlette.requests import Request
from starlette.responses import JSONResponse

from datawell.api.routing import (
    Context,
    NamespaceNamed,
    NamespacePath,
    PathModel,
    Resolver,
    Router,
    namespace_for,
    uuid_in_path,
)
from datawell.api.schemas import ApiModel
from datawell.client.models import CuratedLink, LinkList
from datawell.client.models import Curation as CurateLinksResponse
from datawell.client.models import Link as LinkResponse
from datawell.errors import NotFound
from datawell.llm.models import StageChoices
from datawell.ontology.links import delete_link, get_link, list_links, set_status
from datawell.runs import CurateRequest
from datawell.storage.access import NamespaceRef, Permission, namespace_by_id, namespace_named, require_seen
from datawell.storage.datasets import get_dataset
from datawell.storage.tables import Link, User
from datawell.storage.users import usernames

router = Router("ontology")

NAMESPACE_PATTERN = r"^[A-Za-z][A-Za-z0-9_-]{0,63}(/[A-Za-z][A-Za-z0-9_-]{0,63})?$"
Status = Literal["Suggested", "Active"]


class CurateLinksRequest(ApiModel):
    namespace: str = Field(
        pattern=NAMESPACE_PATTERN,
        description="Namespace containing the dataset(s) to curate: the caller's own namespace by name, "
        "or another user's as `owner/namespace`.",
    )
    dataset: str | None = Field(
        None, description="When given, only this dataset is curated; when omitted, all datasets of the namespace."
    )
    model: str | None = Field(None, description="LLM model to use")
    provider: str | None = Field(None, description="LLM provider to use")
    activate: bool = Field(
        False,
        description="When true, curated links are activated (added to the ontology); when false, the links are "
        "only returned (and kept as suggestions, which do not feed the planners).",
    )


class LinkQuery(ApiModel):
    status: Status | None = Field(None, description="Only links with this status")
    dataset: str | None = Field(None, description="Only links from or to this dataset")


class LinkUpdate(ApiModel):
    status: Status


def namespace_coordinate(user: User, namespace: str) -> tuple[str, str]:
    owner, _, name = namespace.rpartition("/")
    return owner or user.username, name


async def curators(session: AsyncSession, links: list[Link]) -> dict[str, str]:
    return await usernames(session, {link.curated_by for link in links if link.curated_by is not None})


def link_response(link: Link, names: dict[str, str]) -> LinkResponse:
    """The stored link under its own field names, with its curator's username for the user id."""
    curator = names.get(link.curated_by) if link.curated_by is not None else None
    return LinkResponse.model_validate(link, from_attributes=True).model_copy(update={"curated_by": curator})


@router.post("/ontology/curate-links", CurateLinksResponse, body=CurateLinksRequest, errors=(403, 404, 502, 503))
async def curate_links(request: Request, ctx: Context, user: User, body: CurateLinksRequest) -> JSONResponse:
    """Curate links between datasets

    Links curated successfully. Candidates are computed from the data (shared values,
    near-identical spellings, nearby coordinates, similar names); the curator model selects the
    meaningful ones. With `activate` true they join the ontology and the response carries only
    the counts; otherwise they are returned in `curatedLinks` and kept as suggestions."""
    runs = ctx.runs
    owner, name = namespace_coordinate(user, body.namespace)
    async with runs.services.db.session() as session:
        namespace = await namespace_named(session, owner, name)
    curation = CurateRequest(
        user=user,
        namespace=namespace,
        dataset=body.dataset,
        activate=body.activate,
        choices=StageChoices.named(body.model, body.provider),
    )
    result = await (await runs.start_curator(curation)).result()
    if result.failure is not None:
        raise result.failure.error
    assert result.links is not None  # a curator run that did not fail ends with its links
    curated = result.links
    response = CurateLinksResponse(datasets_processed=curated.datasets_processed, total_selected=len(curated.links))
    if not curated.activated:
        response.curated_links = [
            CuratedLink(origin=link.origin, destination=link.destination, hits=link.hits, match_type=link.match_type)
            for link in curated.links
        ]
    return JSONResponse(response.model_dump(mode="json", by_alias=True, exclude_none=True))


class OwnerNamespacePath(NamespacePath):
    """`/ontology/{owner}/{namespace}/...`: the owner's namespace."""

    username: str = Field(alias="owner")


class LinkPath(PathModel):
    link_id: Annotated[str, uuid_in_path("link")]


async def _writable_link(ctx: Context, user: User, path: LinkPath) -> Link:
    """The link, if the caller may change it: 404 when it does not exist or the caller cannot
    even read its namespace, 403 when the caller can read but not write it."""
    async with ctx.services.db.read() as session:
        link = await get_link(session, path.link_id)
        namespace = await namespace_by_id(session, link.namespace_id)
        await require_seen(session, user, namespace, Permission.WRITE, NotFound(f"link {path.link_id} does not exist"))
    return link


WRITABLE_LINK = Resolver("link", LinkPath, _writable_link, (403, 404))


async def _list(ctx: Context, query: LinkQuery, namespace: NamespaceRef) -> LinkList:
    async with ctx.services.db.read() as session:
        dataset_id = (await get_dataset(session, namespace, query.dataset)).record.id if query.dataset else None
        links = await list_links(session, namespace.id, status=query.status, dataset_id=dataset_id)
        names = await curators(session, links)
    return LinkList(data=[link_response(link, names) for link in links])


@router.get(
    "/ontology/{namespace}/links", LinkList, query=LinkQuery, resolve=namespace_for(Permission.READ, NamespaceNamed)
)
async def list_own(request: Request, ctx: Context, user: User, query: LinkQuery, namespace: NamespaceRef) -> LinkList:
    """List the links of one of the caller's namespaces

    Lists the links of the caller's namespace, optionally by status and by dataset."""
    return await _list(ctx, query, namespace)


@router.get(
    "/ontology/{owner}/{namespace}/links",
    LinkList,
    query=LinkQuery,
    resolve=namespace_for(Permission.READ, OwnerNamespacePath),
)
async def list_any(request: Request, ctx: Context, user: User, query: LinkQuery, namespace: NamespaceRef) -> LinkList:
    """List the links of a namespace

    Lists the links of a namespace the caller owns or holds a grant on."""
    return await _list(ctx, query, namespace)


@router.patch("/ontology/links/{linkId}", LinkResponse, body=LinkUpdate, resolve=WRITABLE_LINK)
async def update(request: Request, ctx: Context, user: User, body: LinkUpdate, link: Link) -> LinkResponse:
    """Activate or suspend a link

    Sets a link's status: `Active` adds a suggestion to the ontology, `Suggested` takes a link
    out of it without forgetting it."""
    async with ctx.services.db.session() as session:
        session.add(link)
        link = await set_status(session, link, body.status)
        return link_response(link, await curators(session, [link]))


@router.delete("/ontology/links/{linkId}", status=204, resolve=WRITABLE_LINK)
async def delete(request: Request, ctx: Context, user: User, link: Link) -> None:
    """Delete a link

    Deletes one link from the ontology (active or suggested)."""
    async with ctx.services.db.session() as session:
        session.add(link)
        await delete_link(session, link)
