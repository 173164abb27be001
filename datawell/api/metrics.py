"""`GET /metrics`: the Prometheus text format, open, behind a bearer token
(`DATAWELL_METRICS=token` with `DATAWELL_METRICS_TOKEN`) or not served (`off`)."""

from __future__ import annotations

import hmac

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from datawell.config import Settings
from datawell.errors import Unauthorized
from datawell.observability import metrics


def routes(settings: Settings) -> list[Route]:
    if settings.metrics == "off":
        return []
    expected = settings.metrics_token.get_secret_value() if settings.metrics_token else None

    async def endpoint(request: Request) -> Response:
        if settings.metrics == "token":
            scheme, _, given = request.headers.get("authorization", "").partition(" ")
            if expected is None:
                raise Unauthorized("metrics need a token: set DATAWELL_METRICS_TOKEN on the server")
            if scheme.lower() != "bearer" or not hmac.compare_digest(given.encode(), expected.encode()):
                raise Unauthorized("send the metrics token (DATAWELL_METRICS_TOKEN) as a bearer token")
        return Response(metrics.render(), media_type=metrics.CONTENT_TYPE)

    # Not in the OpenAPI document: Prometheus' text format, not the JSON API (docs/operations.md).
    return [Route("/metrics", endpoint, methods=["GET"], include_in_schema=False)]
