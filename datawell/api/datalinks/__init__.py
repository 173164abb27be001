"""The DataLinks SDK's paths and shapes (docs/datalinks.md), on the services the SPEC routes use:
JSON rows enter the same ingestion pipeline as uploaded files, `/finish` is `/complete` with
the SDK's extra fields, and the listings read the same dataset records and grants.

A path's username `self` is the caller's (`api.routing.current_user`), so `/data/self/...`
is the caller's own data.

One module a route group; their operations are mounted in this order."""

from __future__ import annotations

from datawell.api.datalinks import agent_runs, conversations, datasets, ingest, links, permissions, query, usage, users
from datawell.api.routing import Router

router = Router("datalinks")
router.operations = [
    *datasets.router.operations,
    *ingest.router.operations,
    *links.router.operations,
    *users.router.operations,
    *permissions.router.operations,
    *query.router.operations,
    *conversations.router.operations,
    *agent_runs.router.operations,
    *usage.router.operations,
]
