"""Many live viewers of one match on one web process: how soon each sees a move, and what it costs.

    .venv/bin/python benchmarks/web_live.py [--viewers 1000] [--clients 2] [--min-ms 50] [--max-ms 100]

A real Redis (``RedisProcess``) and a real ``arena web`` process; a match made running with the service's
stores; ``--viewers`` Server-Sent Events clients (raw sockets, in ``--clients`` processes) follow its live
stream (``/matches/ID/live``). A writer then appends a real transcript's lines to the match's event log
as a worker does (``MatchQueue.append_events``), one every ``--min-ms`` to ``--max-ms``. Per line and
viewer: the delay from just before the append to the viewer reading the line's message (p50, p99, max;
the issue's target is p99 <= 500 ms); and the web process's CPU time (``/proc/PID/stat``) per viewer and
line. Figures only: nothing here asserts a time.
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing as mp
import os
import random
import resource
import socket
import statistics
import subprocess
import tempfile
import time
from multiprocessing.connection import Connection
from pathlib import Path

TRANSCRIPT = Path(__file__).parent.parent / "tests" / "data" / "transcripts" / "scripted-shanghaien.jsonl"
WORKER = "bench-worker"


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far (``/proc/PID/stat``, fields 14 and 15)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


# ------------------------------------------------------------------------------------- viewers


async def viewer(port: int, path: str, seen: dict[int, float], ready: asyncio.Event, count: list[int]) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", port, limit=1 << 22)
    writer.write(f"GET {path} HTTP/1.0\r\nHost: bench\r\nAccept: text/event-stream\r\n\r\n".encode())
    status = await reader.readline()
    if b" 200 " not in status:
        raise RuntimeError(f"the live stream answered {status!r}")
    while (await reader.readline()) not in (b"\r\n", b""):
        pass
    while line := await reader.readline():
        if line.startswith(b"id: "):
            n = int(line[4:])
            seen[n] = time.time()
            if n == 1:
                count[0] += 1
                if count[0] == count[1]:
                    ready.set()
        elif line.startswith(b"event: end"):
            break
    writer.close()


def client(port: int, path: str, viewers: int, pipe: Connection) -> None:
    """One client process: ``viewers`` streams; says when all have the first line, then sends what each saw."""

    async def main() -> list[dict[int, float]]:
        ready = asyncio.Event()
        count = [0, viewers]
        seen: list[dict[int, float]] = [{} for _ in range(viewers)]
        tasks = []
        for s in seen:
            tasks.append(asyncio.create_task(viewer(port, path, s, ready, count)))
            await asyncio.sleep(0.002)  # connect at a pace the accept queue takes
        await ready.wait()
        pipe.send("ready")
        await asyncio.gather(*tasks)
        return seen

    pipe.send(asyncio.run(main()))


# -------------------------------------------------------------------------------------- the run


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def run(args: argparse.Namespace) -> None:
    import redis

    from arena.local.arena import arena_command
    from arena.local.redisproc import RedisProcess, free_port
    from arena.service.matches import MatchStore
    from arena.service.queue import MatchQueue
    from arena.service.registry import Registry

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(soft, 4 * args.viewers + 256)), hard))
    lines = args.transcript.read_text(encoding="utf-8").removesuffix("\n").split("\n")
    with tempfile.TemporaryDirectory(prefix="web-live-bench-") as tmp, RedisProcess(Path(tmp) / "redis") as server:
        r = redis.Redis.from_url(server.url)
        registry = Registry(r)
        for name in ("bot0", "bot1"):
            registry.register(name, "owner", ["shanghaien"])
        store = MatchStore(r)
        match_id, _ = store.request("shanghaien", ["bot0", "bot1"], match_id="bench-live")
        queue = MatchQueue(r)
        claim = queue.claim(WORKER)
        assert claim is not None
        queue.announce(WORKER, claim, "127.0.0.1:1", ("bot0", "bot1"), "shanghaien", 1000)
        queue.append_events(WORKER, [(claim, lines[:1])])  # the header: the match has started

        port = free_port()
        web = subprocess.Popen(
            arena_command("web", "--listen", f"127.0.0.1:{port}", "--requests-per-min", "0"),
            env={**os.environ, "ARENA_REDIS_URL": server.url}, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        try:
            deadline = time.monotonic() + 30
            while True:
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=1).close()
                    break
                except OSError:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.05)
            path = f"/matches/{match_id}/live?from=0"
            pipes, procs = [], []
            per = [args.viewers // args.clients + (i < args.viewers % args.clients) for i in range(args.clients)]
            t_connect = time.monotonic()
            for k in per:
                mine, theirs = mp.Pipe()
                p = mp.Process(target=client, args=(port, path, k, theirs), daemon=True)
                p.start()
                pipes.append(mine)
                procs.append(p)
            for pipe in pipes:
                if pipe.recv() != "ready":
                    raise RuntimeError("a client process failed")
            print(f"{args.viewers} viewers connected in {time.monotonic() - t_connect:.1f} s "
                  f"({args.clients} client processes)")  # fmt: skip

            sent: dict[int, float] = {}
            cpu0, wall0 = cpu_seconds(web.pid), time.monotonic()
            rnd = random.Random(1)
            for n, line in enumerate(lines[1:], 2):
                sent[n] = time.time()
                queue.append_events(WORKER, [(claim, [line])])
                time.sleep(rnd.uniform(args.min_ms, args.max_ms) / 1000)
            seen: list[dict[int, float]] = []
            for pipe in pipes:
                seen += pipe.recv()
            cpu, wall = cpu_seconds(web.pid) - cpu0, time.monotonic() - wall0
            for p in procs:
                p.join(10)
        finally:
            web.terminate()
            web.wait(10)
        r.close()

    delays = [(s[n] - t) * 1000 for s in seen for n, t in sent.items() if n in s]
    missing = sum(1 for s in seen for n in sent if n not in s)
    moves = len(sent)
    print(f"lines appended: {moves} (one every {args.min_ms}-{args.max_ms} ms), over {wall:.1f} s")
    print(f"deliveries: {len(delays)} (missing {missing})")
    print(f"delay from append to viewer: p50 {statistics.median(delays):.1f} ms, p99 {percentile(delays, 0.99):.1f} ms,"
          f" max {max(delays):.1f} ms (target p99 <= 500 ms)")  # fmt: skip
    print(f"web process CPU: {cpu:.2f} s over {wall:.1f} s ({100 * cpu / wall:.0f}% of a core); "
          f"{1e6 * cpu / (args.viewers * moves):.1f} us per viewer-line")  # fmt: skip


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--viewers", type=int, default=1000)
    p.add_argument("--clients", type=int, default=2, help="client processes the viewers are spread over")
    p.add_argument("--min-ms", type=float, default=50.0)
    p.add_argument("--max-ms", type=float, default=100.0)
    p.add_argument("--transcript", type=Path, default=TRANSCRIPT, help="a Shanghaien transcript to replay")
    run(p.parse_args())


if __name__ == "__main__":
    main()
