"""What a match costs Redis: commands (by command) and Redis CPU per match and per ply, for each game, from
``INFO commandstats`` and ``INFO cpu`` read before and after a fixed batch of real matches. The figures
docs/scaling.md works from (how many matches and plies a second one Redis carries).

Run from the project root: ``.venv/bin/python benchmarks/redis_cost.py`` (``--matches 60`` per game,
``--game shanghaien`` to run one game only, ``--workers 1``, ``--json``). A fresh local arena
(``LocalArena``: its own ``redis-server`` with AOF on, as deployed; the gateway in this process; the
workers as processes), four ``random`` reference bots as their own processes playing through the gateway's
relay, and the ladder applying every result (``LadderRunner`` without its scheduler, threads of this
process), as ``arena ladder run`` does: so a match's cost is everything the arena does for it in Redis,
from the request to its rating. The matches are rated and queued at once; the batch is over when the
ladder has applied every one of them.

``--sentinel``: the arena on a Sentinel-managed set instead (``tests/sentinel.py``: a primary, two replicas,
three sentinels on loopback, AOF on each) with ``redis_replicas`` 2, as deploy/ runs it: the figures are
the primary's, which then also feeds two replicas and answers the ``WAIT`` of every write that must not be
lost.

Also printed: what the arena costs Redis while nothing is played (sessions' heartbeats, presence, the
workers' and ladder's blocking reads) per second of an idle window before the batches, so that it can be
told from the matches' cost (the per-match figures include it for the batch's duration; the idle rate
shows how little that is).

Redis CPU is ``used_cpu_user + used_cpu_sys`` of the whole server and of its main thread
(``*_main_thread``, Redis 7), which is the one that serves commands: its CPU per ply is what caps one
Redis. Commands run by Lua scripts count in ``commandstats`` under their own names as well as under
``evalsha``/``eval`` (the script calls): "commands" below is every command the server executed, "calls"
what clients sent (every command but those run inside scripts). Linux, any Redis >= 7.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from arena import keys  # noqa: E402
from arena.local.arena import LocalArena, start_bot  # noqa: E402
from arena.local.ladder_runner import LadderRunner  # noqa: E402
from arena.redis_client import connect  # noqa: E402
from arena.service.client import ArenaClient  # noqa: E402
from arena.service.ratelimit import RateLimits  # noqa: E402
from referee import games  # noqa: E402
from referee.logs import configure  # noqa: E402
from tests.sentinel import SentinelSet  # noqa: E402

BOTS = ("r1", "r2", "r3", "r4")
SCRIPT_CALLS = ("evalsha", "eval", "evalsha_ro", "eval_ro", "fcall", "fcall_ro")
IDLE_S = 10.0


def seats(game_id: str) -> int:
    return {"shanghaien": 2, "shangrila-3p": 3, "shangrila-4p": 4}[game_id]


def snapshot(r: Any) -> tuple[Counter[str], dict[str, float]]:
    """Calls per command (``cmdstat_*``) and the server's CPU seconds (whole, main thread)."""
    stats = r.info("commandstats")
    calls = Counter({name.removeprefix("cmdstat_"): int(v["calls"]) for name, v in stats.items()})
    cpu = r.info("cpu")
    return calls, {
        "server": float(cpu["used_cpu_user"]) + float(cpu["used_cpu_sys"]),
        "main_thread": float(cpu.get("used_cpu_user_main_thread", cpu["used_cpu_user"]))
        + float(cpu.get("used_cpu_sys_main_thread", cpu["used_cpu_sys"])),
    }


def difference(r: Any, before: tuple[Counter[str], dict[str, float]]) -> tuple[Counter[str], dict[str, float]]:
    calls, cpu = snapshot(r)
    calls.subtract(before[0])
    calls["info"] -= 2  # the two INFO calls of the snapshot itself
    return +calls, {k: cpu[k] - before[1][k] for k in cpu}


def applied(ladder: LadderRunner, game_id: str) -> int:
    """Seat results the ladder has applied for the game (a match of n seats adds n)."""
    return sum(s.row.games for s in ladder.ladder.leaderboard(game_id))


