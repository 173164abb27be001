"""BuildSpecs: list, create, view and edit (the edit names the version it started from, so a
change saved meanwhile is shown as a conflict, not overwritten), delete."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from starlette.requests import Request
from starlette.responses import Response

from datawell.console.calls import ApiError
from datawell.console.pages import Failure, api, form, redirect, render, signed_in
from datawell.console.session import Session


def coordinate(text: str) -> dict[str, str]:
    """`owner/namespace/dataset` as the API's DatasetCoordinate (a malformed one is left for the API to refuse)."""
    owner, namespace, dataset = ([*text.strip().split("/", 2), "", ""])[:3]
    return {"owner": owner, "namespace": namespace, "datasetName": dataset}


def coordinate_text(value: dict[str, str]) -> str:
    return f"{value['owner']}/{value['namespace']}/{value['datasetName']}"


def spec_form(spec: dict[str, Any]) -> dict[str, str]:
    return {
        "sources": "\n".join(coordinate_text(s) for s in spec["sources"]),
        "destination": coordinate_text(spec["destination"]),
        "payload": spec["code"]["payload"],
        "version": str(spec["version"]),
    }


def spec_body(values: dict[str, str]) -> dict[str, Any]:
    sources = [coordinate(line) for line in values.get("sources", "").splitlines() if line.strip()]
    return {"sources": sources, "destination": coordinate(values.get("destination", "")),
            "code": {"payload": values.get("payload", "")}}  # fmt: skip


@signed_in
async def list_specs(request: Request, session: Session) -> Response:
    specs = (await api(request, session).get("/build-specs"))["data"]
    listed = [{**s, "source_text": ", ".join(coordinate_text(c) for c in s["sources"]),
               "destination_text": coordinate_text(s["destination"])} for s in specs]  # fmt: skip
    return render(request, "specs.html", {"specs": listed}, session=session)


@signed_in
async def new_spec(request: Request, session: Session) -> Response:
    values = {"sources": "", "destination": "", "payload": "", "version": ""}
    if request.method == "POST":
        values = await form(request)
        try:
            created = await api(request, session).post("/build-specs", spec_body(values))
        except ApiError as exc:
            context = {"spec": None, "values": values, "failure": Failure(exc)}
            return render(request, "spec.html", context, status=exc.status, session=session)
        return redirect(f"/build-specs/{created['id']}", "BuildSpec created.")
    return render(request, "spec.html", {"spec": None, "values": values}, session=session)


@signed_in
async def spec_page(request: Request, session: Session) -> Response:
    spec_id = quote(request.path_params["specId"], safe="")
    calls = api(request, session)
    if request.method == "GET":
        spec = await calls.get(f"/build-specs/{spec_id}")
        return render(request, "spec.html", {"spec": spec, "values": spec_form(spec)}, session=session)
    values = await form(request)
    try:
        saved = await calls.call(
            "PUT", f"/build-specs/{spec_id}", json=spec_body(values), headers={"If-Match": values.get("version", "")}
        )
    except ApiError as exc:
        current = await calls.get(f"/build-specs/{spec_id}")
        context: dict[str, Any] = {"spec": current, "values": values, "failure": Failure(exc)}
        if exc.status == 409:
            # Keep the user's text and show what was saved meanwhile beside it; saving again
            # is then a deliberate replacement of that version.
            context["conflict"] = spec_form(current)
            context["values"] = {**values, "version": str(current["version"])}
        return render(request, "spec.html", context, status=exc.status, session=session)
    return redirect(f"/build-specs/{spec_id}", f"Saved as version {saved['version']}.")


@signed_in
async def delete_spec(request: Request, session: Session) -> Response:
    spec_id = quote(request.path_params["specId"], safe="")
    await api(request, session).call("DELETE", f"/build-specs/{spec_id}")
    return redirect("/build-specs", "BuildSpec deleted.")
