"""Resident Redis memory per finished match, and how many matches a second a 1 GB Redis holds for a day.

A fresh local arena (its own redis-server, the gateway with a transcript archive at the settings' default
retention, one worker), two random bots in this process; N Shanghaien matches are played to the end.
Then the gateway's archiver has ``--settle`` seconds to do what it does by default, and the figures are
read: Redis's ``used_memory`` after minus before, over N (the resident bytes per finished match, all
included: records, indexes, the results stream, whatever transcripts and event logs are still there),
``MEMORY USAGE`` of each of a match's own keys, the commands Redis ran per match (``INFO commandstats``:
every call inside a Lua script counts, as an XADD per transcript line does) and Redis's CPU time per match
(``INFO cpu``), which bounds the matches a second one primary can record.

Run from the root of the checkout to measure (its workers are child processes, ``python -m arena.cli``
from there) with ``PYTHONPATH`` naming the same checkout; so the same script measures another one:
``cd ../main && PYTHONPATH=. .venv/bin/python ../this/benchmarks/redis_memory.py``::

    .venv/bin/python benchmarks/redis_memory.py --matches 60

``--json`` prints the figures as JSON on stdout (progress on stderr).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.append(str(ROOT))  # after PYTHONPATH: the code measured is the one PYTHONPATH names

from arena import keys  # noqa: E402
from arena.config import Settings  # noqa: E402
from arena.local.arena import LocalArena  # noqa: E402
from arena.redis_client import connect  # noqa: E402
from arena.service.archive import TranscriptArchive  # noqa: E402
from arena.service.client import ArenaClient  # noqa: E402
from referee.logs import configure  # noqa: E402
from sdk.arena_client import ArenaBotRunner  # noqa: E402
from sdk.bot import Bot, Turn  # noqa: E402

DAY_S = 86_400
WARM_UP = 5
FINISHED = 3  # MATCH_STATE_FINISHED
GB = 1_000_000_000


class Quick(Bot):
    name = "quick"
    version = "1"

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)

    async def act(self, turn: Turn) -> Any:
        return self.rng.choice(turn.legal_actions)


def say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def commands(r: Any) -> dict[str, int]:
    stats: Any = r.info("commandstats")
    return {k.removeprefix("cmdstat_"): int(v["calls"]) for k, v in stats.items()}


def redis_cpu_s(r: Any) -> float:
    """CPU seconds Redis has used (system and user, ``INFO cpu``)."""
    cpu: Any = r.info("cpu")
    return float(cpu["used_cpu_sys"]) + float(cpu["used_cpu_user"])


def own_keys(r: Any, match_id: str) -> dict[str, int]:
    """MEMORY USAGE of each of a match's own keys that exists (0 when gone)."""
    named = {"record": keys.match(match_id), "transcript": keys.transcript(match_id),
             "event_log": keys.events(match_id), "seed": keys.match_seed(match_id)}  # fmt: skip
    return {what: int(r.memory_usage(key, samples=0) or 0) for what, key in named.items()}


async def call(fn: Any, *args: Any, **kwargs: Any) -> Any:
    return await asyncio.to_thread(fn, *args, **kwargs)


async def play(admin: ArenaClient, n: int, total: int) -> list[str]:
    """Request ``n`` matches and wait until ``total`` have finished; their ids."""
    ids = []
    for i in range(n):
        seats = ["m1", "m2"] if i % 2 == 0 else ["m2", "m1"]
        ids.append((await call(admin.request_match, "shanghaien", seats))[0])
    while True:
        done = sum(1 for m in await call(admin.list_matches, limit=total + 10) if m.state == FINISHED)
        say(f"{done}/{total} finished")
        if done >= total:
            return ids
        await asyncio.sleep(2.0)


