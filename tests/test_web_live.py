"""Match pages and live matches on the website (``arena.web.live``): a real ``arena web`` process over a
real Redis, the matches written with the service's own stores (``MatchStore``, ``MatchQueue``), and a
live match watched in headless Chromium."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis

from arena.results import StoredResult
from arena.service.matches import MatchStore, public_lines
from arena.service.queue import Claim, MatchQueue
from arena.service.registry import Registry
from referee import transcript
from tests.helpers import headless_chromium, web_server
from tests.web_world import fetch

DATA = Path(__file__).parent / "data" / "transcripts"
SCRIPTED = DATA / "scripted-shanghaien.jsonl"  # refusals of seat 0 with their private text
WORKER = "w-test"


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with headless_chromium() as driver:
        yield driver


def lines_of(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").removesuffix("\n").split("\n")


def start_match(r: redis.Redis, match_id: str, game_id: str = "shanghaien") -> Claim:
    """A match requested, claimed by a worker and announced: running, with an empty event log."""
    registry = Registry(r)
    for name in ("bot0", "bot1"):
        if registry.find(name) is None:
            registry.register(name, "owner", [game_id])
    store = MatchStore(r)
    store.request(game_id, ["bot0", "bot1"], match_id=match_id)
    claim = store.queue.claim(WORKER)
    assert claim is not None and claim.match_id == match_id
    store.queue.announce(WORKER, claim, "127.0.0.1:1", ("bot0", "bot1"), game_id, 1000)
    return claim


def append(r: redis.Redis, claim: Claim, lines: list[str]) -> None:
    """Lines appended to the match's event log as the worker does (under its lease)."""
    MatchQueue(r).append_events(WORKER, [(claim, lines)])


def finish(r: redis.Redis, claim: Claim, lines: list[str]) -> None:
    MatchQueue(r).complete(claim, StoredResult.from_lines(lines, rated=False), transcript="\n".join(lines) + "\n",
                           worker=WORKER, bots=("bot0", "bot1"))  # fmt: skip


class SSE:
    """A raw Server-Sent Events client on a socket: (id, data) of each message, and whether it ended."""

    def __init__(self, url: str, after: int = 0) -> None:
        u = urllib.parse.urlsplit(url)
        self.sock = socket.create_connection((u.hostname or "127.0.0.1", u.port or 80), timeout=20)
        self.sock.sendall(
            f"GET {u.path}?from={after} HTTP/1.0\r\nHost: x\r\nAccept: text/event-stream\r\n\r\n".encode()
        )
        self.file = self.sock.makefile("rb")
        status = self.file.readline()
        assert b" 200 " in status, status
        while self.file.readline() not in (b"\r\n", b""):
            pass
        self.messages: list[tuple[int, dict[str, Any]]] = []
        self.ended = False

    def read_until(self, count: int | None = None, end: bool = False) -> None:
        event: dict[str, str] = {}
        while not ((count is not None and len(self.messages) >= count) or (end and self.ended)):
            raw = self.file.readline()
            if not raw:
                raise EOFError("the stream closed")
            line = raw.decode().rstrip("\r\n")
            if line == "":
                if event.get("event") == "end":
                    self.ended = True
                elif "data" in event:
                    self.messages.append((int(event["id"]), json.loads(event["data"])))
                event = {}
                continue
            field, _, value = line.partition(": ")
            if field:
                event[field] = value

    def close(self) -> None:
        self.file.close()
        self.sock.close()


def commands(r: redis.Redis) -> int:
    """Event-log reads Redis has served so far (XREAD and XRANGE, from INFO commandstats)."""
    stats = r.info("commandstats")
    return sum(int(stats.get(f"cmdstat_{c}", {}).get("calls", 0)) for c in ("xread", "xrange", "xrevrange"))


@pytest.fixture
def site(redis_url: str, tmp_path: Path) -> Iterator[tuple[str, redis.Redis]]:
    r = redis.Redis.from_url(redis_url)
    with web_server(redis_url, log=tmp_path / "web.log") as url:
        yield url, r
    r.close()


