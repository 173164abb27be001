"""Namespaces and datasets: the list, creating a dataset, a dataset's page (schema, types, row
count, rows in pages by cursor, downloads, ingestion attempts, upload), editing, renaming,
clearing and deleting one, retrying an attempt."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from datawell.console.calls import ApiError
from datawell.console.pages import Failure, api, form, redirect, render, signed_in
from datawell.console.session import Session
from datawell.errors import NotFound
from datawell.services import Services
from datawell.storage.access import Permission, allows, authorize, permission_of, readable_namespaces
from datawell.storage.datasets import readable_dataset
from datawell.storage.export import MEDIA_TYPES
from datawell.tools.rows import DatasetRows, parse_filter

ROWS_PER_PAGE = 50
ATTEMPTS_SHOWN = 10
ACTIVE = ("QUEUED", "RUNNING")


def dataset_path(owner: str, namespace: str, name: str) -> str:
    return "/".join(quote(part, safe="") for part in (owner, namespace, name))


def dataset_of(request: Request) -> tuple[str, str, str, str]:
    """The page's dataset: owner, namespace, name, and its path in API and console addresses."""
    owner, namespace, name = (request.path_params[k] for k in ("owner", "namespace", "dataset"))
    return owner, namespace, name, dataset_path(owner, namespace, name)


@signed_in
async def home(request: Request, session: Session) -> Response:
    async with request.state.services.db.session() as db:
        namespaces = await readable_namespaces(db, session.user)
    listed = []
    for namespace in namespaces:
        owner, name = quote(namespace.owner, safe=""), quote(namespace.name, safe="")
        datasets = await api(request, session).get(f"/datasets/{owner}/{name}")
        listed.append({"owner": namespace.owner, "name": namespace.name, "datasets": datasets["data"]})
    return render(request, "home.html", {"namespaces": listed}, session=session)


def _schema_from(fields: list[str], descriptions: list[str]) -> dict[str, str]:
    return {name.strip(): text.strip() for name, text in zip(fields, descriptions, strict=False) if name.strip()}


@signed_in
async def new_dataset(request: Request, session: Session) -> Response:
    context: dict[str, Any] = {"values": {}, "fields": [("", "")]}
    if request.method == "POST":
        submitted = await request.form()
        values = await form(request)
        names = [str(v) for v in submitted.getlist("field")]
        texts = [str(v) for v in submitted.getlist("field_description")]
        schema = _schema_from(names, texts)
        namespace, name = values.get("namespace", "").strip(), values.get("name", "").strip()
        body = {"dataDescription": values.get("description", ""), "schemaDefinition": schema}
        try:
            await api(request, session).post(f"/ingest/new/{quote(namespace, safe='')}/{quote(name, safe='')}", body)
        except ApiError as exc:
            fields = list(zip(names, texts, strict=False)) or [("", "")]
            context = {"values": values, "fields": fields, "failure": Failure(exc)}
            return render(request, "new_dataset.html", context, status=exc.status, session=session)
        target = f"/datasets/{dataset_path(session.user.username, namespace, name)}"
        return redirect(target, f"Dataset {namespace}/{name} created.")
    return render(request, "new_dataset.html", context, session=session)


async def row_count(request: Request, session: Session, owner: str, namespace: str, name: str) -> int:
    """How many rows the dataset has, through the query tools (the caller's read access applies)."""
    services: Services = request.state.services
    async with services.db.session() as db:
        ref = await authorize(db, session.user, owner, namespace, Permission.READ)
    table = '"' + name.replace('"', '""') + '"'
    counted = await services.query_tools.run(session.user, ref, f"SELECT COUNT(*) AS n FROM {table}")
    return int(counted.rows[0]["n"]) if counted.rows else 0


async def rows_page(request: Request, session: Session, path: str, cursor: str | None) -> dict[str, Any]:
    """A page of rows from the rows endpoint, paged by its cursor; a cursor it refuses shows the first page."""
    calls = api(request, session)
    try:
        page = await calls.get(f"/data/{path}/rows", pageSize=ROWS_PER_PAGE, cursor=cursor)
    except ApiError:
        page, cursor = await calls.get(f"/data/{path}/rows", pageSize=ROWS_PER_PAGE), None
    return {"rows": page["data"], "next": page["metadata"]["nextCursor"], "paged": cursor is not None}


async def _writable(request: Request, session: Session, owner: str, namespace: str) -> bool:
    async with request.state.services.db.session() as db:
        ref = await authorize(db, session.user, owner, namespace, Permission.READ)
        return allows(await permission_of(db, session.user, ref), Permission.WRITE)


@signed_in
async def dataset_page(request: Request, session: Session) -> Response:
    owner, namespace, name, path = dataset_of(request)
    dataset = await api(request, session).get(f"/datasets/{path}")
    context = {
        "dataset": dataset,
        "path": path,
        "count": await row_count(request, session, owner, namespace, name),
        "rows": await rows_page(request, session, path, request.query_params.get("cursor")),
        "attempts": await attempts_context(request, session, path),
        "writable": await _writable(request, session, owner, namespace),
    }
    return render(request, "dataset.html", context, session=session)


