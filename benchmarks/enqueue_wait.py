"""What waiting for the replicas costs a match's enqueue: ``MatchStore.request`` of ladder matches (as the
scheduler queues them, ``LadderRunner._enqueue``) one after another on a Sentinel-managed set
(``tests/sentinel.py``: a primary, two replicas, three sentinels on loopback, AOF on each), once with
``redis_replicas`` 0 (no ``WAIT``) and once with 2 (``WAIT 2``, as deploy/ runs it). Printed per setting:
matches a second from one thread, and the median and 99th percentile of one request in milliseconds. The
ladder scheduler queues at most ``max_rate`` matches a second (docs/ladder.md); the question is whether the
``WAIT`` keeps it from that.

    .venv/bin/python benchmarks/enqueue_wait.py [--matches 2000] [--json]
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

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from arena.ladder.values import DEFAULT_MAX_RATE  # noqa: E402
from arena.redis_client import connect, required_replicas  # noqa: E402
from arena.service.matches import MatchStore  # noqa: E402
from arena.service.queue import Priority  # noqa: E402
from arena.service.registry import Registry  # noqa: E402
from tests.sentinel import SentinelSet  # noqa: E402

BOTS = ("bench-a", "bench-b")


def run(url: str, replicas: int, matches: int) -> dict[str, Any]:
    r = connect(url, replicas=replicas)
    assert required_replicas(r) == replicas
    store = MatchStore(r)
    took: list[float] = []
    started = time.perf_counter()
    for i in range(matches):
        t = time.perf_counter()
        store.request("shanghaien", BOTS, rated=True, match_id=f"ladder-bench-{replicas}-{i}",
                      priority=Priority.LADDER, requested_by="ladder")  # fmt: skip
        took.append(time.perf_counter() - t)
    wall = time.perf_counter() - started
    r.close()
    took.sort()
    return {
        "replicas": replicas,
        "matches": matches,
        "per_s": matches / wall,
        "median_ms": statistics.median(took) * 1000,
        "p99_ms": took[int(len(took) * 0.99)] * 1000,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--matches", type=int, default=2000, help="ladder matches queued per setting")
    parser.add_argument("--json", action="store_true", help="print JSON only")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, SentinelSet(Path(tmp) / "redis") as s:
        r = connect(s.url, replicas=2)
        for name in BOTS:
            Registry(r).register(name, "bench", ["shanghaien"])
        r.close()
        out = [run(s.url, n, args.matches) for n in (0, 2)]
    if args.json:
        print(json.dumps(out))
        return
    print(f"ladder enqueue (MatchStore.request), {args.matches} matches one after another, Sentinel set on loopback")
    print(f"(the scheduler queues at most {DEFAULT_MAX_RATE:g} a second)")
    for row in out:
        wait = "WAIT 2" if row["replicas"] else "no WAIT"
        figures = f"median {row['median_ms']:.2f} ms   p99 {row['p99_ms']:.2f} ms"
        print(f"  {wait:8} {row['per_s']:8.0f} matches/s   {figures}")


if __name__ == "__main__":
    main()
