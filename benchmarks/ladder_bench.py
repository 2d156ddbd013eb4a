"""Ladder speed on a private redis-server (started like the tests', without AOF):

1. result applications per second (``Ladder.sync``: one WATCH/MULTI transaction per result);
2. leaderboard query time with ``--bots`` (default 100,000) rows;
3. rebuild time for ``--results`` (default 1,000,000) stored results, generated straight into Redis.

    .venv/bin/python benchmarks/ladder_bench.py [--results N] [--bots N] [--apply N]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import redis

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from arena import keys
from arena.ladder.elo import Row
from arena.ladder.store import Ladder, member
from arena.local.redisproc import RedisProcess
from referee.wire.values import MatchStatus


def result(rng: random.Random, i: int, game_id: str, players: int, bots: int) -> dict[str, Any]:
    names = rng.sample(range(bots), players)
    order = list(range(players))
    rng.shuffle(order)
    seats = [{"seat": s, "bot_name": f"bot{n}", "bot_version": "1", "score": 10 - order[s], "rank": order[s] + 1,
              "status": "active", "strikes": 0, "refusals": 0} for s, n in enumerate(names)]  # fmt: skip
    return {"match_id": f"{game_id}-{i}", "game_id": game_id, "end_reason": "completed", "rated": True,
            "finished_at": 1_700_000_000.0 + i, "seats": seats, "plies": 120, "seed": str(i),
            "seed_sha256": "0" * 64, "detail": ""}  # fmt: skip


def store_many(r: redis.Redis, results: Any, chunk: int = 5_000) -> int:
    n = 0
    with r.pipeline(transaction=False) as p:
        for res in results:
            p.hset(keys.match(res["match_id"]), mapping={"result": json.dumps(res), "status": MatchStatus.FINISHED})
            p.xadd(keys.results(), {"match_id": res["match_id"]})
            n += 1
            if n % chunk == 0:
                p.execute()
        p.execute()
    return n


def bench_apply(r: redis.Redis, n: int) -> None:
    rng = random.Random(1)
    store_many(r, (result(rng, i, "shanghaien", 2, 50) for i in range(n)))
    ladder = Ladder(r)
    t = time.perf_counter()
    applied = ladder.sync()
    dt = time.perf_counter() - t
    print(f"apply: {applied} results (2 players, 50 bots) in {dt:.2f} s = {applied / dt:,.0f} results/s")
    rng = random.Random(2)
    store_many(r, (result(rng, i, "shangrila-4p", 4, 50) for i in range(n)))
    t = time.perf_counter()
    applied = ladder.sync()
    dt = time.perf_counter() - t
    print(f"apply: {applied} results (4 players, 50 bots) in {dt:.2f} s = {applied / dt:,.0f} results/s")


def bench_leaderboard(r: redis.Redis, bots: int) -> None:
    game_id = "shangrila-3p"
    rng = random.Random(3)
    with r.pipeline(transaction=False) as p:
        for start in range(0, bots, 10_000):
            rows = [Row(f"bot{i}", "1", rating=rng.gauss(1500, 300), games=rng.randrange(200), last_played=1.7e9,
                        info=rng.random() * 50) for i in range(start, min(bots, start + 10_000))]  # fmt: skip
            p.hset(keys.ladder_rows(game_id), mapping={member(x.key): json.dumps(x.to_dict()) for x in rows})
            p.zadd(keys.ladder_board(game_id), {member(x.key): x.rating for x in rows})
            p.execute()
    ladder = Ladder(r)
    for label, limit, offset in [("top 100", 100, 0), ("page of 100 at rank 50,001", 100, 50_000),
                                 ("top 1,000", 1000, 0)]:  # fmt: skip
        times = []
        for _ in range(30):
            t = time.perf_counter()
            rows_ = ladder.leaderboard(game_id, limit, offset)
            times.append(time.perf_counter() - t)
        assert len(rows_) == limit
        print(f"leaderboard ({bots:,} bots), {label}: median {statistics.median(times) * 1e3:.2f} ms")
    t = time.perf_counter()
    everything = ladder.leaderboard(game_id)
    print(f"leaderboard ({bots:,} bots), all rows: {time.perf_counter() - t:.2f} s for {len(everything):,}")


def bench_rebuild(r: redis.Redis, n: int) -> None:
    game_id = "shanghaien"
    rng = random.Random(4)
    t = time.perf_counter()
    store_many(r, (result(rng, i, game_id, 2, 1000) for i in range(n)))
    print(f"rebuild: generated {n:,} stored results in {time.perf_counter() - t:.1f} s")
    ladder = Ladder(r)
    t = time.perf_counter()
    counted = ladder.rebuild(game_id)
    dt = time.perf_counter() - t
    print(f"rebuild: {counted:,} results (2 players, 1,000 bots) in {dt:.1f} s = {counted / dt:,.0f} results/s")
    print(f"redis memory used: {int(r.info('memory')['used_memory']) / 2**20:,.0f} MiB")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--results", type=int, default=1_000_000, help="stored results to rebuild from")
    parser.add_argument("--bots", type=int, default=100_000, help="leaderboard rows")
    parser.add_argument("--apply", type=int, default=2_000, help="results applied incrementally")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="ladder-bench-") as tmp, RedisProcess(Path(tmp), appendonly=False) as srv:
        r = redis.Redis.from_url(srv.url, socket_timeout=None)
        bench_apply(r, args.apply)
        r.flushall()
        bench_leaderboard(r, args.bots)
        r.flushall()
        bench_rebuild(r, args.results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