async def attempts_context(request: Request, session: Session, path: str) -> dict[str, Any]:
    listed = await api(request, session).get(f"/data/{path}/ingest/attempts", pageSize=ATTEMPTS_SHOWN)
    items = listed["data"]
    return {"items": items, "live": any(a["status"] in ACTIVE for a in items), "path": path}


@signed_in
async def attempts(request: Request, session: Session) -> Response:
    owner, namespace, _, path = dataset_of(request)
    context = {
        "attempts": await attempts_context(request, session, path),
        "writable": await _writable(request, session, owner, namespace),
    }
    return render(request, "attempts.html", context, session=session)


@signed_in
async def retry(request: Request, session: Session) -> Response:
    ingestion_id = quote(request.path_params["ingestionId"], safe="")
    values = await form(request)
    retried = await api(request, session).post(f"/ingestionTracking/{ingestion_id}/retry")
    back = values.get("back", "/")
    return redirect(back if back.startswith("/datasets/") else "/", f"Retrying as ingestion {retried['id']}.")


@signed_in
async def clear(request: Request, session: Session) -> Response:
    owner, namespace, name, path = dataset_of(request)
    calls = api(request, session)
    if request.method == "POST":
        done = await calls.post(f"/data/{path}/clear")
        notice = (
            f"Cleared {namespace}/{name}: {done['rowsDeleted']} rows, {done['vectorsDeleted']} vectors and "
            f"{done['linksDeleted']} links deleted; {done['ingestionsCancelled']} ingestions stopped."
        )
        return redirect(f"/datasets/{path}", notice)
    dataset = await calls.get(f"/datasets/{path}")
    links = await calls.get(f"/ontology/{quote(owner, safe='')}/{quote(namespace, safe='')}/links", dataset=name)
    listed = await calls.get(f"/data/{path}/ingest/attempts", pageSize=100)
    context = {
        "dataset": dataset,
        "path": path,
        "rows": await row_count(request, session, owner, namespace, name),
        "links": links["data"],
        "active": [a for a in listed["data"] if a["status"] in ACTIVE],
    }
    return render(request, "clear.html", context, session=session)


@signed_in
async def export(request: Request, session: Session) -> Response:
    """Every row (matching `filter`, if given) as a file, streamed as the API streams it."""
    owner, namespace, name, _ = dataset_of(request)
    format = request.path_params["format"]
    if format not in MEDIA_TYPES:
        raise NotFound(f"no export format {format!r}: jsonl, csv or parquet")
    services: Services = request.state.services
    ref, dataset = await readable_dataset(services.db.direct, session.user, owner, namespace, name)
    raw_filter = request.query_params.get("filter") or None
    condition = parse_filter(raw_filter) if raw_filter else None
    reader = DatasetRows(services.query_tools, session.user, ref, dataset.name)
    body = await reader.export(list(dataset.schema_definition), condition, format)  # type: ignore[arg-type]
    disposition = f'attachment; filename="{dataset.name}.{format}"'
    return StreamingResponse(body, media_type=MEDIA_TYPES[format], headers={"Content-Disposition": disposition})


@signed_in
async def edit(request: Request, session: Session) -> Response:
    """Change the description and fields, and rename; the API applies the namespace's write rule."""
    owner, namespace, name, path = dataset_of(request)
    calls = api(request, session)
    dataset = await calls.get(f"/datasets/{path}")
    context: dict[str, Any] = {"dataset": dataset, "path": path, "fields": list(dataset["schemaDefinition"].items())}
    if request.method == "POST":
        submitted = await request.form()
        values = await form(request)
        names = [str(v) for v in submitted.getlist("field")]
        texts = [str(v) for v in submitted.getlist("field_description")]
        body = {"dataDescription": values.get("description", ""), "schemaDefinition": _schema_from(names, texts)}
        new_name = values.get("name", "").strip() or name
        try:
            await calls.put(f"/data/{path}/inferDefinition", body, force="true" if values.get("force") else None)
            if new_name != name:
                await calls.post(f"/data/{path}/rename", {"name": new_name})
        except ApiError as exc:
            context |= {"fields": list(zip(names, texts, strict=False)), "failure": Failure(exc), "values": values}
            return render(request, "edit_dataset.html", context, status=exc.status, session=session)
        return redirect(f"/datasets/{dataset_path(owner, namespace, new_name)}", f"Saved {namespace}/{new_name}.")
    return render(request, "edit_dataset.html", context | {"values": {}}, session=session)


@signed_in
async def delete(request: Request, session: Session) -> Response:
    owner, namespace, name, path = dataset_of(request)
    calls = api(request, session)
    if request.method == "POST":
        done = await calls.delete(f"/data/{path}")
        notice = (
            f"Deleted {namespace}/{name}: {done['rowsDeleted']} rows, {done['vectorsDeleted']} vectors, "
            f"{done['linksDeleted']} links, {done['objectsDeleted']} files and {done['examplesDeleted']} verified "
            f"examples; {done['ingestionsEnded']} ingestions stopped."
        )
        return redirect("/", notice)
    context = {
        "dataset": await calls.get(f"/datasets/{path}"),
        "path": path,
        "rows": await row_count(request, session, owner, namespace, name),
    }
    return render(request, "delete.html", context, session=session)
