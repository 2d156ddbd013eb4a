"""The ladder scheduler's pass at scale (issue 34): how long one pass takes (reading the bots, then
``Scheduler.tick`` queueing up to ``queue_depth`` matches through the real ``MatchStore.request``) and
how many matches a second it schedules, with ``--online`` bots online among 1,000 / 10,000 / 100,000
registered (``--registered``), on a private redis-server.

Every registered bot is rated (on the board of its game); the online ones have a session's presence
(``Registry.seen``). Each pass is timed as the ladder process runs it: the read (``RegistryBots.bots()``)
then the ``tick`` (the pairing policy and the queueing), each in wall time and in this process's CPU time
(on a shared machine the wall figures move with the other load). The first pass reads every online bot;
the next ``--passes`` are the steady state. Each size stops after ``--budget-s`` seconds of passes (the code
before issue 34 took 77 s a pass at 100,000). Runs against older code too (``PYTHONPATH`` at a checkout).

    .venv/bin/python benchmarks/scheduler_bench.py [--registered 1000,10000,100000] [--online 10000]
        [--passes 20] [--queue-depth 64] [--budget-s 60]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from arena import keys
from arena.ladder.elo import Row
from arena.ladder.scheduler import SchedulerConfig
from arena.ladder.store import member
from arena.local.ladder_runner import LadderRunner
from arena.local.redisproc import RedisProcess
from arena.redis_client import connect
from arena.service.names import fold
from arena.service.registry import Registry
from referee.wire.values import token_sha256

GAME = "shanghaien"


def populate(r: Any, registered: int, online: int) -> Registry:
    """``registered`` bots (the registry's own script, pipelined), every one rated, the first ``online``
    of them with a session's presence."""
    registry = Registry(r)
    names = [f"bot{i:06d}" for i in range(registered)]
    for i in range(0, registered, 2_000):
        pipe = r.pipeline(transaction=False)
        for name in names[i : i + 2_000]:
            token = token_sha256(name)
            registry._register(
                keys=[keys.bot(name), keys.token(token), keys.bots(), keys.bot_name_fold(fold(name))],
                args=[name, "bench", f'["{GAME}"]', token, 4, f"{time.time():.6f}", "", keys.token("")], client=pipe,
            )  # fmt: skip
        rated = {n: 1500.0 + (hash(n) % 400) for n in names[i : i + 2_000]}
        pipe.zadd(keys.ladder_board(GAME), {member((n, "1")): v for n, v in rated.items()})
        pipe.hset(keys.ladder_rows(GAME), mapping={
            member((n, "1")): json.dumps(Row(n, "1", rating=v, games=30, wins=15, losses=15, info=7.0).to_dict())
            for n, v in rated.items()
        })  # fmt: skip
        pipe.execute()
    for name in names[:online]:
        registry.seen(name, "1", {"session_id": name, keys.PRESENCE_LADDER: True})
    return registry


def run(registered: int, online: int, passes: int, queue_depth: int, budget_s: float) -> dict[str, Any]:
    with (
        tempfile.TemporaryDirectory(prefix="scheduler-bench-") as tmp,
        RedisProcess(Path(tmp), appendonly=False) as srv,
    ):
        r = connect(srv.url)
        t0 = time.perf_counter()
        registry = populate(r, registered, online)
        setup_s = time.perf_counter() - t0
        config = SchedulerConfig(games=(GAME,), queue_depth=queue_depth, max_rate=1e9, burst=10**9)
        runner = LadderRunner(srv.url, config, seed="bench")
        read: list[tuple[float, float]] = []  # (wall, cpu) of RegistryBots.bots()
        ticks: list[tuple[float, float]] = []  # (wall, cpu) of tick()
        scheduled: list[int] = []
        deadline = time.monotonic() + budget_s
        for _ in range(passes + 1):
            registry.seen("bot000000", "1", {"session_id": "keep"})  # the gateway's liveness, as its heartbeat
            t, c = time.perf_counter(), time.process_time()
            bots = runner.scheduler.source.bots()
            t1, c1 = time.perf_counter(), time.process_time()
            queued = runner.scheduler.tick(0, bots)
            read.append((t1 - t, c1 - c))
            ticks.append((time.perf_counter() - t1, time.process_time() - c1))
            scheduled.append(len(queued))
            if time.monotonic() > deadline:
                break
        runner.r.close()
        r.close()

    def median(xs: list[tuple[float, float]], i: int) -> float:
        return statistics.median(x[i] for x in (xs[1:] or xs))

    steady_cpu = sum(a[1] + b[1] for a, b in zip(read[1:] or read, ticks[1:] or ticks, strict=True))
    return {
        "registered": registered,
        "online": online,
        "setup_s": setup_s,
        "first_read_s": read[0][0],
        "read_s": median(read, 0),
        "read_cpu_s": median(read, 1),
        "tick_s": median(ticks, 0),
        "tick_cpu_s": median(ticks, 1),
        "passes": len(read) - 1,
        "per_cpu_s": sum(scheduled[1:] or scheduled) / max(1e-9, steady_cpu),
        "per_pass": statistics.median(scheduled[1:] or scheduled),
        "bots_seen": len(bots),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--registered", default="1000,10000,100000")
    parser.add_argument("--online", type=int, default=10_000)
    parser.add_argument("--passes", type=int, default=20)
    parser.add_argument("--queue-depth", type=int, default=64, help="matches queued per pass (the scheduler's target)")
    parser.add_argument("--budget-s", type=float, default=60.0)
    args = parser.parse_args()
    print(f"scheduler pass: RegistryBots.bots() + tick() queueing up to {args.queue_depth} matches (real MatchStore)")
    for n in (int(x) for x in args.registered.split(",")):
        f = run(n, min(n, args.online), args.passes, args.queue_depth, args.budget_s)
        print(
            f"  {f['registered']:>7,} registered, {f['online']:>6,} online ({f['bots_seen']:,} seen, setup"
            f" {f['setup_s']:.0f} s): first read {f['first_read_s'] * 1000:,.0f} ms; then a read"
            f" {f['read_s'] * 1000:,.1f} ms (cpu {f['read_cpu_s'] * 1000:,.1f}), a tick {f['tick_s'] * 1000:,.0f} ms"
            f" (cpu {f['tick_cpu_s'] * 1000:,.0f}) for {f['per_pass']:.0f} matches;"
            f" {f['per_cpu_s']:,.1f} matches per cpu-second ({f['passes']} passes)",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