async def bench(n: int, settle_s: float) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="arena-memory-") as tmp:
        archive = TranscriptArchive(Path(tmp) / "archive")
        retention_s = float(Settings.defaults().transcript_retention_min) * 60  # the gateway's default
        async with LocalArena(Path(tmp) / "arena", workers=1, archive=archive, retention_s=retention_s,
                              log_level="WARNING", worker_args=("--capacity", "8")) as arena:  # fmt: skip
            admin = ArenaClient(arena.gateway, arena.admin_token)
            tokens = {}
            for name in ("m1", "m2"):
                _, tokens[name] = await call(admin.register_bot, name, "bench", ["shanghaien"], 1000)
            runners = [ArenaBotRunner(Quick(i), arena.gateway, tokens[b]) for i, b in enumerate(tokens)]
            tasks = [asyncio.create_task(x.run()) for x in runners]
            while sum(b.online for b in await call(admin.list_bots)) < 2:
                await asyncio.sleep(0.1)
            r = connect(arena.redis_url)
            await play(admin, WARM_UP, WARM_UP)  # one-off costs (scripts, streams, indexes, connections) before
            await asyncio.sleep(settle_s)
            await call(r.memory_purge)
            before = await call(r.info, "memory")
            calls_before = await call(commands, r)
            cpu_before = await call(redis_cpu_s, r)
            started = time.monotonic()
            ids = await play(admin, n, WARM_UP + n)
            played_s = time.monotonic() - started
            calls = {k: v - calls_before.get(k, 0) for k, v in (await call(commands, r)).items()}
            cpu_s = await call(redis_cpu_s, r) - cpu_before
            at_end = sum([sum((await call(own_keys, r, m)).values()) for m in ids]) / n
            await asyncio.sleep(settle_s)  # the gateway's archiver runs meanwhile, as it does by default
            for t in tasks:
                t.cancel()
            await call(r.memory_purge)
            after = await call(r.info, "memory")
            per_key: dict[str, float] = {}
            for m in ids:
                for what, size in (await call(own_keys, r, m)).items():
                    per_key[what] = per_key.get(what, 0) + size / n
            r.close()
            admin.close()
    resident = (int(after["used_memory"]) - int(before["used_memory"])) / n
    dataset = (int(after["used_memory_dataset"]) - int(before["used_memory_dataset"])) / n
    total_calls = sum(calls.values())
    return {
        "matches": n,
        "played_s": round(played_s, 1),
        "retention_s": retention_s,
        "settle_s": settle_s,
        "resident_bytes_per_match": round(resident),
        "dataset_bytes_per_match": round(dataset),
        "own_keys_bytes_per_match_at_end": round(at_end),
        "own_keys_bytes_per_match_after_settle": {k: round(v) for k, v in per_key.items()},
        "matches_per_s_for_a_day_in_1gb": round(GB / max(resident, 1) / DAY_S, 2),
        "redis_commands_per_match": round(total_calls / n),
        "redis_cpu_ms_per_match": round(1000 * cpu_s / n, 2),
        "matches_per_s_per_redis_core": round(n / max(cpu_s, 1e-9), 1),
        "xadd_per_match": round(calls.get("xadd", 0) / n),
        "xadd_share": round(calls.get("xadd", 0) / max(total_calls, 1), 3),
        "commands_per_match_top": {k: round(v / n, 1) for k, v in sorted(calls.items(), key=lambda kv: -kv[1])[:8]},
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--matches", type=int, default=60)
    parser.add_argument("--settle", type=float, default=10.0, help="seconds for the archiver after the last match")
    parser.add_argument("--json", action="store_true", help="the figures as JSON on stdout")
    args = parser.parse_args()
    configure(json=False, level="WARNING")
    out = asyncio.run(bench(args.matches, args.settle))
    if args.json:
        print(json.dumps(out))
        return 0
    print(f"{out['matches']} finished matches (played in {out['played_s']} s; transcript retention "
          f"{out['retention_s']} s, {out['settle_s']} s to settle)")  # fmt: skip
    print(
        f"resident Redis memory per finished match: {out['resident_bytes_per_match']:,} bytes (used_memory; "
        f"{out['dataset_bytes_per_match']:,} of the dataset)"
    )
    print(
        f"  its own keys right at the end: {out['own_keys_bytes_per_match_at_end']:,} bytes; after settling: "
        + ", ".join(f"{k} {v:,}" for k, v in out["own_keys_bytes_per_match_after_settle"].items())
    )
    print(f"a 1 GB Redis holds a day of {out['matches_per_s_for_a_day_in_1gb']} finished matches a second")
    print(f"Redis commands per match: {out['redis_commands_per_match']} (XADD {out['xadd_per_match']}, "
          f"{out['xadd_share']:.0%} of them)")  # fmt: skip
    print(f"Redis CPU per match: {out['redis_cpu_ms_per_match']} ms: one core (a primary) runs at most "
          f"{out['matches_per_s_per_redis_core']} matches a second")  # fmt: skip
    print("  most run: " + ", ".join(f"{k} {v}" for k, v in out["commands_per_match_top"].items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
