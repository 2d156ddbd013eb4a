"""The website's pages (leaderboard, bot, match list, queue) as a real ``arena web`` process serves them
over a real Redis written by the arena's own stores (``tests.web_world``)."""

from __future__ import annotations

import html
import json
import re
from typing import Any

import redis
from markupsafe import escape

from arena import keys
from arena.ladder.elo import Row
from arena.ladder.store import member
from arena.service.matches import MatchStore
from arena.service.registry import Registry
from tests.helpers import web_server
from tests.web_world import GAME, HOSTILE_NAME, HOSTILE_OWNER, HOSTILE_VERSION, SECRET, build, fetch


def rows(body: str, table: str) -> list[str]:
    part = body.split(f'id="{table}"', 1)[1].split("</table>", 1)[0]
    return re.findall(r"<tr[ >].*?</tr>", part.split("<tbody>", 1)[1], re.S)


def test_the_leaderboard_shows_every_column_marks_provisional_rows_and_escapes_bot_text(redis_url: str) -> None:
    build(redis_url)
    with web_server(redis_url) as url:
        status, _, body = fetch(f"{url}/ladder/{GAME}")
    assert status == 200, body
    board = rows(body, "leaderboard")
    assert len(board) == 3  # alpha, beta, and the odd row (its other seat is beta 1.0)
    alpha = next(r for r in board if 'href="/bots/alpha"' in r)
    assert "3/0/3" in alpha and "provisional" in alpha and '<svg class="spark"' in alpha and "±" in alpha
    assert escape(HOSTILE_OWNER) in alpha
    # bot text shows as text: never as markup
    for text in (HOSTILE_VERSION, HOSTILE_OWNER, HOSTILE_NAME, "</script>"):
        assert text not in body
    assert escape(HOSTILE_VERSION) in body and escape(HOSTILE_NAME) in body
    assert "onerror=alert" not in body.replace(escape(HOSTILE_VERSION), "")
    assert "<script" not in body


def test_the_leaderboard_pages_through_many_rows_and_404s_for_an_unknown_game_or_page(redis_url: str) -> None:
    r = redis.Redis.from_url(redis_url)
    board = {member((f"b{i:03d}", "1")): 1000.0 + i for i in range(120)}
    rows_: dict[Any, Any] = {
        m: json.dumps(Row(f"b{i:03d}", "1", rating=1000.0 + i, games=20).to_dict()) for i, m in enumerate(board)
    }
    r.hset(keys.ladder_rows(GAME), mapping=rows_)
    r.zadd(keys.ladder_board(GAME), board)
    with web_server(redis_url) as url:
        _, _, first = fetch(f"{url}/ladder/{GAME}")
        _, _, third = fetch(f"{url}/ladder/{GAME}?page=3")
        assert fetch(f"{url}/ladder/{GAME}?page=4")[0] == 404
        assert fetch(f"{url}/ladder/nosuchgame")[0] == 404
        assert fetch(f"{url}/ladder/{GAME}?page=x")[0] == 400
    assert "page 1 of 3" in first and 'rel="next"' in first and 'rel="prev"' not in first
    assert re.findall(r'data-rank="(\d+)"', first)[:2] == ["1", "2"] and 'href="/bots/b119"' in first
    assert len(rows(third, "leaderboard")) == 20 and 'data-rank="101"' in third and 'rel="next"' not in third
    assert "provisional" not in " ".join(rows(third, "leaderboard"))


def test_the_bot_page_shows_versions_history_matches_head_to_head_and_public_state_only(redis_url: str) -> None:
    world = build(redis_url)
    with web_server(redis_url) as url:
        status, _, alpha = fetch(f"{url}/bots/alpha")
        _, _, gamma = fetch(f"{url}/bots/gamma")
        assert fetch(f"{url}/bots/nobody")[0] == 404
        assert fetch(f"{url}/bots/%3Cimg%3E")[0] == 404
    assert status == 200, alpha
    versions = rows(alpha, "versions")
    assert len(versions) == 1 and escape(HOSTILE_VERSION) in versions[0] and "3/0/3" in versions[0]
    assert 'id="rating-chart"' in alpha and alpha.count("<circle") == 6
    assert all(f'href="/matches/{m}"' in alpha for m in world["finished"])
    recent = rows(alpha, "recent")
    assert len(recent) == 6 + 1 + 3 and "done-05" in recent[4]  # newest first: waiting, running, finished
    h2h = alpha.split("Head to head", 1)[1]
    assert 'href="/bots/beta"' in h2h and '>3</td><td class="num">0</td><td class="num">3<' in h2h
    assert 'id="state">online<' in alpha
    assert 'id="state">disabled<' in gamma and "PRIVATE-DISABLE-REASON" not in gamma
    for page in (alpha, gamma):
        assert HOSTILE_VERSION not in page and HOSTILE_OWNER not in page and "token" not in page.lower()
        assert SECRET not in page


