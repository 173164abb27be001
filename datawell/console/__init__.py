"""The web console, served at `/` beside the API: server-rendered pages (Starlette and Jinja2)
with htmx and its SSE extension, both vendored under `static/` so the service runs offline.

It signs users in with the API's tokens (`session.py`), asks the API itself for everything the
API offers (`calls.py`) and starts the assistant through `datawell.runs.Runs` like the API.
`routes()` is what `datawell.app` mounts; `ConsoleCookies` is its middleware."""

from __future__ import annotations

from pathlib import Path

from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles

from datawell.console import account, ask, datasets, evals, ontology, runs, specs
from datawell.console.session import ConsoleCookies

__all__ = ["ConsoleCookies", "routes"]

DATASET = "/datasets/{owner}/{namespace}/{dataset}"
NAMESPACE = "{owner}/{namespace}"


def routes() -> list[BaseRoute]:
    return [
        Route("/", datasets.home),
        Route("/signin", account.sign_in_page, methods=["GET"]),
        Route("/signin", account.sign_in, methods=["POST"]),
        Route("/signout", account.sign_out, methods=["POST"]),
        Route("/tokens", account.tokens, methods=["GET"]),
        Route("/tokens", account.issue_token, methods=["POST"]),
        Route("/tokens/{tokenId}/revoke", account.revoke, methods=["POST"]),
        Route("/new-dataset", datasets.new_dataset, methods=["GET", "POST"]),
        Route(DATASET, datasets.dataset_page),
        Route(DATASET + "/attempts", datasets.attempts),
        Route(DATASET + "/clear", datasets.clear, methods=["GET", "POST"]),
        Route(DATASET + "/edit", datasets.edit, methods=["GET", "POST"]),
        Route(DATASET + "/delete", datasets.delete, methods=["GET", "POST"]),
        Route(DATASET + "/rows.{format}", datasets.export),
        Route("/ingestions/{ingestionId}/retry", datasets.retry, methods=["POST"]),
        Route(f"/ask/{NAMESPACE}", ask.ask_page, methods=["GET"]),
        Route(f"/ask/{NAMESPACE}", ask.ask, methods=["POST"]),
        Route(f"/ask/{NAMESPACE}/stream", ask.stream),
        Route(f"/ontology/{NAMESPACE}", ontology.ontology_page),
        Route(f"/ontology/{NAMESPACE}/curate", ontology.curate, methods=["POST"]),
        Route("/links/{linkId}", ontology.change_link, methods=["POST"]),
        Route("/build-specs", specs.list_specs),
        Route("/build-specs/new", specs.new_spec, methods=["GET", "POST"]),
        Route("/build-specs/{specId}", specs.spec_page, methods=["GET", "POST"]),
        Route("/build-specs/{specId}/delete", specs.delete_spec, methods=["POST"]),
        Route("/runs", runs.runs_page),
        Route("/runs/{runId}", runs.run_page),
        Route("/evals", evals.evals_page),
        Route("/evals/{report:path}", evals.report_page),
        Mount("/static", StaticFiles(directory=Path(__file__).parent / "static"), name="static"),
    ]
