"""The JSON API under /api/v1 as a real ``arena web`` process serves it over a real Redis written by the
arena's own stores (``tests.web_world``): the pages' data, paged, with ETags, public forms only, and an
OpenAPI document that names exactly the routes ``arena.web.api`` serves."""

from __future__ import annotations

import json
import re

import redis
from aiohttp import web

from arena import keys
from arena.web import api
from arena.web.openapi import OPENAPI
from tests.helpers import web_server
from tests.web_world import GAME, HOSTILE_NAME, HOSTILE_OWNER, HOSTILE_VERSION, SECRET, build, fetch


def get(url: str, headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], object]:
    status, h, body = fetch(url, headers)
    return status, h, json.loads(body) if body and h.get("Content-Type", "").startswith("application/json") else body


def test_every_api_route_is_in_the_openapi_document_and_every_documented_path_is_a_route() -> None:
    served = {r.path.removeprefix(api.PREFIX) for r in api.routes if isinstance(r, web.RouteDef)}
    assert all(r.path.startswith(api.PREFIX + "/") for r in api.routes if isinstance(r, web.RouteDef))
    documented = set(OPENAPI["paths"])
    assert served == documented
    assert OPENAPI["info"]["version"] == "v1" and OPENAPI["openapi"].startswith("3.")
    for path, item in OPENAPI["paths"].items():
        assert set(item) == {"get"} and set(re.findall(r"{(\w+)}", path)) == {
            p["name"] for p in item["get"]["parameters"] if p["in"] == "path"}  # fmt: skip


def test_the_leaderboard_api_pages_with_etags_and_304(redis_url: str) -> None:
    build(redis_url)
    with web_server(redis_url) as url:
        status, headers, board = get(f"{url}/api/v1/ladder/{GAME}?limit=2")
        assert status == 200 and isinstance(board, dict)
        assert board["total"] == 3 and [r["rank"] for r in board["rows"]] == [1, 2]
        assert board["next"] == f"/api/v1/ladder/{GAME}?offset=2&limit=2"
        alpha = board["rows"][1]
        assert alpha["name"] == "alpha" and alpha["version"] == HOSTILE_VERSION and alpha["owner"] == HOSTILE_OWNER
        assert (alpha["wins"], alpha["draws"], alpha["losses"], alpha["games"]) == (3, 0, 3, 6)
        assert alpha["provisional"] is True and alpha["error"] > 0 and len(alpha["trend"]) == 6
        _, _, rest = get(url + board["next"])
        assert isinstance(rest, dict) and [r["rank"] for r in rest["rows"]] == [3] and "next" not in rest
        tag = headers["ETag"]
        again = fetch(f"{url}/api/v1/ladder/{GAME}?limit=2", {"If-None-Match": tag})
        assert again[0] == 304 and again[2] == "" and again[1]["ETag"] == tag
        assert fetch(f"{url}/api/v1/ladder/{GAME}?limit=2", {"If-None-Match": '"other"'})[0] == 200
        # what the page shows changes (here an owner's name): so does its tag
        redis.Redis.from_url(redis_url).hset(keys.bot("alpha"), "owner", "someone else")
        assert fetch(f"{url}/api/v1/ladder/{GAME}?limit=2", {"If-None-Match": tag})[0] == 200
        status, _, err = get(f"{url}/api/v1/ladder/nosuchgame")
        assert status == 404 and isinstance(err, dict) and err["error"]["status"] == 404
        assert get(f"{url}/api/v1/ladder/{GAME}?limit=zero")[0] == 400


def test_the_bot_api_gives_the_public_record_only(redis_url: str) -> None:
    build(redis_url)
    with web_server(redis_url) as url:
        status, _, body = fetch(f"{url}/api/v1/bots/alpha")
        _, _, gamma = get(f"{url}/api/v1/bots/gamma")
        assert get(f"{url}/api/v1/bots/nobody")[0] == 404
    assert status == 200
    bot = json.loads(body)
    assert bot["bot"]["name"] == "alpha" and bot["state"] == "online" and bot["bot"]["version"] == HOSTILE_VERSION
    assert [(v["game_id"], v["version"], v["games"]) for v in bot["versions"]] == [(GAME, HOSTILE_VERSION, 6)]
    assert len(bot["history"][GAME][0]["points"]) == 6 and len(bot["recent_matches"]) == 10
    assert bot["head_to_head"][GAME] == [{"version": HOSTILE_VERSION, "opponent": "beta", "opponent_version": "1.0",
                                          "wins": 3, "draws": 0, "losses": 3}]  # fmt: skip
    assert "token" not in body and "disabled_reason" not in body and SECRET not in body
    assert "worker" not in body and "referee_address" not in body
    assert isinstance(gamma, dict) and gamma["state"] == "disabled" and "PRIVATE" not in json.dumps(gamma)


