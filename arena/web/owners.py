"""The owners' view: sign in with the owner token (a session cookie) and see the private side of your
own bots."""

from __future__ import annotations

from aiohttp import web

routes = web.RouteTableDef()


def setup(app: web.Application) -> None:
    app.router.add_routes(routes)
