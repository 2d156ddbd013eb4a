"""Redis's primary killed again and again (and once frozen past the failover) under a ladder run: counts
and kill-to-next-move times.

Run from the project root: ``.venv/bin/python benchmarks/redis_failover.py`` (``--matches 200 --kills 5
--stop-s 12``, ``--json``). The same real processes as ``tests/test_redis_failover.py``: a Sentinel set
(``tests/sentinel.py``: one primary, two replicas, three sentinels with ``down-after-milliseconds 1000``
and ``failover-timeout 3000``), two referee workers, two bots as ``arena bot run`` processes playing
through the gateway, the ladder applying results as they come, and bots and owners registered and tokens
rotated meanwhile. Every few seconds the primary gets SIGKILL (and comes back as a replica of the new
one); one fault is SIGSTOP for ``--stop-s`` seconds, past the failover and ``min-replicas-max-lag``, then
SIGCONT: the woken primary must come back as a replica and nothing it took meanwhile may win. Printed:
matches finished, lost, rated twice, transcripts failing verification, ladder vs rebuild, registrations
and rotations lost, processes that exited, the woken primary's role, and the time from each fault to the
next move of each match it interrupted.

Measured (2 vCPU, loopback; one run each, 6 faults, 200 matches): nothing lost, rated twice or unverified,
ladder == rebuild, no process exited, the woken primary back as a replica, kill -> next move median
3.3-3.5 s, max 6.4-14.3 s. Registrations and token rotations: with ``--replicas -1`` (auto: WAIT for 1
of the 2 replicas) 6 of 2657 reported done were lost in one run; with ``--replicas 2`` 0 of 2311. A
write one replica acknowledged is lost when the sentinels promote the other (they choose by the offsets
they last polled, up to a second old): docs/deploy.md.

Again on 2026-11-27 with ``--replicas 2``, after registrations became idempotent by request id (the
churn's client retries a registration through the failover with its id): 200 matches, 5 SIGKILLs and a
12 s SIGSTOP: finished 200, lost 0, rated twice 0, unverified 0, ladder games 400 == rebuild, exited 0,
the woken primary back as a replica; 2,313 registrations and rotations done, 1 refused, 0 lost; kill ->
next move median 3.48 s over 35 interrupted matches, at most 4.96 s after a SIGKILL (the target: the
sentinels' 1 s down-after + 5 s) and 9.47 s after the SIGSTOP.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from referee.logs import configure  # noqa: E402
from tests.chaos import kill_run  # noqa: E402
from tests.sentinel import SentinelSet  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--matches", type=int, default=200)
    parser.add_argument("--kills", type=int, default=5, help="SIGKILLs of the primary")
    parser.add_argument("--stop-s", type=float, default=12.0, help="how long the SIGSTOP freezes the primary")
    parser.add_argument("--every", type=float, default=4.0, help="seconds between faults (at least)")
    parser.add_argument("--capacity", type=int, default=3, help="matches a worker runs at once")
    parser.add_argument("--bot-delay", type=float, default=0.04, help="seconds a bot thinks a move")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--replicas",
        type=int,
        default=-1,
        help="the redis_replicas setting of every process (-1: auto, 1 behind Sentinel)",
    )
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    os.environ["ARENA_REDIS_REPLICAS"] = str(args.replicas)  # the workers inherit it
    configure(json=False, level="ERROR")
    faults = args.kills + 1
    with tempfile.TemporaryDirectory(prefix="redis-failover-") as tmp, SentinelSet(Path(tmp) / "redis") as sentinels:
        report = asyncio.run(
            kill_run(matches=args.matches, kills=faults, kill_every=(args.every, args.every + 2),
                     capacity=args.capacity, bot_delay=args.bot_delay, seed=args.seed, fault="primary",
                     sentinels=sentinels, redis_stops=(faults // 2,), stop_s=args.stop_s,
                     redis_url=sentinels.url, churn=True, timeout_s=1800, data_dir=Path(tmp),
                     progress=lambda s: print(s, file=sys.stderr))
        )  # fmt: skip
    waits = sorted(report.kill_to_move_s)
    figures = {
        "redis_replicas": args.replicas,
        "matches": report.requested, "finished": report.finished, "faults": len(report.kills),
        "lost": len(report.lost), "rated_twice": len(report.doubled), "unverified": len(report.unverified),
        "ladder_games": report.ladder_games, "ladder_equals_rebuild": report.ladder_equals_rebuild,
        "forfeited": len(report.forfeited), "told_wrong": len(report.told_wrong), "untold": len(report.untold),
        "registrations_rotations_done": report.churn_done, "refused": report.churn_refused,
        "registrations_rotations_lost": report.churn_lost, "exited": report.exited,
        "stuck_bots": report.stuck_bots, "woken_primary_role": report.woken_roles,
        "kill_to_move_s": {
            "n": len(waits),
            "median": round(statistics.median(waits), 2) if waits else None,
            "max": round(max(waits), 2) if waits else None,
            "per_fault": [[k.worker, [round(t, 2) for t in w]]
                          for k, w in zip(report.kills, report.kill_to_move_by_kill, strict=True)],
        },
    }  # fmt: skip
    if args.json:
        print(json.dumps(figures))
    else:
        print(report.summary())
        print(json.dumps(figures, indent=1))
    ok = (report.finished == report.requested and not (report.lost or report.doubled or report.unverified
          or report.churn_lost or report.exited) and report.ladder_equals_rebuild
          and all(r == "slave" for r in report.woken_roles))  # fmt: skip
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