def test_the_matches_api_filters_pages_and_gives_a_public_record(redis_url: str) -> None:
    build(redis_url, finished=5, queued=2)
    with web_server(redis_url) as url:
        seen: list[str] = []
        page: str | None = "/api/v1/matches?state=finished&limit=2"
        while page:
            _, _, body = get(url + page)
            assert isinstance(body, dict)
            seen += [m["match_id"] for m in body["matches"]]
            page = body.get("next")
        assert seen == [f"done-{i:02d}" for i in reversed(range(5))]
        _, _, queued = get(f"{url}/api/v1/matches?state=queued&bot=alpha&game={GAME}")
        assert isinstance(queued, dict) and [m["match_id"] for m in queued["matches"]] == ["waiting-1", "waiting-0"]
        assert queued["next_before"] is None
        status, headers, match = get(f"{url}/api/v1/matches/done-00")
        assert status == 200 and isinstance(match, dict)
        assert match["state"] == "finished" and match["bot_names"] == ["alpha", "beta"] and match["result"]["seats"]
        assert "worker" not in match and "referee_address" not in match
        assert fetch(f"{url}/api/v1/matches/done-00", {"If-None-Match": headers["ETag"]})[0] == 304
        assert get(f"{url}/api/v1/matches/nope")[0] == 404
        assert get(f"{url}/api/v1/matches?state=nope")[0] == 400
        _, _, q = get(f"{url}/api/v1/queue")
        assert isinstance(q, dict) and [m["match_id"] for m in q["running"]] == ["running-0"]
        assert [m["match_id"] for m in q["waiting"]] == ["waiting-0", "waiting-1"]
        _, _, games = get(f"{url}/api/v1/games")
        assert isinstance(games, dict) and {"game_id": GAME, "players": 2, "ladder_versions": 3} in games["games"]


def test_the_transcript_api_is_public_jsonl_paged_with_etags(redis_url: str) -> None:
    build(redis_url, finished=1)
    with web_server(redis_url) as url:
        status, headers, body = fetch(f"{url}/api/v1/matches/done-00/transcript")
        assert status == 200 and headers["Content-Type"].startswith("application/x-ndjson")
        lines = [json.loads(x) for x in body.splitlines()]
        assert [x["type"] for x in lines] == ["header", "refusal", "footer"] and headers["X-Total-Lines"] == "3"
        assert lines[1] == {"type": "refusal", "ply": 3, "seat": 1, "code": "illegal"}  # no seat's private text
        assert SECRET not in body and "SECRET-REASON" not in body
        assert fetch(f"{url}/api/v1/matches/done-00/transcript", {"If-None-Match": headers["ETag"]})[0] == 304
        status, headers, first = fetch(f"{url}/api/v1/matches/done-00/transcript?limit=2")
        assert len(first.splitlines()) == 2 and 'rel="next"' in headers["Link"]
        nxt = headers["Link"].split(">")[0].lstrip("<")
        _, headers2, rest = fetch(url + nxt)
        assert first + rest == body and "Link" not in headers2
        assert fetch(f"{url}/api/v1/matches/running-0/transcript")[0] == 404
        assert fetch(f"{url}/api/v1/matches/nope/transcript")[0] == 404


def test_hostile_bot_text_stays_data_in_json(redis_url: str) -> None:
    build(redis_url)
    with web_server(redis_url) as url:
        status, headers, body = fetch(f"{url}/api/v1/ladder/{GAME}")
    assert status == 200 and headers["Content-Type"].startswith("application/json")
    assert headers["X-Content-Type-Options"] == "nosniff"
    assert HOSTILE_NAME in [r["name"] for r in json.loads(body)["rows"]]
