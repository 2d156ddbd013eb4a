"""The website (``arena web``) as a real process over a real Redis: what every page shares. Pages, API,
live matches and owners have their own test modules (``test_web_*``)."""

from __future__ import annotations

import json
from pathlib import Path

import redis

from arena.local.redisproc import RedisProcess
from tests.helpers import web_server
from tests.web_world import fetch


def test_home_answers_with_the_arenas_figures_and_the_security_headers(redis_url: str, tmp_path: Path) -> None:
    with web_server(redis_url, log=tmp_path / "web.log") as url:
        status, headers, body = fetch(url + "/")
    assert status == 200, body
    assert "bots online" in body and "matches running" in body
    csp = headers["Content-Security-Policy"]
    assert (
        "default-src 'self'" in csp
        and "frame-ancestors 'none'" in csp
        and "'unsafe-inline'" not in csp.split("script-src")[1].split(";")[0]
    )
    assert headers["X-Content-Type-Options"] == "nosniff" and headers["X-Frame-Options"] == "DENY"
    lines = [json.loads(line) for line in (tmp_path / "web.log").read_text().splitlines() if line.startswith("{")]
    assert any(e["event"] == "request" and e["path"] == "/" and e["status"] == 200 for e in lines)


def test_unknown_paths_are_404_pages_and_404_json_under_the_api(redis_url: str) -> None:
    with web_server(redis_url) as url:
        status, headers, body = fetch(url + "/no/such/page")
        assert status == 404 and "<h1>404</h1>" in body and headers["Content-Type"].startswith("text/html")
        status, headers, body = fetch(url + "/api/v1/no-such-thing")
        assert status == 404 and json.loads(body)["error"]["status"] == 404


def test_redis_down_gives_a_503_page_that_says_so_and_no_traceback(tmp_path: Path) -> None:
    server = RedisProcess(tmp_path / "redis").start()
    try:
        with web_server(server.url, log=tmp_path / "web.log") as url:
            assert fetch(url + "/")[0] == 200
            server.stop()
            status, headers, body = fetch(url + "/")
            assert status == 503, body
            assert "cannot be read right now" in body and "Traceback" not in body
            assert headers["Retry-After"] == "5"
    finally:
        server.stop()


def test_the_site_writes_nothing_to_redis(redis_url: str) -> None:
    """Every page it serves reads only: Redis's count of changes to its data stays put."""
    r = redis.Redis.from_url(redis_url)
    with web_server(redis_url) as url:
        before = r.info("persistence")["rdb_changes_since_last_save"]
        for path in ("/", "/", "/nothing"):
            fetch(url + path)
        assert r.info("persistence")["rdb_changes_since_last_save"] == before
