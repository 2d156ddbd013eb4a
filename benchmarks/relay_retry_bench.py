"""What a relayed stream costs the gateway while its match has no worker: the only worker killed under 80
relayed Play streams (40 matches, 2 bots as their own processes), left dead for ``--down-s`` seconds, then
a new one started. Printed: the relay's attempts to reach a worker per second (``arena_relay_retries_total``,
or, on a tree without that counter, the "worker stream lost" lines it logged per attempt), the gateway's
CPU, its log lines per second, and how long after the new worker started every match moved again.

Run from the project root: ``.venv/bin/python benchmarks/relay_retry_bench.py`` (``--down-s 30``).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from arena import keys, metrics  # noqa: E402
from arena.local.arena import LocalArena  # noqa: E402
from arena.redis_client import connect  # noqa: E402
from arena.service.client import ArenaClient  # noqa: E402
from referee.logs import configure  # noqa: E402
from tests.chaos import BOTS, start_bot  # noqa: E402


def retries() -> float:
    counter: Any = getattr(metrics, "RELAY_RETRIES", None)
    return float(counter._value.get()) if counter is not None else float("nan")


async def bench(down_s: float, matches: int, log_path: Path) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="arena-retry-") as tmp:
        args = ("--lease-ms", "1500", "--capacity", str(matches))
        async with LocalArena(Path(tmp), workers=1, worker_args=args, log_level="INFO") as arena:
            admin = ArenaClient(arena.gateway, arena.admin_token)
            tokens = {}
            for name in BOTS:
                _, tokens[name] = await asyncio.to_thread(admin.register_bot, name, "bench", ["shanghaien"], 64)
            bots = [start_bot(n, tokens[n], arena.gateway, arena.logs, 0.2, i) for i, n in enumerate(BOTS)]
            r: Any = connect(arena.redis_url)
            try:
                while sum(b.online for b in await asyncio.to_thread(admin.list_bots)) < len(BOTS):
                    await asyncio.sleep(0.1)
                control = {"disconnect_grace_ms": 120_000}
                ids = [(await asyncio.to_thread(admin.request_match, "shanghaien", list(BOTS), time_control=control))[0]
                       for _ in range(matches)]  # fmt: skip
                while sum(1 for m in ids if int(r.xlen(keys.events(m))) > 5) < matches:
                    await asyncio.sleep(0.2)
                lines0, tries0, cpu0 = _lines(log_path), retries(), time.process_time()
                arena.workers[0].kill()
                t0 = time.monotonic()
                await asyncio.sleep(down_s)
                elapsed = time.monotonic() - t0
                lines1, tries1, cpu1 = _lines(log_path), retries(), time.process_time()
                lens = {m: int(r.xlen(keys.events(m))) for m in ids}
                arena.start_worker()
                started = time.monotonic()
                while any(int(r.xlen(keys.events(m))) <= lens[m] + 2 for m in ids):  # a ply or two more each
                    if time.monotonic() - started > 120:
                        break
                    await asyncio.sleep(0.1)
                moved = time.monotonic() - started
            finally:
                for b in bots:
                    b.kill()
                r.close()
                admin.close()
    return {
        "streams": 2 * matches, "down_s": elapsed,
        "attempts_per_s": (tries1 - tries0) / elapsed,
        "lost_lines_per_s": (lines1[0] - lines0[0]) / elapsed,
        "log_lines_per_s": (lines1[1] - lines0[1]) / elapsed,
        "gateway_cpu_pct": 100 * (cpu1 - cpu0) / elapsed,
        "all_moving_again_s": moved,
    }  # fmt: skip


def _lines(path: Path) -> tuple[int, int]:
    """("worker stream lost" lines, all lines) in this process's log so far."""
    text = path.read_text(errors="replace") if path.exists() else ""
    return text.count("worker stream lost"), text.count("\n")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--down-s", type=float, default=30.0)
    parser.add_argument("--matches", type=int, default=40)
    args = parser.parse_args()
    log_path = Path(tempfile.mkdtemp(prefix="arena-retry-log-")) / "gateway.log"
    fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.dup2(fd, 2)  # the gateway (this process) logs to stderr: counted from the file
    configure(json=True, level="INFO")
    out = asyncio.run(bench(args.down_s, args.matches, log_path))
    print("  ".join(f"{k} {v:.2f}" if isinstance(v, float) else f"{k} {v}" for k, v in out.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
