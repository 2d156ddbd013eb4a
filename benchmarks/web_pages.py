"""Website speed with a big ladder (issue 29, deliverable 7): a private redis-server filled with
``--versions`` (default 100,000) bot versions on one game's ladder, as ``arena.ladder.store`` stores
them (rows hash, board sorted set, a rating-history list a version, head-to-head counts, the latest
version per name, the per-bot indexes of versions and head-to-head pairs) and a registry record a bot;
then ``arena web`` as its own process, asked sequentially over one keep-alive connection for:

- the leaderboard page (``/ladder/{game}``: first page, and a page in the middle) and API
  (``/api/v1/ladder/{game}``);
- a bot page (``/bots/{name}``) and its API, for a bot with several versions, long histories, a few
  hundred matches and many head-to-head opponents;
- the home page, the match list and the queue, for comparison.

Server time is what the web process logs for each request (``ms`` of its ``request`` line: from the
request read to the response made, Redis round trips included); the client's round trip is printed
beside it. Figures only, no assertion (targets: leaderboard p50 <= 20 ms and p99 <= 100 ms, bot page
p50 <= 30 ms): a shared machine moves them.

    .venv/bin/python benchmarks/web_pages.py [--versions N] [--requests N] [--h2h-per-version N]
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import redis

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from arena import keys
from arena.ladder.elo import Row
from arena.ladder.store import member
from arena.local.redisproc import RedisProcess
from arena.service.matches import MatchStore
from arena.service.registry import Registry
from tests.helpers import web_server

GAME = "shanghaien"
STAR = "star"  # the bot whose page is measured
STAR_VERSIONS = 5
STAR_POINTS = 2_000  # rating-history points a version of the star
STAR_MATCHES = 300


def fill(r: redis.Redis, versions: int, points: int, h2h_per_version: int) -> None:
    """``versions`` bot versions (``bot{i // 2}`` has versions 1 and 2: half as many names), each with a row,
    a board score, ``points`` history points and ``h2h_per_version`` head-to-head fields; one registry hash
    a name, written as ``Registry.register`` writes it (fields and index), pipelined."""
    rng = random.Random(7)
    t0 = 1.7e9
    names = versions // 2
    with r.pipeline(transaction=False) as p:
        for start in range(0, versions, 5_000):
            chunk = range(start, min(versions, start + 5_000))
            rows = [Row(f"bot{i // 2}", str(1 + i % 2), rating=rng.gauss(1500, 250), games=rng.randrange(300),
                        wins=rng.randrange(100), draws=rng.randrange(20), losses=rng.randrange(100),
                        last_played=t0 + rng.random() * 86400 * 30, info=rng.random() * 80) for i in chunk]  # fmt: skip
            p.hset(keys.ladder_rows(GAME), mapping={member(x.key): json.dumps(x.to_dict()) for x in rows})
            p.zadd(keys.ladder_board(GAME), {member(x.key): x.rating for x in rows})
            for x in rows:
                hist = [json.dumps([t0 + k * 600.0, x.rating + rng.gauss(0, 30), f"m{rng.getrandbits(40):x}"],
                                   separators=(",", ":")) for k in range(points)]  # fmt: skip
                p.rpush(keys.ladder_history(GAME, member(x.key)), *hist)
            for x in rows:
                p.sadd(keys.ladder_versions(GAME, x.name), x.version)
            h2h = {}
            for i in chunk:
                for _ in range(h2h_per_version):
                    j = rng.randrange(versions)
                    a, b = sorted([(f"bot{i // 2}", str(1 + i % 2)), (f"bot{j // 2}", str(1 + j % 2))])
                    field = json.dumps([*a, *b], separators=(",", ":"))
                    h2h[field] = json.dumps([rng.randrange(9), rng.randrange(3), rng.randrange(9)])
                    p.sadd(keys.ladder_opponents(GAME, a[0]), field)
                    p.sadd(keys.ladder_opponents(GAME, b[0]), field)
            p.hset(keys.ladder_h2h(GAME), mapping=h2h)  # type: ignore[arg-type]
            p.execute()
        for start in range(0, names, 5_000):
            for n in range(start, min(names, start + 5_000)):
                name = f"bot{n}"
                p.hset(keys.bot(name), mapping={"name": name, "owner": f"owner{n % 997}", "games": json.dumps([GAME]),
                                                "token_sha256": f"{n:064x}", "enabled": "1", "disabled_reason": "",
                                                "version": "2", "max_concurrent": "4", "created_at": str(t0),
                                                "last_seen": "0"})  # fmt: skip
                p.sadd(keys.bots(), name)
                p.hset(keys.ladder_latest(GAME), name, "2")
            p.execute()
        p.sadd(keys.ladder_games(), GAME)
        p.hset(keys.ladder_state(GAME), mapping={"seq": versions, "indexed": "1"})
        p.execute()


def fill_star(r: redis.Redis, versions: int) -> None:
    """The measured bot, registered for real, with ``STAR_VERSIONS`` versions of ``STAR_POINTS`` points,
    opponents across the ladder and ``STAR_MATCHES`` matches requested through the ``MatchStore``."""
    rng = random.Random(11)
    reg = Registry(r)
    reg.register(STAR, "stella", [GAME])
    reg.register("rival", "rita", [GAME])
    with r.pipeline(transaction=False) as p:
        for v in range(1, STAR_VERSIONS + 1):
            row = Row(STAR, f"v{v}", rating=1500 + 40 * v, games=STAR_POINTS, wins=900, draws=100, losses=1000,
                      last_played=1.8e9, info=400.0)  # fmt: skip
            p.hset(keys.ladder_rows(GAME), member(row.key), json.dumps(row.to_dict()))
            p.sadd(keys.ladder_versions(GAME, STAR), row.version)
            p.zadd(keys.ladder_board(GAME), {member(row.key): row.rating})
            hist = [json.dumps([1.7e9 + k * 60.0, 1500 + rng.gauss(0, 50), f"s{v}-{k}"], separators=(",", ":"))
                    for k in range(STAR_POINTS)]  # fmt: skip
            p.rpush(keys.ladder_history(GAME, member(row.key)), *hist)
            for _ in range(200):
                j = rng.randrange(versions)
                a, b = sorted([(STAR, f"v{v}"), (f"bot{j // 2}", str(1 + j % 2))])
                field = json.dumps([*a, *b], separators=(",", ":"))
                p.hset(keys.ladder_h2h(GAME), field, "[3,1,2]")
                p.sadd(keys.ladder_opponents(GAME, a[0]), field)
                p.sadd(keys.ladder_opponents(GAME, b[0]), field)
        p.execute()
    store = MatchStore(r)
    for i in range(STAR_MATCHES):
        store.request(GAME, [STAR, "rival"] if i % 2 else ["rival", STAR], match_id=f"star-{i:04d}")


def measure(conn: http.client.HTTPConnection, path: str, n: int, log: Path) -> dict[str, float]:
    """``n`` GETs of ``path``; the web process's logged server times and the client's, in ms."""
    client = []
    for _ in range(n):
        t = time.perf_counter()
        conn.request("GET", path)
        resp = conn.getresponse()
        body = resp.read()
        client.append((time.perf_counter() - t) * 1e3)
        if resp.status != 200:
            raise RuntimeError(f"{path}: {resp.status} {body[:300]!r}")
    time.sleep(0.2)  # the log line is written as the response goes
    server = [e["ms"] for e in _log(log) if e.get("event") == "request" and e.get("path") == path.partition("?")[0]]
    server = server[-n:]
    return {"p50": _pct(server, 50), "p99": _pct(server, 99), "max": max(server), "client_p50": _pct(client, 50),
            "bytes": len(body)}  # fmt: skip


def _log(path: Path) -> list[dict[str, Any]]:
    out = []
    for line in path.read_text().splitlines():
        if line.startswith("{"):
            with contextlib.suppress(ValueError):  # a line cut by the copy
                out.append(json.loads(line))
    return out


def _pct(xs: list[float], p: int) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, round(p / 100 * (len(xs) - 1)))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--versions", type=int, default=100_000, help="bot versions on the ladder")
    parser.add_argument("--points", type=int, default=20, help="rating-history points a version")
    parser.add_argument("--h2h-per-version", type=int, default=5, help="head-to-head fields written a version")
    parser.add_argument("--requests", type=int, default=300, help="requests a measured path")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="web-bench-") as tmp, RedisProcess(Path(tmp), appendonly=False) as srv:
        r = redis.Redis.from_url(srv.url, socket_timeout=None)
        r.config_set("maxmemory", 0)
        t = time.perf_counter()
        fill(r, args.versions, args.points, args.h2h_per_version)
        fill_star(r, args.versions)
        print(f"filled {r.zcard(keys.ladder_board(GAME)):,} bot versions, {r.hlen(keys.ladder_h2h(GAME)):,} "
              f"head-to-head pairs, {r.scard(keys.bots()):,} registered bots in {time.perf_counter() - t:.1f} s; "
              f"redis memory {int(r.info('memory')['used_memory']) / 2**20:,.0f} MiB")  # fmt: skip
        log = Path(tmp) / "web.log"
        middle = args.versions // 100  # page of 50 around the middle
        paths = [
            ("leaderboard page, top", f"/ladder/{GAME}", args.requests),
            ("leaderboard page, middle", f"/ladder/{GAME}?page={middle}", args.requests),
            ("leaderboard API, top 50", f"/api/v1/ladder/{GAME}", args.requests),
            ("leaderboard API, 200 from the middle", f"/api/v1/ladder/{GAME}?offset={args.versions // 2}&limit=200",
             args.requests),
            ("bot page", f"/bots/{STAR}", args.requests // 3),
            ("bot API", f"/api/v1/bots/{STAR}", args.requests // 3),
            ("a 2-version bot's page", "/bots/bot123", args.requests // 3),
            ("match list", "/matches", args.requests // 3),
            ("queue", "/queue", args.requests // 3),
            ("home", "/", 10),
        ]  # fmt: skip
        with web_server(srv.url, log=log) as url:
            host, port = url.removeprefix("http://").split(":")
            conn = http.client.HTTPConnection(host, int(port), timeout=120)
            for _, path, _ in paths:
                measure(conn, path, 3, log)  # warm: imports, templates, scripts loaded
            print(f"{'':38} {'server p50':>10} {'p99':>8} {'max':>8} {'client p50':>11} {'bytes':>8}   (ms)")
            for label, path, n in paths:
                f = measure(conn, path, n, log)
                print(f"{label:38} {f['p50']:10.1f} {f['p99']:8.1f} {f['max']:8.1f} {f['client_p50']:11.1f} "
                      f"{f['bytes']:8,.0f}   n={n}")  # fmt: skip
            conn.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
