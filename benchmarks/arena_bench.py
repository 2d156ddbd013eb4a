"""Throughput and CPU cost of the arena service: matches per minute from enqueue to stored result, with
random bots, for 1 and 2 referee worker processes; the CPU each kind of process spent per ply; and the
enqueue-to-start latency of a match on an idle arena.

Run from the project root: ``.venv/bin/python benchmarks/arena_bench.py`` (``--matches 200``, ``--workers 1
--workers 2``, ``--game shanghaien``, ``--round-trips 20000``, ``--advertise-workers``). Each configuration
gets a fresh local arena: its own ``redis-server`` (AOF on, as deployed), the gateway (in this process, on
uvloop as ``arena serve`` runs it), the workers as processes, and two ``random`` reference bots as their own
processes connected through their sessions; everything as in a deployment (but without rate limits), on one
2-core machine.

CPU is read from ``/proc/PID/stat`` (user + system) of every process before the batch is queued and
after its last result is stored. The batch is queued and followed by a separate driver process that
blocks on the results stream (``keys.results()``, one entry per finished match, the stream the ladder
reads), so the benchmark's own work is its own line and costs one read per result, not a describe per
match per poll. This process does nothing but serve the gateway meanwhile: its CPU is the gateway's.

The yardstick is a bare gRPC round trip measured in the same run: a ping-pong server and client (two
processes, one bidirectional stream, a few bytes each way, grpc.aio on uvloop) for ``--round-trips``
round trips; CPU of both per round trip. The service's cost per ply (worker(s) + gateway +
redis-server) is printed as a multiple of it (target: at most 2x). Linux only (``/proc``); absolute
figures move with the machine's other load, ratios within one run much less.

Each process kind is its own processes' CPU only. Until 2026-11-23 the gateway's line was this
process *with its descendants*, which are all the others (workers, redis-server, bots, the driver): every
gateway figure and service ratio printed before then (2.13x at 41670cf, 1.74-2.47x after) counted the
workers, Redis and the bots twice and the bots' CPU against the service, and is void.

Figures on the development machine (2 cores, quiet), 300 Shanghaien matches, CPU-us per ply (worker /
gateway / redis-server; service as a multiple of the bare round trip of the same run):

- 41670cf (issue 16's last session started there), gRPC's default I/O engine, relay, one worker:
  207 / 177 / 19, 1.02x (floor 397 CPU-us);
- this tree, gRPC's default engine, relay: one worker 211 / 179 / 20, 0.94x; two workers 316 / 196 / 27,
  1.24x (floor 434);
- this tree, the arena's gRPC setting (referee/grpc_env.py), relay, one worker: 194 / 147 / 19, 1.36x
  (floor 265: the floor gains more from the setting than the service);
- the same with ``--advertise-workers`` (bots inside the network dial the worker; their messages are then
  batched): 112 / 18 / 12, 0.54x, 2,265 matches/min against 1,111 through the relay.

The driver process died twice in 8 runs of this day without printing its JSON, once seen as SIGSEGV
(status -11), so in native code (grpc's or redis-py's); it now runs with ``PYTHONFAULTHANDLER`` so that a
next time shows where.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from arena import keys  # noqa: E402
from arena.local.arena import LocalArena, start_bot  # noqa: E402
from arena.redis_client import connect  # noqa: E402
from arena.service.client import ArenaClient  # noqa: E402
from arena.service.ratelimit import RateLimits  # noqa: E402
from referee.logs import configure  # noqa: E402

_TICK = os.sysconf("SC_CLK_TCK")
_PING = "/bench.PingPong/Stream"


def cpu_s(pid: int, descendants: bool = False) -> float:
    """User + system CPU seconds of a live process (0.0 once it has gone), with ``descendants`` also of
    its live descendants. Never for this process: the gateway's, whose descendants are every other
    process measured here (workers, Redis, bots, the driver; counting them there was the error of the
    figures before 2026-11-23, which charged the gateway with all of them)."""
    total = 0.0
    for p in [pid, *(_descendants(pid) if descendants else [])]:
        try:
            fields = Path(f"/proc/{p}/stat").read_text().rpartition(")")[2].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / _TICK  # utime, stime (fields 14 and 15 of stat)
    return total


def _descendants(pid: int) -> list[int]:
    parent: dict[int, int] = {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                parent[int(d.name)] = int((d / "stat").read_text().rpartition(")")[2].split()[1])
            except (OSError, ValueError):
                continue
    out, frontier = [], [pid]
    while frontier:
        frontier = [c for c, p in parent.items() if p in frontier]
        out += frontier
    return out


async def call(fn: Any, *args: Any, **kwargs: Any) -> Any:
    return await asyncio.to_thread(fn, *args, **kwargs)


async def wait_finished(admin: ArenaClient, match_id: str) -> Any:
    while True:
        m = await call(admin.describe, match_id)
        if m.state == 3:
            return m
        await asyncio.sleep(0.01)


def drive(gateway: str, token: str, redis_url: str, game: str, matches: int) -> None:
    """The driver process: queue ``matches`` matches, follow the results stream until each has a stored
    result; print JSON {seconds, its own CPU seconds
    meanwhile, ids} on stdout."""
    r = connect(redis_url, block_ms=1000)
    admin = ArenaClient(gateway, token)
    last: Any = r.xrevrange(keys.results(), count=1)
    cursor = keys.text(last[0][0]) if last else "0-0"
    t0, cpu0 = time.time(), cpu_s(os.getpid())
    ids = {admin.request_match(game, ["r1", "r2"] if i % 2 else ["r2", "r1"])[0] for i in range(matches)}
    waiting = set(ids)
    while waiting:
        reply: Any = r.xread({keys.results(): cursor}, count=1000, block=1000)
        for _, entries in reply or []:
            for entry_id, fields in entries:
                cursor = keys.text(entry_id)
                waiting.discard(keys.text(fields[b"match_id"]))
    seconds, cpu = time.time() - t0, cpu_s(os.getpid()) - cpu0
    print(json.dumps({"seconds": seconds, "cpu_s": cpu, "ids": sorted(ids)}))


async def bench(workers: int, matches: int, game: str, latency_samples: int, direct: bool = False) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="arena-bench-") as tmp:
        # No rate limits: at the defaults (120 Play streams a minute per bot token, one per match) the
        # gateway refuses most of a burst's streams and the figures measure refusals and retries.
        limits = RateLimits(session_opens=0, match_requests=0)
        async with LocalArena(Path(tmp), workers=workers, log_level="WARNING", limits=limits, direct=direct) as arena:
            admin = ArenaClient(arena.gateway, arena.admin_token)
            bots = []
            for name in ("r1", "r2"):
                _, token = await call(admin.register_bot, name, "bench", [game], 1000)
                bots.append(start_bot("random", token, arena.gateway, arena.logs, 0.0))
            while sum(b.online for b in await call(admin.list_bots)) < 2:
                await asyncio.sleep(0.1)
            # latency: one match at a time on an idle arena
            start_ms: list[float] = []
            for i in range(latency_samples):
                match_id, _ = await call(admin.request_match, game, ["r1", "r2"] if i % 2 else ["r2", "r1"])
                m = await wait_finished(admin, match_id)
                start_ms.append((m.started_at - m.enqueued_at) * 1000)
            # throughput and CPU: a batch queued at once by the driver process
            r = connect(arena.redis_url)
            redis_pid = int(r.info("server")["process_id"])
            kinds: dict[str, list[int]] = {
                "worker(s)": [w.process.pid for w in arena.workers],
                "gateway": [os.getpid()],
                "redis-server": [redis_pid],
                "bots": [b.pid for b in bots],
            }
            before = {k: sum(cpu_s(p, k == "bots") for p in pids) for k, pids in kinds.items()}
            driver = await asyncio.create_subprocess_exec(
                sys.executable, __file__, "--drive", arena.gateway, arena.redis_url, game, str(matches),
                stdout=asyncio.subprocess.PIPE,
                env={**os.environ, "ARENA_BENCH_TOKEN": arena.admin_token, "PYTHONFAULTHANDLER": "1"},
            )  # fmt: skip
            stdout, _ = await driver.communicate()
            after = {k: sum(cpu_s(p, k == "bots") for p in pids) for k, pids in kinds.items()}
            try:
                out = json.loads(stdout.decode())
            except json.JSONDecodeError:
                status, head = driver.returncode, stdout[:500]
                raise SystemExit(f"the driver process printed no JSON (status {status}): {head!r}") from None
            results = [json.loads(r.hget(keys.match(i), "result") or b"null") for i in out["ids"]]
            plies = sum(int(x["plies"]) for x in results)
            completed = sum(1 for x in results if x["end_reason"] == "completed")
            r.close()
            for b in bots:
                b.terminate()
                b.wait()
            admin.close()
    cpu = {k: after[k] - before[k] for k in kinds}
    cpu["benchmark (driver)"] = out["cpu_s"]
    return {
        "workers": workers,
        "matches": matches,
        "completed": completed,
        "seconds": out["seconds"],
        "plies": plies,
        "matches_per_min": matches / out["seconds"] * 60,
        "plies_per_s": plies / out["seconds"],
        "start_ms_median": statistics.median(start_ms),
        "start_ms_max": max(start_ms),
        "cpu_us_per_ply": {k: v / plies * 1e6 for k, v in cpu.items()},
    }


# ---------------------------------------------------------------------------------------- bare round trip


async def _pingpong_server(port_file: str) -> None:
    import grpc

    async def stream(requests: Any, context: Any) -> Any:
        async for message in requests:
            yield message

    server = grpc.aio.server()
    handler = grpc.stream_stream_rpc_method_handler(stream)  # bytes in, bytes out: no codec
    server.add_generic_rpc_handlers([grpc.method_handlers_generic_handler("bench.PingPong", {"Stream": handler})])
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    Path(port_file).write_text(str(port))
    await server.wait_for_termination()


async def _pingpong_client(address: str, server_pid: int, n: int) -> None:
    import grpc

    async with grpc.aio.insecure_channel(address) as channel:
        call = channel.stream_stream(_PING)()
        payload = b"x" * 32
        for _ in range(200):  # warm up
            await call.write(payload)
            await call.read()
        me, server, t = cpu_s(os.getpid()), cpu_s(server_pid), time.perf_counter()
        for _ in range(n):
            await call.write(payload)
            await call.read()
        wall = time.perf_counter() - t
        me, server = cpu_s(os.getpid()) - me, cpu_s(server_pid) - server
        await call.done_writing()
    print(json.dumps({"client_us": me / n * 1e6, "server_us": server / n * 1e6, "wall_us": wall / n * 1e6}))


def _uvloop_run(coro: Any) -> None:
    try:
        import uvloop

        uvloop.run(coro)
    except ImportError:
        asyncio.run(coro)


def bare_round_trip(n: int) -> dict[str, float]:
    """CPU of a ping-pong gRPC server and client per round trip, each its own process."""
    with tempfile.TemporaryDirectory(prefix="pingpong-") as tmp:
        port_file = Path(tmp) / "port"
        server = subprocess.Popen([sys.executable, __file__, "--pingpong-server", str(port_file)])
        try:
            while not port_file.exists() or not port_file.read_text():
                time.sleep(0.05)
            address = f"127.0.0.1:{port_file.read_text()}"
            out = subprocess.run(
                [sys.executable, __file__, "--pingpong-client", address, str(server.pid), str(n)],
                check=True, capture_output=True, text=True,
            )  # fmt: skip
            figures: dict[str, float] = json.loads(out.stdout)
        finally:
            server.terminate()
            server.wait()
    return figures


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "--drive":
        gateway, redis_url, game, n = sys.argv[2:6]
        drive(gateway, os.environ["ARENA_BENCH_TOKEN"], redis_url, game, int(n))
        return 0
    if len(sys.argv) > 1 and sys.argv[1] == "--pingpong-server":
        _uvloop_run(_pingpong_server(sys.argv[2]))
        return 0
    if len(sys.argv) > 1 and sys.argv[1] == "--pingpong-client":
        _uvloop_run(_pingpong_client(sys.argv[2], int(sys.argv[3]), int(sys.argv[4])))
        return 0
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--matches", type=int, default=200, help="matches per configuration (default 200)")
    parser.add_argument("--workers", type=int, action="append", help="worker processes (repeatable; default 1 and 2)")
    parser.add_argument("--game", default="shanghaien")
    parser.add_argument("--latency-samples", type=int, default=10)
    parser.add_argument("--round-trips", type=int, default=20_000, help="bare gRPC round trips (default 20,000)")
    parser.add_argument("--advertise-workers", action="store_true", help="the gateway's --advertise-workers: bots dial"
                        " the worker running their match (inside the network), not the gateway's relay")  # fmt: skip
    args = parser.parse_args()
    configure(json=False, level="WARNING")
    bare = bare_round_trip(args.round_trips)
    rows = []
    for w in args.workers or [1, 2]:
        box: list[dict[str, Any]] = []

        async def one(w: int = w, box: list[dict[str, Any]] = box) -> None:
            box.append(await bench(w, args.matches, args.game, args.latency_samples, args.advertise_workers))

        _uvloop_run(one())
        rows += box
    bare_us = bare["client_us"] + bare["server_us"]
    print(f"\nbare gRPC round trip (ping-pong, 2 processes, {args.round_trips:,} round trips): client "
          f"{bare['client_us']:.0f} + server {bare['server_us']:.0f} = {bare_us:.0f} CPU-us, "
          f"wall {bare['wall_us']:.0f} us")  # fmt: skip
    path = "straight to the workers (--advertise-workers)" if args.advertise_workers else "through the gateway's relay"
    print(f"\n{args.game}, random bots (2 bot processes, {path}), enqueue -> stored result")
    print(f"{'workers':>7} {'matches':>7} {'done':>5} {'seconds':>8} {'matches/min':>12} {'plies/s':>8} "
          f"{'start ms (median)':>18} {'start ms (max)':>15}")  # fmt: skip
    for r in rows:
        print(f"{r['workers']:>7} {r['matches']:>7} {r['completed']:>5} {r['seconds']:>8.1f} "
              f"{r['matches_per_min']:>12.0f} {r['plies_per_s']:>8.0f} {r['start_ms_median']:>18.1f} "
              f"{r['start_ms_max']:>15.1f}")  # fmt: skip
    for r in rows:
        per = r["cpu_us_per_ply"]
        service = per["worker(s)"] + per["gateway"] + per["redis-server"]
        print(f"\nCPU-us per ply, {r['workers']} worker(s), {r['plies']:,} plies:")
        for kind, us in per.items():
            print(f"  {kind:<20} {us:>7.0f}")
        print(f"  {'service (w+g+redis)':<20} {service:>7.0f}  = {service / bare_us:.2f} x a bare round trip "
              f"(target <= 2)")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