# --------------------------------------------------------------------------------------- finished


def test_a_finished_match_shows_the_replay_and_downloads_its_public_jsonl(site: tuple[str, redis.Redis]) -> None:
    url, r = site
    lines = lines_of(SCRIPTED)
    claim = start_match(r, "done-1")
    append(r, claim, lines)
    finish(r, claim, lines)
    status, headers, page = fetch(url + "/matches/done-1")
    assert status == 200, page
    assert 'id="replay-data"' in page and 'id="board"' in page and "/replay/shanghaien.js?v=" in page
    assert "kein Zug" not in page  # the refused text of a seat is private
    nonce = headers["Content-Security-Policy"].split("'nonce-")[1].split("'")[0]
    assert f'<script nonce="{nonce}">' in page and page.count("<script>") == 0
    data = json.loads(page.split('id="replay-data">')[1].split("</script>")[0])
    assert data["footer"]["end_reason"] and len(data["frames"]) == sum(1 for x in lines if '"type":"ply"' in x) + 1
    status, headers, js = fetch(url + page.split('<script src="')[1].split('"')[0])
    assert status == 200 and "__replayDrawing" in js and headers["Content-Type"].startswith("text/javascript")

    status, headers, body = fetch(url + "/matches/done-1.jsonl")
    assert status == 200 and headers["Content-Disposition"] == 'attachment; filename="done-1.jsonl"'
    got = body.removesuffix("\n").split("\n")
    assert len(got) == len(lines)
    refusals = [json.loads(x) for x in got if '"refusal"' in x]
    assert refusals and all("action" not in x and "reason" not in x and x["code"] for x in refusals)
    assert "kein Zug" not in body
    assert transcript.verify_lines(got) is None  # the public form still replays and verifies


def test_queued_and_unknown_matches(site: tuple[str, redis.Redis]) -> None:
    url, r = site
    Registry(r).register("bot0", "owner", ["shanghaien"])
    Registry(r).register("bot1", "owner", ["shanghaien"])
    MatchStore(r).request("shanghaien", ["bot0", "bot1"], match_id="waits-1")
    status, _, page = fetch(url + "/matches/waits-1")
    assert status == 200 and 'data-state="queued"' in page and 'http-equiv="refresh"' in page
    assert fetch(url + "/matches/waits-1.jsonl")[0] == 404
    for path in ("/matches/nope", "/matches/nope.jsonl", "/matches/nope/live", "/replay/nogame.js"):
        assert fetch(url + path)[0] == 404, path


# ------------------------------------------------------------------------------------------- live


def test_a_live_stream_delivers_lines_in_order_shares_one_follower_and_ends_after_the_footer(
    site: tuple[str, redis.Redis],
) -> None:
    url, r = site
    lines = lines_of(SCRIPTED)
    claim = start_match(r, "live-1")
    append(r, claim, lines[:20])
    status, _, page = fetch(url + "/matches/live-1")  # the page carries the first 20 lines' data
    assert status == 200 and '"live":{"url":"/matches/live-1/live","from":20}' in page
    a = SSE(url + "/matches/live-1/live", after=20)
    b = SSE(url + "/matches/live-1/live", after=0)  # joins late: gets the 20 lines so far first
    b.read_until(20)
    assert [n for n, _ in b.messages] == list(range(1, 21))
    assert "start" in b.messages[0][1]["update"]
    time.sleep(0.5)
    before = commands(r)
    t0 = time.monotonic()
    for k in range(20, 60):
        append(r, claim, [lines[k]])
        time.sleep(0.02)
    a.read_until(40)
    b.read_until(60)
    reads = commands(r) - before
    elapsed = time.monotonic() - t0
    # one follower: its reads grow with the lines (a blocking read returns per batch), not with the viewers
    assert reads <= 40 + 2 + elapsed / 5, reads
    assert [n for n, _ in a.messages] == list(range(21, 61))
    public = [json.loads(x) for x in (m["line"] for _, m in a.messages)]
    assert [json.dumps(x, sort_keys=True) for x in public] == [
        json.dumps(json.loads(x), sort_keys=True) for x in public_lines(lines[20:60], set())
    ]
    plies = [m for _, m in a.messages if "frame" in m["update"]]
    assert plies and all(m["update"]["move"]["action"] for m in plies)

    c = SSE(url + "/matches/live-1/live", after=60)  # a third viewer: still no more reads than lines
    before = commands(r)
    append(r, claim, lines[60:])
    for v in (a, b, c):
        v.read_until(end=True)
    assert a.ended and b.ended and c.ended
    assert b.messages[-1][0] == len(lines) and "footer" in b.messages[-1][1]["update"]
    assert b.messages[-1][1]["update"]["verified"]["ok"] is True
    assert commands(r) - before <= 3
    for v in (a, b, c):
        v.close()