def test_the_match_list_filters_by_game_bot_and_state_and_pages_with_a_cursor(redis_url: str) -> None:
    build(redis_url, finished=7, queued=2)
    r = redis.Redis.from_url(redis_url)
    Registry(r).register("delta", "dan", [GAME])
    with web_server(redis_url) as url:
        _, _, everything = fetch(f"{url}/matches")
        _, _, finished = fetch(f"{url}/matches?state=finished")
        _, _, beta = fetch(f"{url}/matches?bot=beta&game={GAME}")
        _, _, delta = fetch(f"{url}/matches?bot=delta")
        _, _, other = fetch(f"{url}/matches?game=shangrila-3p")
        assert fetch(f"{url}/matches?state=lost")[0] == 400 and fetch(f"{url}/matches?game=chess")[0] == 400
        seen: list[str] = []
        page = f"{url}/matches?state=finished"
        pages = 0
        while True:
            pages += 1
            _, _, body = fetch(page)
            seen += re.findall(r'data-match="([^"]+)"', body)
            nxt = re.search(r'rel="next" href="([^"]+)"', body)
            if not nxt or pages > 10:
                break
            page = url + html.unescape(nxt.group(1))
    assert len(rows(everything, "matches")) == 7 + 1 + 2
    assert re.findall(r'data-match="([^"]+)"', finished) == [f"done-{i:02d}" for i in reversed(range(7))]
    assert len(rows(beta, "matches")) == 10 and "None." in delta and "None." in other
    assert seen == [f"done-{i:02d}" for i in reversed(range(7))]  # one page here: MATCH_PAGE is 50


def test_the_match_list_cursor_neither_repeats_nor_skips(redis_url: str) -> None:
    """60 matches: a first page of 50, then the 10 older, each once, newest first."""
    r = redis.Redis.from_url(redis_url)
    Registry(r).register("a1", "x", [GAME])
    Registry(r).register("a2", "y", [GAME])
    store = MatchStore(r)
    for i in range(60):
        store.request(GAME, ["a1", "a2"], match_id=f"m{i:02d}")
    with web_server(redis_url) as url:
        _, _, first = fetch(f"{url}/matches?bot=a1")
        nxt = re.search(r'rel="next" href="([^"]+)"', first)
        assert nxt is not None
        _, _, second = fetch(url + html.unescape(nxt.group(1)))
    got = re.findall(r'data-match="([^"]+)"', first) + re.findall(r'data-match="([^"]+)"', second)
    assert got == [f"m{i:02d}" for i in reversed(range(60))]
    assert 'rel="next"' not in second and "« newest" in second


def test_the_queue_page_shows_what_waits_and_what_runs(redis_url: str) -> None:
    build(redis_url, finished=1, queued=3)
    with web_server(redis_url) as url:
        status, _, body = fetch(f"{url}/queue")
    assert status == 200, body
    assert re.findall(r'data-match="([^"]+)"', body.split('id="waiting"')[1]) == ["waiting-0", "waiting-1",
                                                                                 "waiting-2"]  # fmt: skip
    assert re.findall(r'data-match="([^"]+)"', body.split('id="running"')[1].split('id="waiting"')[0]) == ["running-0"]


def test_pages_fit_a_phone_their_tables_scroll_in_a_wrapper(redis_url: str) -> None:
    build(redis_url)
    with web_server(redis_url) as url:
        for path in (f"/ladder/{GAME}", "/bots/alpha", "/matches", "/queue"):
            body = fetch(url + path)[2]
            assert 'name="viewport"' in body
            assert body.count("<table") == body.count('<div class="table-wrap">\n<table'), path


def test_the_home_page_counts_bots_online_without_reading_every_record(redis_url: str) -> None:
    build(redis_url)
    with web_server(redis_url) as url:
        body = fetch(url + "/")[2]
    assert '<span class="n" id="bots-online">2</span>' in body and "of 3" in body  # alpha, beta; gamma is not
    assert 'href="/matches/done-05"' in body
