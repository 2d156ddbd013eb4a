"""Throughput of the arena service: matches per minute from enqueue to stored result, with random
bots, for 1 and 2 referee worker processes; and the enqueue-to-start latency of a match on an idle
arena.

Run from the project root: ``.venv/bin/python benchmarks/arena_bench.py`` (``--matches 60``,
``--workers 1 --workers 2``, ``--game shanghaien``). Each configuration gets a fresh local arena: its
own ``redis-server`` (AOF on, as deployed), the gateway, the workers as processes, and two ``random``
reference bots as their own processes connected through their sessions; everything as in a
deployment, on one 2-core machine. Figures printed at the end.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from arena.local.arena import LocalArena, start_bot  # noqa: E402
from arena.service.client import ArenaClient  # noqa: E402
from referee.logs import configure  # noqa: E402


async def call(fn: Any, *args: Any, **kwargs: Any) -> Any:
    return await asyncio.to_thread(fn, *args, **kwargs)


async def wait_finished(admin: ArenaClient, ids: list[str]) -> dict[str, Any]:
    done: dict[str, Any] = {}
    while len(done) < len(ids):
        for match_id in ids:
            if match_id not in done:
                m = await call(admin.describe, match_id)
                if m.state == 3:
                    done[match_id] = m
        await asyncio.sleep(0.05)
    return done


async def bench(workers: int, matches: int, game: str, latency_samples: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="arena-bench-") as tmp:
        async with LocalArena(Path(tmp), workers=workers, log_level="WARNING") as arena:
            admin = ArenaClient(arena.gateway, arena.admin_token)
            bots = []
            for name in ("r1", "r2"):
                _, token = await call(admin.register_bot, name, "bench", [game], 1000)
                bots.append(start_bot_named(name, token, arena))
            while sum(b.online for b in await call(admin.list_bots)) < 2:
                await asyncio.sleep(0.1)
            # latency: one match at a time on an idle arena
            start_ms: list[float] = []
            for i in range(latency_samples):
                match_id, _ = await call(admin.request_match, game, ["r1", "r2"] if i % 2 else ["r2", "r1"])
                m = (await wait_finished(admin, [match_id]))[match_id]
                start_ms.append((m.started_at - m.enqueued_at) * 1000)
            # throughput: a batch queued at once
            t0 = time.time()
            ids = []
            for i in range(matches):
                match_id, _ = await call(admin.request_match, game, ["r1", "r2"] if i % 2 else ["r2", "r1"])
                ids.append(match_id)
            done = await wait_finished(admin, ids)
            elapsed = max(m.finished_at for m in done.values()) - t0
            plies = sum(m.result.plies for m in done.values())
            completed = sum(1 for m in done.values() if m.result.end_reason == 1)
            for b in bots:
                b.terminate()
                b.wait()
            admin.close()
    return {
        "workers": workers,
        "matches": matches,
        "completed": completed,
        "seconds": elapsed,
        "matches_per_min": matches / elapsed * 60,
        "plies_per_s": plies / elapsed,
        "start_ms_median": statistics.median(start_ms),
        "start_ms_max": max(start_ms),
    }


def start_bot_named(name: str, token: str, arena: LocalArena) -> Any:
    """A ``random`` reference bot process registered as ``name``."""
    return start_bot("random", token, arena.gateway, arena.logs, 0.0)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--matches", type=int, default=60, help="matches per configuration (default 60)")
    parser.add_argument("--workers", type=int, action="append", help="worker processes (repeatable; default 1 and 2)")
    parser.add_argument("--game", default="shanghaien")
    parser.add_argument("--latency-samples", type=int, default=10)
    args = parser.parse_args()
    configure(json=False, level="WARNING")
    rows = [asyncio.run(bench(w, args.matches, args.game, args.latency_samples)) for w in args.workers or [1, 2]]
    print(f"\n{args.game}, random bots (2 bot processes), enqueue -> stored result")
    print(f"{'workers':>7} {'matches':>7} {'done':>5} {'seconds':>8} {'matches/min':>12} {'plies/s':>8} "
          f"{'start ms (median)':>18} {'start ms (max)':>15}")  # fmt: skip
    for r in rows:
        print(f"{r['workers']:>7} {r['matches']:>7} {r['completed']:>5} {r['seconds']:>8.1f} "
              f"{r['matches_per_min']:>12.0f} {r['plies_per_s']:>8.0f} {r['start_ms_median']:>18.1f} "
              f"{r['start_ms_max']:>15.1f}")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
