"""Ladder speed on a private redis-server (started like the tests', without AOF):

1. result applications per second: ``Ladder.sync`` over ``--apply`` (default 20,000) stored results, one
   WATCH/MULTI transaction per batch of ``--batch`` (default 1,000) stream entries; ``Ladder.consume``
   (the same through the consumer group); and, for comparison, ``Ladder.apply`` called once per result
   (a transaction each, what ``sync`` did before batches) over 2,000 results;
2. leaderboard query time with ``--bots`` (default 100,000) rows;
3. rebuild time for ``--results`` (default 1,000,000) stored results, generated straight into Redis.

Results are stored as ``MatchQueue.complete`` stores them: the result on the match hash, a results-stream
entry with the result's result record (what sync and rebuild decode); ``--old-entries``: without records,
as entries stored before records existed (the ladder then reads and decodes each whole result).

Each timed step also prints the CPU seconds this process and the redis-server used: on a shared machine
the wall-clock figures move with the other load, the CPU ones much less.

    .venv/bin/python benchmarks/ladder_bench.py [--results N] [--bots N] [--apply N] [--batch N]
        [--only apply,leaderboard,rebuild] [--old-entries]
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
from arena.redis_client import connect
from arena.results import record_json
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


def store_many(r: redis.Redis, results: Any, chunk: int = 5_000, records: bool = True) -> int:
    """Store results as ``MatchQueue.complete`` does: the result on the match hash, a results-stream entry with
    the result record (``records=False``: without, as stored before records existed)."""
    n = 0
    with r.pipeline(transaction=False) as p:
        for res in results:
            p.hset(keys.match(res["match_id"]), mapping={"result": json.dumps(res), "status": MatchStatus.FINISHED})
            entry = {"match_id": res["match_id"]}
            if records:
                entry[keys.RESULT_RECORD] = record_json(res)
            p.xadd(keys.results(), entry)  # type: ignore[arg-type]
            n += 1
            if n % chunk == 0:
                p.execute()
        p.execute()
    return n


class Clock:
    """Wall time, this process's CPU time and the redis-server's CPU time of one step."""

    def __init__(self, r: redis.Redis) -> None:
        self.r = r

    def _server_cpu(self) -> float:
        info: Any = self.r.info("cpu")
        return float(info["used_cpu_user"]) + float(info["used_cpu_sys"])

    def __enter__(self) -> Clock:
        self.wall, self.cpu, self.server = time.perf_counter(), time.process_time(), self._server_cpu()
        return self

    def __exit__(self, *exc: object) -> None:
        self.wall = time.perf_counter() - self.wall
        self.cpu = time.process_time() - self.cpu
        self.server = self._server_cpu() - self.server

    def __str__(self) -> str:
        return f"(cpu: python {self.cpu:.2f} s, redis {self.server:.2f} s)"


def bench_apply(r: redis.Redis, n: int, batch: int, one_by_one: int = 2_000, records: bool = True) -> None:
    ladder = Ladder(r)
    for seed, game_id, players in [(1, "shanghaien", 2), (2, "shangrila-4p", 4)]:
        rng = random.Random(seed)
        store_many(r, (result(rng, i, game_id, players, 50) for i in range(n)), records=records)
        with Clock(r) as c:
            applied = ladder.sync(batch=batch)
        print(f"apply: {applied:,} results ({players} players, 50 bots), sync in batches of {batch:,}, "
              f"in {c.wall:.2f} s = {applied / c.wall:,.0f} results/s {c}")  # fmt: skip
    r.flushall()
    for seed, game_id, players in [(1, "shanghaien", 2), (2, "shangrila-4p", 4)]:
        rng = random.Random(seed)
        store_many(r, (result(rng, i, game_id, players, 50) for i in range(n)), records=records)
        with Clock(r) as c:
            applied = ladder.consume("bench", burst=True)
        print(f"apply: {applied:,} results ({players} players, 50 bots), consume (the consumer group, as "
              f"`arena ladder run`), in {c.wall:.2f} s = {applied / c.wall:,.0f} results/s {c}")  # fmt: skip
    r.flushall()
    for seed, game_id, players in [(1, "shanghaien", 2), (2, "shangrila-4p", 4)]:
        rng = random.Random(seed)
        store_many(r, (result(rng, i, game_id, players, 50) for i in range(one_by_one)), records=records)
        results = list(ladder.stored_records(game_id))
        with Clock(r) as c:
            applied = sum(ladder.apply(res) for res in results)
        print(f"apply: {applied:,} results ({players} players, 50 bots), one transaction each (Ladder.apply), "
              f"in {c.wall:.2f} s = {applied / c.wall:,.0f} results/s {c}")  # fmt: skip


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


def bench_rebuild(r: redis.Redis, n: int, records: bool = True) -> None:
    game_id = "shanghaien"
    rng = random.Random(4)
    t = time.perf_counter()
    store_many(r, (result(rng, i, game_id, 2, 1000) for i in range(n)), records=records)
    how = "with result records" if records else "without result records (older entries)"
    print(f"rebuild: generated {n:,} stored results {how} in {time.perf_counter() - t:.1f} s")
    ladder = Ladder(r)
    with Clock(r) as c:
        counted = ladder.rebuild(game_id)
    print(
        f"rebuild: {counted:,} results (2 players, 1,000 bots) in {c.wall:.1f} s = {counted / c.wall:,.0f} results/s "
        f"{c}"
    )
    print(f"redis memory used: {int(r.info('memory')['used_memory']) / 2**20:,.0f} MiB")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--results", type=int, default=1_000_000, help="stored results to rebuild from")
    parser.add_argument("--bots", type=int, default=100_000, help="leaderboard rows")
    parser.add_argument("--apply", type=int, default=20_000, help="results applied incrementally")
    parser.add_argument("--batch", type=int, default=1_000, help="stream entries per transaction in sync")
    parser.add_argument("--only", default="apply,leaderboard,rebuild", help="which parts to run (comma-separated)")
    parser.add_argument("--old-entries", action="store_true", help="store results without result records")
    args = parser.parse_args()
    parts = set(args.only.split(","))
    with tempfile.TemporaryDirectory(prefix="ladder-bench-") as tmp, RedisProcess(Path(tmp), appendonly=False) as srv:
        r = connect(srv.url, timeout_s=3600)  # long rebuilds: no read timeout to speak of
        r.config_set("maxmemory", 0)  # deploy/redis.conf's 1gb (noeviction) is less than 1,000,000 results need
        if "apply" in parts:
            bench_apply(r, args.apply, args.batch, records=not args.old_entries)
            r.flushall()
        if "leaderboard" in parts:
            bench_leaderboard(r, args.bots)
            r.flushall()
        if "rebuild" in parts:
            bench_rebuild(r, args.results, records=not args.old_entries)
    return 0


if __name__ == "__main__":
    sys.exit(main())
