"""The JSON API under /api/v1: the pages' data, paged, with ETags, described by /api/v1/openapi.json."""

from __future__ import annotations

from aiohttp import web

routes = web.RouteTableDef()


def setup(app: web.Application) -> None:
    app.router.add_routes(routes)