async def batch(arena: LocalArena, admin: ArenaClient, ladder: LadderRunner, game_id: str, n: int) -> dict[str, Any]:
    r = connect(arena.redis_url)
    seats_before = await asyncio.to_thread(applied, ladder, game_id)
    before = snapshot(r)
    t0 = time.monotonic()
    k = seats(game_id)
    ids = []
    for i in range(n):
        names = [BOTS[(i + j) % len(BOTS)] for j in range(k)]
        match_id, _ = await asyncio.to_thread(admin.request_match, game_id, names, rated=True)
        ids.append(match_id)
    want = seats_before + k * n
    while await asyncio.to_thread(applied, ladder, game_id) < want:
        await asyncio.sleep(0.05)
    seconds = time.monotonic() - t0
    calls, cpu = difference(r, before)
    results = [json.loads(r.hget(keys.match(i), "result") or b"null") for i in ids]
    r.close()
    plies = sum(int(x["plies"]) for x in results)
    return {
        "game": game_id,
        "matches": n,
        "completed": sum(1 for x in results if x["end_reason"] == "completed"),
        "plies": plies,
        "seconds": seconds,
        "commands": dict(calls.most_common()),
        "redis_cpu_s": cpu,
    }


async def run(game_ids: list[str], matches: int, workers: int, sentinel: bool) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="redis-cost-") as tmp:
        redis_set = SentinelSet(Path(tmp) / "redis").start() if sentinel else None
        try:
            return await _run(Path(tmp), game_ids, matches, workers, redis_set)
        finally:
            if redis_set is not None:
                redis_set.stop()


async def _run(tmp: Path, game_ids: list[str], matches: int, workers: int, redis_set: Any) -> dict[str, Any]:
    if redis_set is not None:
        os.environ["ARENA_REDIS_REPLICAS"] = "2"  # the workers (processes) and this process: deploy/'s setting
    limits = RateLimits(session_opens=0, match_requests=0)  # measure matches, not refusals
    url = redis_set.url if redis_set is not None else None
    async with LocalArena(tmp, workers=workers, log_level="WARNING", limits=limits, redis_url=url) as arena:
        admin = ArenaClient(arena.gateway, arena.admin_token)
        bots = []
        for name in BOTS:
            _, token = await asyncio.to_thread(admin.register_bot, name, "bench", list(games.GAME_IDS), 1000)
            bots.append(start_bot("random", token, arena.gateway, arena.logs, 0.0))
        while sum(b.online for b in await asyncio.to_thread(admin.list_bots)) < len(BOTS):
            await asyncio.sleep(0.1)
        ladder = LadderRunner(arena.redis_url, schedule=False)
        threads = ladder.start()
        try:
            r = connect(arena.redis_url)
            version = str(r.info("server")["redis_version"])
            before = snapshot(r)
            await asyncio.sleep(IDLE_S)
            idle_calls, idle_cpu = difference(r, before)
            r.close()
            rows = [await batch(arena, admin, ladder, g, matches) for g in game_ids]
        finally:
            ladder.stop(threads)
            for b in bots:
                b.terminate()
                b.wait()
            admin.close()
    return {
        "redis_version": version,
        "sentinel": redis_set is not None,
        "workers": workers,
        "idle": {"seconds": IDLE_S, "commands": dict(idle_calls.most_common()), "redis_cpu_s": idle_cpu},
        "games": rows,
    }


