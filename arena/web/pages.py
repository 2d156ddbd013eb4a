"""The server-rendered pages a person reads without JavaScript: home, leaderboards, bots, matches, the
queue. Each reads through ``WebData`` (the same queries the JSON API answers with) and renders a template;
nothing here writes. A match links to ``/matches/{id}`` (the match page, ``arena.web.live``)."""

from __future__ import annotations

from collections.abc import Sequence
from urllib.parse import quote, urlencode

from aiohttp import web
from markupsafe import Markup

from arena.colours import bot_colours
from arena.ladder.report import rating_chart_svg
from arena.service.matches import MatchRecord
from arena.web.app import DATA, render
from arena.web.data import BOARD_PAGE, MATCH_PAGE
from referee import games
from referee.wire.values import MatchStatus

routes = web.RouteTableDef()

LATEST = 10


@routes.get("/", name="home")
async def home(request: web.Request) -> web.Response:
    data = request.app[DATA]
    bots_total, bots_online = await data.call(data.bot_figures)
    figures = await data.call(data.queue_figures)
    latest: list[MatchRecord] = await data.call(data.latest_finished, LATEST)
    return render(
        request, "home.html", bots_online=bots_online, bots_total=bots_total,
        running=figures["running"], queued=figures["queued"], latest=latest,
    )  # fmt: skip


# ------------------------------------------------------------------------------ query parameters


def int_param(request: web.Request, name: str, default: int, lo: int, hi: int) -> int:
    """An integer query parameter within [lo, hi] (clamped); 400 for one that is not a number."""
    raw = request.query.get(name, "")
    if not raw:
        return default
    try:
        return max(lo, min(hi, int(raw)))
    except ValueError:
        raise web.HTTPBadRequest(text=f"{name} must be a whole number") from None


def float_param(request: web.Request, name: str) -> float | None:
    raw = request.query.get(name, "")
    if not raw:
        return None
    try:
        return float(raw)
    except ValueError:
        raise web.HTTPBadRequest(text=f"{name} must be a number") from None


def game_param(game_id: str) -> str:
    """A game id from a path: 404 for one the arena does not know."""
    if game_id not in games.GAME_IDS:
        raise web.HTTPNotFound(text=f"No game {game_id!r}; the arena plays {', '.join(games.GAME_IDS)}.")
    return game_id


def match_filters(request: web.Request) -> dict[str, str | MatchStatus | None]:
    """The match list's filters (``game``, ``bot``, ``state``); 400 for an unknown game or state."""
    game_id = request.query.get("game", "") or None
    if game_id is not None and game_id not in games.GAME_IDS:
        raise web.HTTPBadRequest(text=f"unknown game {game_id!r}; known: {', '.join(games.GAME_IDS)}")
    state = request.query.get("state", "") or None
    if state is not None and state not in set(MatchStatus):
        raise web.HTTPBadRequest(text=f"state is one of {', '.join(MatchStatus)}")
    return {"game_id": game_id, "bot": request.query.get("bot", "") or None,
            "state": MatchStatus(state) if state else None}  # fmt: skip


# ------------------------------------------------------------------------------ drawing


def sparkline(ratings: Sequence[float], width: int = 80, height: int = 20) -> str:
    """An SVG polyline's points for a row's latest ratings (numbers only: nothing to escape)."""
    if len(ratings) < 2:
        return ""
    lo, hi = min(ratings), max(ratings)
    span = (hi - lo) or 1.0
    step = (width - 2) / (len(ratings) - 1)
    return " ".join(f"{1 + i * step:.1f},{1 + (hi - r) / span * (height - 2):.1f}" for i, r in enumerate(ratings))


def match_href(match_id: str) -> str:
    return "/matches/" + quote(match_id, safe="")


# ------------------------------------------------------------------------------ pages


@routes.get("/ladder/{game_id}", name="ladder")
async def ladder(request: web.Request) -> web.Response:
    game_id = game_param(request.match_info["game_id"])
    page = int_param(request, "page", 1, 1, 1_000_000)
    data = request.app[DATA]
    board = await data.call(data.board, game_id, (page - 1) * BOARD_PAGE, BOARD_PAGE)
    pages = max(1, -(-board.total // BOARD_PAGE))
    if page > pages:
        raise web.HTTPNotFound(text=f"The {game_id} leaderboard has {pages} page(s).")
    return render(request, "ladder.html", game_id=game_id, board=board, page=page, pages=pages,
                  spark={k: sparkline(v) for k, v in board.trends.items()})  # fmt: skip


@routes.get("/bots/{name}", name="bot")
async def bot(request: web.Request) -> web.Response:
    name = request.match_info["name"]
    data = request.app[DATA]
    found = await data.call(data.bot_page, name)
    if found is None:
        raise web.HTTPNotFound(text="No bot of that name.")
    charts = {}
    for game_id, series in found.histories.items():
        if series:
            colours = dict(zip(series, bot_colours(list(series)), strict=True))
            replays = {p.match_id: match_href(p.match_id) for pts in series.values() for p in pts}
            # rating_chart_svg escapes every text it writes (html.escape): its markup goes in as it is
            charts[game_id] = Markup(rating_chart_svg(series, colours, replays))
    return render(request, "bot.html", page=found, charts=charts)


@routes.get("/matches", name="matches")
async def matches(request: web.Request) -> web.Response:
    filters = match_filters(request)
    before = float_param(request, "before")
    data = request.app[DATA]
    found = await data.call(data.match_page, before=before, limit=MATCH_PAGE, **filters)
    query = {k: v for k, v in request.query.items() if k in ("game", "bot", "state") and v}
    next_url = None
    if found.next_before is not None:
        next_url = "/matches?" + urlencode({**query, "before": repr(found.next_before)})
    return render(request, "matches.html", found=found, next_url=next_url, first_url="/matches?" + urlencode(query),
                  paged=before is not None, filters=query, states=list(MatchStatus))  # fmt: skip


@routes.get("/events", name="events")
async def events(request: web.Request) -> web.Response:
    data = request.app[DATA]
    return render(request, "events.html", events=await data.call(data.event_list))


@routes.get("/events/{event_id}", name="event")
async def event(request: web.Request) -> web.Response:
    data = request.app[DATA]
    found = await data.call(data.event_page, request.match_info["event_id"])
    if found is None:
        raise web.HTTPNotFound(text="No event of that name.")
    rows = found["standings"]["rows"]
    cross = {(c["player"], c["opponent"]): c for c in found["standings"]["cross_table"]}
    grid = [[None if a["name"] == b["name"] else cross[a["name"], b["name"]] for b in rows] for a in rows]
    href = {m["match_id"]: match_href(m["match_id"]) for m in found["matches"] if m["match_id"]}
    return render(request, "event.html", summary=found, e=found["event"], rows=rows, grid=grid, href=href)


@routes.get("/queue", name="queue")
async def queue(request: web.Request) -> web.Response:
    data = request.app[DATA]
    q = await data.call(data.queue_page)
    return render(request, "queue.html", waiting=q["waiting"], running=q["running"])


def setup(app: web.Application) -> None:
    app.router.add_routes(routes)
