"""The DataLinks SDK's calls at the server's root as well as under /api/v1.

The SDK's README configures the host as a bare origin (`DL_HOST=https://api.datalinks.com`),
its `.env.example` with `/api/v1`; both forms work here. A root request for one of the SDK's
calls (`SDK_CALLS`: method and path, nothing else) is rewritten to the same request under
`/api/v1` before anything else sees it, so authentication, error bodies, tenant checks,
limits, metrics and the console's cookie rules are the API's own by construction: there is
one route table, not a second copy that could drift (docs/decisions.md, "The DataLinks SDK's
bare origin").

The web console also lives at the root. Where one of its pages and an SDK call match the same
request, the more specific path wins, as in most routers: a literal segment beats a parameter
at the first segment where they differ (`POST /links/add` is the SDK's `add_link`, not the
console's link form `/links/{linkId}`; `POST /ontology/{owner}/{namespace}/curate` stays the
console's, not `save_ontology` of a dataset named `curate`, which the SDK reaches under
/api/v1)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from starlette.routing import BaseRoute, Match, Route, compile_path
from starlette.types import ASGIApp, Receive, Scope, Send

# The calls of the SDK's `DataLinksAPI` (docs/datalinks.md), in Datawell's parameter names.
# Not its A2A operations (the facade never calls them; an agent card names its own URL) nor
# its `/file-upload` session files (defined, unused). Calls Datawell does not serve (cleaning,
# per-dataset grants) are listed too, so the root answers them exactly as /api/v1 does.
DATASET = "{username}/{namespace}/{datasetName}"
SDK_CALLS: tuple[tuple[str, str], ...] = (
    ("POST", "/ingest/new/{namespace}/{datasetName}"),
    ("POST", "/ingest/{namespace}/{datasetName}"),
    ("PUT", f"/data/{DATASET}/inferDefinition"),
    ("POST", "/infer/description"),
    ("POST", "/infer/schema"),
    ("POST", "/infer/preview"),
    ("PUT", f"/schema/{DATASET}/sort-order"),
    ("POST", f"/upload/multipart/{DATASET}/prepare"),
    ("POST", f"/upload/multipart/{DATASET}/finish"),
    ("POST", f"/upload/multipart/{DATASET}/abort"),
    ("GET", f"/data/{DATASET}/ingest/attempts"),
    ("POST", "/ingestionTracking/{ingestionId}/retry"),
    ("POST", "/ingestionTracking/{ingestionId}/seen"),
    ("GET", f"/data/{DATASET}"),
    ("GET", "/data"),
    ("GET", "/data/{namespace}"),
    ("GET", "/schema/datasets/all"),
    ("GET", "/schema/{user}/{namespace}/datasets"),
    ("GET", "/schema/{user}/namespaces"),
    ("DELETE", f"/data/{DATASET}/balefire"),
    ("POST", f"/data/{DATASET}/rename"),
    ("POST", "/data/{username}/{namespace}/rename"),
    ("POST", f"/data/{DATASET}/clear"),
    ("POST", "/query"),
    ("POST", "/query/autorag"),
    ("POST", "/query/ask"),
    ("GET", "/query/runs/{runId}"),
    ("DELETE", "/query/runs/{runId}"),
    ("POST", "/query/runs/{runId}/feedback"),
    ("POST", "/query/runs/{runId}/resume"),
    ("GET", "/query/conversations"),
    ("GET", "/query/conversations/{conversationId}"),
    ("POST", "/links/add"),
    ("GET", f"/links/{DATASET}"),
    ("POST", f"/links/{DATASET}"),
    ("POST", f"/links/preview/{DATASET}"),
    ("GET", f"/ontology/{DATASET}"),
    ("POST", f"/ontology/{DATASET}"),
    ("POST", "/ontology/curate-links"),
    ("POST", f"/agents/{DATASET}/requestCleaning"),
    ("GET", "/agents/cleaning/{cleaningTaskId}/code"),
    ("GET", "/user/me"),
    ("GET", "/user/tokens"),
    ("POST", "/user/token"),
    ("DELETE", "/user/token/{tokenId}"),
    ("GET", "/user/tokens/{tokenId}/permissions"),
    ("GET", "/user/usage/history"),
    ("GET", "/user/usage/by-day"),
    ("GET", f"/permissions/datasets/{DATASET}/shares"),
    ("POST", f"/permissions/datasets/{DATASET}/shares"),
    ("DELETE", f"/permissions/datasets/{DATASET}/shares"),
    ("GET", "/permissions/namespaces/{username}/{namespace}/shares"),
    ("POST", "/permissions/namespaces/{username}/{namespace}/shares"),
    ("DELETE", "/permissions/namespaces/{username}/{namespace}/shares"),
)


def specificity(path: str) -> tuple[int, ...]:
    """Per segment: 2 for a literal, 1 for a literal with a parameter (`rows.{format}`), 0 for
    a parameter alone; the larger tuple is the more specific path."""
    return tuple(
        0 if re.fullmatch(r"\{[^}]*\}", segment) else 1 if "{" in segment else 2 for segment in path.split("/")
    )


class BareOrigin:
    """ASGI middleware: a root request for one of `calls` that no more specific root route
    (`others`: the console's pages, health, metrics) serves becomes the request under `prefix`."""

    def __init__(
        self, app: ASGIApp, prefix: str, calls: Iterable[tuple[str, str]], others: Sequence[BaseRoute]
    ) -> None:
        self.app = app
        self.prefix = prefix
        self.calls = [(method, compile_path(path)[0], specificity(path)) for method, path in calls]
        self.others = others

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and self.is_sdk_call(scope):
            root = scope.get("root_path", "")
            path = root + self.prefix + scope["path"][len(root) :]
            # raw_path keeps the client's percent-escapes: the prefix goes in after the root.
            raw: bytes = scope.get("raw_path") or scope["path"].encode()
            at = len(root.encode()) if raw.startswith(root.encode()) else 0
            scope = {**scope, "path": path, "raw_path": raw[:at] + self.prefix.encode() + raw[at:]}
        await self.app(scope, receive, send)

    def is_sdk_call(self, scope: Scope) -> bool:
        """Whether the request is one of the SDK's calls at the root."""
        root = scope.get("root_path", "")
        if not scope["path"].startswith(root):
            return False
        path = scope["path"][len(root) :]
        call = next((s for m, regex, s in self.calls if m == scope["method"] and regex.match(path)), None)
        if call is None:
            return False
        return not any(
            route.matches(scope)[0] is Match.FULL and (not isinstance(route, Route) or specificity(route.path) >= call)
            for route in self.others
        )