def summary(row: dict[str, Any], idle: dict[str, Any]) -> dict[str, float]:
    """Per match and per ply; CPU net of the idle rate over the batch's seconds (Redis's own cron and
    the sessions' heartbeats, which a match does not cause)."""
    commands = row["commands"]
    total = sum(commands.values())
    scripts = sum(commands.get(c, 0) for c in SCRIPT_CALLS)
    idle_us = idle["redis_cpu_s"]["main_thread"] / idle["seconds"] * row["seconds"] * 1e6
    main_us = row["redis_cpu_s"]["main_thread"] * 1e6 - idle_us
    return {
        "commands_per_match": total / row["matches"],
        "commands_per_ply": total / row["plies"],
        "script_calls_per_match": scripts / row["matches"],
        "redis_cpu_us_per_match": main_us / row["matches"],
        "redis_cpu_us_per_ply": main_us / row["plies"],
        "server_cpu_us_per_ply": row["redis_cpu_s"]["server"] * 1e6 / row["plies"],
        "plies_per_match": row["plies"] / row["matches"],
        # one Redis main thread, all of a core on the arena's commands, nothing else
        "ceiling_plies_per_s": 1e6 / (main_us / row["plies"]),
        "ceiling_matches_per_s": 1e6 / (main_us / row["matches"]),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--matches", type=int, default=60, help="matches per game (default 60)")
    parser.add_argument("--game", action="append", choices=list(games.GAME_IDS), help="repeatable; default every game")
    parser.add_argument("--workers", type=int, default=1, help="worker processes (default 1)")
    parser.add_argument("--top", type=int, default=12, help="commands listed per game (default 12)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON only")
    parser.add_argument("--sentinel", action="store_true", help="a primary, two replicas and three sentinels, "
                        "redis_replicas 2 (deploy/'s layout); the primary's figures")  # fmt: skip
    args = parser.parse_args()
    configure(json=False, level="WARNING")
    game_ids = args.game or list(games.GAME_IDS)
    try:
        import uvloop

        out = uvloop.run(run(game_ids, args.matches, args.workers, args.sentinel))
    except ImportError:
        out = asyncio.run(run(game_ids, args.matches, args.workers, args.sentinel))
    for row in out["games"]:
        row["per"] = summary(row, out["idle"])
    if args.json:
        print(json.dumps(out, indent=1))
        return 0
    idle = out["idle"]
    layout = "the primary of a Sentinel set, 2 replicas, WAIT 2" if out["sentinel"] else "one server"
    print(f"Redis {out['redis_version']} ({layout}), {out['workers']} worker(s), 4 random bots through the gateway, "
          "ladder on")  # fmt: skip
    idle_rate = sum(idle["commands"].values()) / idle["seconds"]
    idle_us = idle["redis_cpu_s"]["main_thread"] * 1e6 / idle["seconds"]
    print(f"idle ({idle['seconds']:.0f} s, {len(BOTS)} sessions): {idle_rate:.1f} commands/s, {idle_us:.0f} CPU-us/s")
    print(f"\n{'game':<14} {'matches':>7} {'done':>5} {'plies':>7} {'s':>6} {'cmd/match':>10} {'cmd/ply':>8} "
          f"{'scripts/match':>13} {'CPU-us/match':>12} {'CPU-us/ply':>10} {'plies/s cap':>11} "
          f"{'matches/s cap':>13}")  # fmt: skip
    for row in out["games"]:
        p = row["per"]
        print(f"{row['game']:<14} {row['matches']:>7} {row['completed']:>5} {row['plies']:>7} {row['seconds']:>6.1f} "
              f"{p['commands_per_match']:>10.1f} {p['commands_per_ply']:>8.2f} {p['script_calls_per_match']:>13.1f} "
              f"{p['redis_cpu_us_per_match']:>12.0f} {p['redis_cpu_us_per_ply']:>10.1f} "
              f"{p['ceiling_plies_per_s']:>11,.0f} {p['ceiling_matches_per_s']:>13,.0f}")  # fmt: skip
    for row in out["games"]:
        total = sum(row["commands"].values())
        print(f"\n{row['game']}: commands per match (of {total / row['matches']:.1f}), the {args.top} most frequent")
        for name, n in list(row["commands"].items())[: args.top]:
            print(f"  {name:<22} {n / row['matches']:>8.2f}  {n / total:>6.1%}")
    print("\nCPU: the Redis main thread's (used_cpu_*_main_thread), net of the idle rate over the batch's seconds;"
          " cap: one main thread busy with nothing else.")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
