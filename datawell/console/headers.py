"""The security headers of every console response (pages, fragments, static files).

- No framing, by any page (`X-Frame-Options: DENY` and CSP `frame-ancestors 'none'`): a
  framed page could be clicked through (clickjacking), and a same-site frame carries the
  session cookie.
- A Content-Security-Policy that runs only the console's own files: no inline scripts, no
  `eval` (htmx is told so in base.html's `htmx-config`), no inline styles. The upload's
  presigned part URLs may live on the object store's own origin, which `connect-src` names.
- `nosniff`, a `Referrer-Policy` that sends no path to other sites, and `no-store` on
  everything but the static files, so a signed-in page is never kept in a cache."""

from __future__ import annotations

from urllib.parse import urlsplit

from starlette.types import Scope

from datawell.config import Settings

STATIC_PREFIX = "/static/"


def origin_of(url: str | None) -> str | None:
    parts = urlsplit(url or "")
    return f"{parts.scheme}://{parts.netloc}" if parts.scheme in ("http", "https") and parts.netloc else None


def content_security_policy(settings: Settings | None) -> str:
    uploads = ["'self'"]
    if settings is not None:
        for url in (settings.public_base_url, settings.s3_endpoint_url):
            origin = origin_of(url)
            if origin and origin not in uploads:
                uploads.append(origin)
        if settings.object_store == "s3" and settings.s3_endpoint_url is None:
            uploads.append("https://*.amazonaws.com")
    return "; ".join(
        [
            "default-src 'self'",
            "script-src 'self'",
            "style-src 'self'",
            "img-src 'self' data:",
            f"connect-src {' '.join(uploads)}",
            "object-src 'none'",
            "base-uri 'none'",
            "form-action 'self'",
            "frame-ancestors 'none'",
        ]
    )


def security_headers(scope: Scope) -> list[tuple[str, str]]:
    services = scope.get("state", {}).get("services")
    settings: Settings | None = getattr(services, "settings", None)
    headers = [
        ("x-frame-options", "DENY"),
        ("content-security-policy", content_security_policy(settings)),
        ("x-content-type-options", "nosniff"),
        ("referrer-policy", "same-origin"),
    ]
    if not scope["path"].startswith(STATIC_PREFIX):
        headers.append(("cache-control", "no-store"))
    return headers
