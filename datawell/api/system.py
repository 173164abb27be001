"""Health and the OpenAPI document: public, outside the resource modules."""

from __future__ import annotations

from sqlalchemy import text
from starlette.requests import Request
from starlette.responses import JSONResponse

from datawell import __version__
from datawell.api.routing import Context, Router
from datawell.api.urls import public_base_url
from datawell.client.models import Health

router = Router("system")


@router.get("/health", Health, public=True)
async def health(request: Request, ctx: Context) -> Health:
    """Liveness and database reachability

    Reports whether the service and its metadata database answer."""
    async with ctx.services.db.session() as session:
        await session.execute(text("SELECT 1"))
    return Health(status="ok", version=__version__, database=ctx.services.db.dialect)


@router.get("/api/v1/openapi.json", public=True)
async def openapi(request: Request, ctx: Context) -> JSONResponse:
    """This OpenAPI document

    The OpenAPI 3.1 document of every REST route."""
    return JSONResponse({**ctx.openapi, "servers": [{"url": public_base_url(request, ctx.services.settings)}]})
