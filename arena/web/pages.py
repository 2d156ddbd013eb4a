"""The server-rendered pages a person reads without JavaScript: home, leaderboards, bots, matches, the
queue. Each reads through ``WebData`` and renders a template; nothing here writes."""

from __future__ import annotations

from aiohttp import web

from arena.service.matches import MatchRecord
from arena.web.app import DATA, render
from referee.wire.values import MatchStatus

routes = web.RouteTableDef()

LATEST = 10


@routes.get("/", name="home")
async def home(request: web.Request) -> web.Response:
    data = request.app[DATA]
    bots = await data.call(data.registry.list)
    figures = await data.call(data.queue_figures)
    latest: list[MatchRecord] = await data.call(data.matches.search, state=MatchStatus.FINISHED, limit=LATEST)
    return render(
        request, "home.html", bots_online=sum(1 for b in bots if b.online), bots_total=len(bots),
        running=figures["running"], queued=figures["queued"], latest=latest,
    )  # fmt: skip


def setup(app: web.Application) -> None:
    app.router.add_routes(routes)
