"""The absolute URLs the service hands out (part URLs, agent lists and cards, the OpenAPI
server) start with the address clients use: `DATAWELL_PUBLIC_BASE_URL` when it is set
(behind a proxy or a load balancer), else the address the request itself was sent to, so
`datawell serve --port 9123` or a LAN hostname works with no setting."""

from __future__ import annotations

from starlette.requests import Request

from datawell.config import Settings


def public_base_url(request: Request, settings: Settings) -> str:
    """The service's base address, without a trailing slash (no `/api/v1`)."""
    return (settings.public_base_url or str(request.base_url)).rstrip("/")


def absolute(request: Request, settings: Settings, url: str) -> str:
    """`url` as is when it is already absolute (an S3 presigned URL), else on the public base."""
    return url if "://" in url else public_base_url(request, settings) + url