def test_the_live_page_advances_in_the_browser_while_lines_are_appended(
    site: tuple[str, redis.Redis],
    browser: Any,
) -> None:
    from selenium.webdriver.support.ui import WebDriverWait

    url, r = site
    lines = lines_of(SCRIPTED)
    claim = start_match(r, "live-view")
    append(r, claim, lines[:30])
    browser.get(url + "/matches/live-view")
    WebDriverWait(browser, 15).until(lambda d: d.execute_script("return document.body.dataset.live") == "following")

    def ply() -> int:
        return int(browser.execute_script("return Number(document.getElementById('ply-shown').dataset.ply)"))

    first = ply()
    stop = threading.Event()

    def writer() -> None:
        for k in range(30, 150):
            if stop.is_set():
                return
            append(r, claim, [lines[k]])
            time.sleep(0.08)

    t = threading.Thread(target=writer)
    t.start()
    try:
        seen = [first]
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and len(set(seen)) < 4:
            time.sleep(0.3)
            seen.append(ply())
        assert len(set(seen)) >= 4 and seen == sorted(seen), seen  # it moved, forwards, while we watched
    except BaseException:
        stop.set()
        raise
    finally:
        t.join()
    WebDriverWait(browser, 15).until(lambda d: d.execute_script("return document.body.dataset.lines") == "150")
    shot = Path(__file__).parent.parent / "docs" / "img" / "web-live.png"
    shot.parent.mkdir(parents=True, exist_ok=True)
    browser.save_screenshot(str(shot))
    append(r, claim, lines[150:])
    WebDriverWait(browser, 15).until(lambda d: d.execute_script("return document.body.dataset.live") == "ended")
    result = browser.execute_script("return document.getElementById('result').dataset.endReason")
    assert result == transcript.parse_event(lines[-1]).to_dict()["end_reason"]
    assert browser.execute_script("return window.__replayErrors") == []
    assert [e for e in browser.get_log("browser") if e["level"] == "SEVERE"] == []
    assert [line for _, line in MatchStore(r).events("live-view")] == lines  # one entry per append, every line


def test_a_viewer_that_falls_too_far_behind_is_closed_without_the_end_so_that_it_resumes() -> None:
    from arena.web.live import MAX_BEHIND, Viewer

    async def main() -> None:
        slow, quick = Viewer(), Viewer()
        for n in range(MAX_BEHIND + 1):
            message = f"id: {n + 1}\ndata: {{}}\n\n".encode()
            slow.push(message, 1)
            quick.push(message, 1)
            if n % 10 == 0:
                assert await quick.next()  # it keeps up: everything waiting comes as one write
        assert slow.dropped and await slow.next() is None  # closed; its browser reconnects with Last-Event-ID
        quick.push(b"id: 0\ndata: {}\n\n", 1)
        assert not quick.dropped and await quick.next()
        quick.end()
        assert await quick.next() is None and quick.ended

    asyncio.run(main())
