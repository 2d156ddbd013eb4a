"""Live matches: one follower per running match per process reads its event log and fans each new line
out to every viewer (Server-Sent Events)."""

from __future__ import annotations

from aiohttp import web

routes = web.RouteTableDef()


def setup(app: web.Application) -> None:
    app.router.add_routes(routes)
