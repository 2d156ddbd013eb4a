"""Workers killed again and again under live matches, at length: counts and kill-to-next-move times.

Run from the project root: ``.venv/bin/python benchmarks/worker_kills.py`` (``--matches 100 --kills 30``,
``--direct`` for bots dialling the workers themselves, ``--json``). The same real processes as
``tests/test_worker_kills.py`` (``tests/chaos.py``): a redis-server, two worker processes of which one
running matches is killed with SIGKILL every 1.5-2 s and replaced (every other kill, when it can, one
running a match taken over already), two bots as ``arena bot run`` processes playing through the gateway.
Printed: matches finished, forfeited, lost, doubled, unverified, bots told a result other than the
record or never told one, resumes, and per (kill, match) the time from the kill to the match's next move.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from referee.logs import configure  # noqa: E402
from tests.chaos import kill_run  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--matches", type=int, default=100)
    parser.add_argument("--kills", type=int, default=30)
    parser.add_argument("--capacity", type=int, default=6, help="matches a worker runs at once")
    parser.add_argument("--lease-ms", type=int, default=1500)
    parser.add_argument("--bot-delay", type=float, default=0.03, help="seconds a bot thinks a move")
    parser.add_argument("--direct", action="store_true", help="bots dial the workers (gateway --advertise-workers)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    configure(json=False, level="WARNING")
    report = asyncio.run(
        kill_run(matches=args.matches, kills=args.kills, capacity=args.capacity, lease_ms=args.lease_ms,
                 bot_delay=args.bot_delay, direct=args.direct, seed=args.seed, timeout_s=1800,
                 progress=lambda s: print(s, file=sys.stderr))
    )  # fmt: skip
    waits = sorted(report.kill_to_move_s)
    figures = {
        "path": "direct" if args.direct else "relayed",
        "matches": report.requested, "finished": report.finished, "kills": len(report.kills),
        "resumes": sum(report.resumes.values()),
        "taken_over_twice_or_more": sum(1 for n in report.resumes.values() if n > 1),
        "forfeited": len(report.forfeited), "lost": len(report.lost), "doubled": len(report.doubled),
        "unverified": len(report.unverified), "told_wrong": len(report.told_wrong), "untold": len(report.untold),
        "kill_to_move_s": {
            "n": len(waits),
            "median": round(statistics.median(waits), 2) if waits else None,
            "p90": round(waits[int(0.9 * (len(waits) - 1))], 2) if waits else None,
            "max": round(max(waits), 2) if waits else None,
        },
    }  # fmt: skip
    if args.json:
        print(json.dumps(figures))
    else:
        print(report.summary())
        print(f"kill -> next move (lease {args.lease_ms} ms): {figures['kill_to_move_s']}")
        for mid, lines in report.forfeit_lines.items():
            print(mid, *lines, sep="\n  ")
    return 0


if __name__ == "__main__":
    sys.exit(main())
