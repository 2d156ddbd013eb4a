"""The JSON API under /api/v1: the pages' data (the same ``WebData`` queries), paged, with ETags (a
client sends ``If-None-Match`` and gets 304 when nothing changed), described by /api/v1/openapi.json
(``arena.web.openapi``, which a test holds equal to the routes here). Versioned like the proto: a change
that breaks a client takes /api/v2."""

from __future__ import annotations

import hashlib
import json
from typing import Any
from urllib.parse import quote, urlencode

from aiohttp import web

from arena.service.archive import ArchiveError
from arena.web.app import DATA
from arena.web.data import BOARD_MAX, BOARD_PAGE, MATCH_MAX, MATCH_PAGE, public_match
from arena.web.openapi import OPENAPI
from arena.web.pages import float_param, game_param, int_param, match_filters
from referee import games

PREFIX = "/api/v1"
TRANSCRIPT_PAGE = 1000  # lines
TRANSCRIPT_MAX = 10_000

routes = web.RouteTableDef()


def etagged(
    request: web.Request, body: bytes, content_type: str, headers: dict[str, str] | None = None
) -> web.Response:
    """``body`` with a strong ETag (its SHA-256): 304 without the body when ``If-None-Match`` names it.
    ``no-cache``: a cache may keep it but asks each time (results change while a person reads)."""
    tag = f'"{hashlib.sha256(body).hexdigest()[:32]}"'
    out = {"ETag": tag, "Cache-Control": "no-cache", **(headers or {})}
    asked = [t.strip().removeprefix("W/") for t in request.headers.get("If-None-Match", "").split(",")]
    if tag in asked or "*" in asked:
        return web.Response(status=304, headers=out)
    return web.Response(body=body, content_type=content_type, charset="utf-8", headers=out)


def json_etagged(request: web.Request, payload: Any, headers: dict[str, str] | None = None) -> web.Response:
    return etagged(request, json.dumps(payload, separators=(",", ":")).encode(), "application/json", headers)


@routes.get(PREFIX + "/openapi.json")
async def openapi(request: web.Request) -> web.Response:
    return json_etagged(request, OPENAPI)


@routes.get(PREFIX + "/games")
async def game_list(request: web.Request) -> web.Response:
    data = request.app[DATA]
    sizes = await data.call(data.ladder_sizes)
    return json_etagged(request, {"games": [{"game_id": g, "players": games.get(g).num_players,
                                             "ladder_versions": sizes[g]} for g in games.GAME_IDS]})  # fmt: skip


@routes.get(PREFIX + "/ladder/{game_id}")
async def ladder(request: web.Request) -> web.Response:
    game_id = game_param(request.match_info["game_id"])
    offset = int_param(request, "offset", 0, 0, 10**9)
    limit = int_param(request, "limit", BOARD_PAGE, 1, BOARD_MAX)
    data = request.app[DATA]
    board = await data.call(data.board, game_id, offset, limit)
    payload = board.to_dict()
    if offset + limit < board.total:
        payload["next"] = f"{PREFIX}/ladder/{game_id}?" + urlencode({"offset": offset + limit, "limit": limit})
    return json_etagged(request, payload)


@routes.get(PREFIX + "/bots/{name}")
async def bot(request: web.Request) -> web.Response:
    data = request.app[DATA]
    found = await data.call(data.bot_page, request.match_info["name"])
    if found is None:
        raise web.HTTPNotFound(text="no bot of that name")
    return json_etagged(request, found.to_dict())


@routes.get(PREFIX + "/matches")
async def matches(request: web.Request) -> web.Response:
    filters = match_filters(request)
    before = float_param(request, "before")
    limit = int_param(request, "limit", MATCH_PAGE, 1, MATCH_MAX)
    data = request.app[DATA]
    found = await data.call(data.match_page, before=before, limit=limit, **filters)
    payload: dict[str, Any] = {"matches": [public_match(m) for m in found.matches], "next_before": found.next_before}
    if found.next_before is not None:
        query = {k: v for k, v in request.query.items() if k in ("game", "bot", "state", "limit") and v}
        payload["next"] = f"{PREFIX}/matches?" + urlencode({**query, "before": repr(found.next_before)})
    return json_etagged(request, payload)


@routes.get(PREFIX + "/matches/{match_id}")
async def match(request: web.Request) -> web.Response:
    data = request.app[DATA]
    found = await data.call(data.matches.describe, request.match_info["match_id"])
    if found is None:
        raise web.HTTPNotFound(text="no match of that id")
    return json_etagged(request, public_match(found))


@routes.get(PREFIX + "/matches/{match_id}/transcript")
async def transcript(request: web.Request) -> web.Response:
    """The public transcript as JSON Lines, ``limit`` lines from line ``offset`` (0: the header); the
    whole count in ``X-Total-Lines``, the next page in ``Link``."""
    match_id = request.match_info["match_id"]
    offset = int_param(request, "offset", 0, 0, 10**9)
    limit = int_param(request, "limit", TRANSCRIPT_PAGE, 1, TRANSCRIPT_MAX)
    data = request.app[DATA]
    try:
        lines = await data.call(data.public_transcript, match_id)
    except ArchiveError:
        raise web.HTTPServiceUnavailable(text="the match's transcript is archived and cannot be read now") from None
    if lines is None:
        found = await data.call(data.matches.describe, match_id)
        if found is None:
            raise web.HTTPNotFound(text="no match of that id")
        raise web.HTTPNotFound(text=f"no stored transcript: the match is {found.status or 'unknown'}; a running "
                                    "match is followed live on its page")  # fmt: skip
    page = lines[offset : offset + limit]
    headers = {"X-Total-Lines": str(len(lines))}
    if offset + limit < len(lines):
        nxt = f"{PREFIX}/matches/{quote(match_id, safe='')}/transcript?" + urlencode({"offset": offset + limit,
                                                                                     "limit": limit})  # fmt: skip
        headers["Link"] = f'<{nxt}>; rel="next"'
    body = "".join(line + "\n" for line in page).encode()
    return etagged(request, body, "application/x-ndjson", headers)


@routes.get(PREFIX + "/queue")
async def queue(request: web.Request) -> web.Response:
    data = request.app[DATA]
    q = await data.call(data.queue_page)
    return json_etagged(request, {k: [public_match(m) for m in v] for k, v in q.items()})


def setup(app: web.Application) -> None:
    app.router.add_routes(routes)
