"""Eval reports: the runs `datawell eval` wrote under the configured folder (`DATAWELL_EVALS_DIR`),
each report's totals, groups and cases. Read-only; nothing outside that folder is opened."""

from __future__ import annotations

from pathlib import Path

from pydantic import ValidationError
from starlette.requests import Request
from starlette.responses import Response

from datawell.console.pages import render, signed_in
from datawell.console.session import Session
from datawell.errors import NotFound
from datawell.evals.report import Report, read_report

REPORT_FILE = "report.json"


def _reports(folder: Path) -> list[tuple[str, Report | None]]:
    """Every report under the folder by its relative path; None for one that cannot be read."""
    found: list[tuple[str, Report | None]] = []
    for path in sorted(folder.rglob(REPORT_FILE)):
        name = path.parent.relative_to(folder).as_posix()
        try:
            found.append((name, read_report(path)))
        except (OSError, ValueError, ValidationError):
            found.append((name, None))
    return found


@signed_in
async def evals_page(request: Request, session: Session) -> Response:
    folder: Path = request.state.services.settings.evals_dir
    reports = _reports(folder) if folder.is_dir() else []
    return render(request, "evals.html", {"folder": folder, "reports": reports}, session=session)


@signed_in
async def report_page(request: Request, session: Session) -> Response:
    folder = request.state.services.settings.evals_dir.resolve()
    name = request.path_params["report"]
    path = (folder / name / REPORT_FILE).resolve()
    if not path.is_relative_to(folder) or not path.is_file():
        raise NotFound(f"no eval report {name!r} in {folder}")
    try:
        report = read_report(path)
    except (OSError, ValueError, ValidationError):
        raise NotFound(f"the eval report {name!r} cannot be read") from None
    return render(request, "report.html", {"name": name, "report": report}, session=session)
