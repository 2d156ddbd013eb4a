"""How many bot sessions one gateway holds (issue 11: at least 10,000 on 2 cores, with a bounded number of
Redis connections), what each costs in memory, and how long a match then takes from its request to its
first turn.

Processes: ``redis-server``, one ``arena gateway``, one ``arena worker``, and ``--clients`` client
processes that open the sessions (``ArenaService/OpenSession``, each session a registered bot, spread over
several HTTP/2 connections per client). With every session open, this process runs two SDK bots
(``ArenaBotRunner``) through the same gateway and requests matches between them: the time from the
request to the first turn their bot sees is the enqueue-to-first-turn time.

    python benchmarks/sessions_bench.py [--sessions 10000] [--clients 4] [--matches 5] [--stall-s 60]

Every wait is bounded: a client whose sessions stop being welcomed for ``--stall-s`` seconds reports
what it has and the run fails (exit status 1) instead of waiting for ever. The gateway's CPU is measured
over ``--idle-s`` seconds with every session open and nothing else happening (heartbeats only).
"""

from __future__ import annotations

import referee.grpc_env  # noqa: F401  # isort: skip  (first, before grpc: its process options)
import argparse
import asyncio
import multiprocessing
import os
import secrets
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, ClassVar

import grpc

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from arena.local.arena import arena_command  # noqa: E402
from arena.local.redisproc import RedisProcess, free_port  # noqa: E402
from arena.redis_client import connect  # noqa: E402
from arena.service.client import ArenaClient  # noqa: E402
from arena.service.registry import Registry  # noqa: E402
from referee.wire import arena_pb2, arena_pb2_grpc  # noqa: E402
from referee.wire.contract import bearer_metadata  # noqa: E402
from sdk.arena_client import ArenaBotRunner  # noqa: E402
from sdk.bot import Turn  # noqa: E402
from sdk.bots.random_bot import RandomBot  # noqa: E402

STREAMS_PER_CONNECTION = 500


def hold_sessions(gateway: str, tokens: list[str], report: Any, stop: Any, stall_s: float) -> None:
    """A client process: open a session per token and keep them open until ``stop`` is set. Opening
    gives up when no session was welcomed (nor failed) for ``stall_s`` seconds."""

    async def main() -> None:
        channels = [
            grpc.aio.insecure_channel(gateway, options=[("grpc.use_local_subchannel_pool", 1)])
            for _ in range(max(1, len(tokens) // STREAMS_PER_CONNECTION + 1))
        ]
        welcomed = 0
        by_channel = [0] * len(channels)
        errors: list[str] = []

        async def session(i: int, token: str) -> None:
            nonlocal welcomed
            stub = arena_pb2_grpc.ArenaServiceStub(channels[i % len(channels)])  # type: ignore[no-untyped-call]
            call = stub.OpenSession(arena_pb2.OpenSessionRequest(bot_version="1"), metadata=bearer_metadata(token))
            try:
                async for event in call:
                    if event.WhichOneof("event") == "welcome":
                        welcomed += 1
                        by_channel[i % len(channels)] += 1
            except grpc.aio.AioRpcError as e:
                if e.code() != grpc.StatusCode.CANCELLED:
                    errors.append(f"{e.code().name}: {e.details()}")

        tasks = [asyncio.create_task(session(i, t)) for i, t in enumerate(tokens)]
        last, progressed = -1, time.monotonic()
        while welcomed + len(errors) < len(tokens):
            await asyncio.sleep(1)
            if welcomed + len(errors) != last:
                print(f"  client {os.getpid()}: {welcomed} welcomed, {len(errors)} failed", file=sys.stderr)
                last, progressed = welcomed + len(errors), time.monotonic()
            elif time.monotonic() - progressed > stall_s:
                states = [c.get_state().name for c in channels]
                print(f"  client {os.getpid()}: stalled at {welcomed} welcomed for {stall_s:.0f} s; by connection"
                      f" {by_channel}, {states}", file=sys.stderr)  # fmt: skip
                break
        report.put(("open", welcomed, errors[:3], len(errors)))
        while not stop.is_set():
            await asyncio.sleep(0.2)
        report.put(("still-open", sum(1 for t in tasks if not t.done()), errors[:3], len(errors)))
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    asyncio.run(main())


def cpu_s(pid: int) -> float:
    """User plus system CPU seconds the process has used (``/proc/PID/stat``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


class FirstTurn(RandomBot):
    """A random bot that notes when it sees the first turn of each match."""

    seen: ClassVar[dict[str, float]] = {}

    def act(self, turn: Turn) -> Any:
        FirstTurn.seen.setdefault(turn.match_id, time.perf_counter())
        return super().act(turn)


async def first_turns(gateway: str, admin: ArenaClient, tokens: dict[str, str], matches: int) -> list[float]:
    runners = [ArenaBotRunner(FirstTurn(), gateway, tokens[name]) for name in ("probe-a", "probe-b")]
    tasks = [asyncio.create_task(r.run()) for r in runners]
    await asyncio.sleep(2)  # both sessions open
    out = []
    for _ in range(matches):
        t0 = time.perf_counter()
        match_id, _ = await asyncio.to_thread(admin.request_match, "shanghaien", ["probe-a", "probe-b"])
        deadline = time.monotonic() + 60
        while match_id not in FirstTurn.seen:
            if time.monotonic() > deadline:
                raise TimeoutError(f"match {match_id}: no first turn within 60 s")
            await asyncio.sleep(0.001)
        out.append(FirstTurn.seen[match_id] - t0)
        while len({o.match_id for r in runners for o in r.outcomes}) < len(out):
            if time.monotonic() > deadline:
                raise TimeoutError(f"match {match_id}: not finished within 60 s")
            await asyncio.sleep(0.01)
    for r in runners:
        r.stop()
    await asyncio.gather(*tasks, return_exceptions=True)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sessions", type=int, default=10_000)
    parser.add_argument("--clients", type=int, default=4, help="client processes holding the sessions")
    parser.add_argument("--matches", type=int, default=5, help="matches timed from request to first turn")
    parser.add_argument("--stall-s", type=float, default=60.0, help="a client opening nothing this long fails the run")
    parser.add_argument("--idle-s", type=float, default=30.0, help="seconds the idle gateway's CPU is measured")
    args = parser.parse_args()
    admin_token = "arena_admin_" + secrets.token_urlsafe(32)
    with tempfile.TemporaryDirectory(prefix="sessions-bench-") as tmp, RedisProcess(Path(tmp) / "redis") as redis:
        r = connect(redis.url)
        registry = Registry(r)
        t0 = time.perf_counter()
        tokens = [registry.register(f"s{i:05d}", "bench", ["shanghaien"])[1] for i in range(args.sessions)]
        probes = {name: registry.register(name, "bench", ["shanghaien"])[1] for name in ("probe-a", "probe-b")}
        print(f"registered {args.sessions:,} bots in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
        gateway_port = free_port()
        env = {**os.environ, "ARENA_ADMIN_TOKEN": admin_token, "ARENA_LOG_LEVEL": "WARNING"}
        log = Path(os.environ.get("BENCH_LOG", str(Path(tmp) / "procs.log"))).open("ab")  # noqa: SIM115 - for the processes
        gateway_proc = subprocess.Popen(
            arena_command("gateway", "--redis", redis.url, "--listen", f"127.0.0.1:{gateway_port}"), env=env,
            stdout=log, stderr=subprocess.STDOUT,
        )  # fmt: skip
        worker = subprocess.Popen(arena_command("worker", "--redis", redis.url, "--listen", "127.0.0.1:0"), env=env,
                                  stdout=log, stderr=subprocess.STDOUT)  # fmt: skip
        gateway = f"127.0.0.1:{gateway_port}"
        ctx = multiprocessing.get_context("spawn")
        report = ctx.Queue()
        stop = ctx.Event()
        clients: list[Any] = []
        try:
            admin = ArenaClient(gateway, admin_token)
            deadline = time.monotonic() + 30
            while True:
                try:
                    admin.list_matches(limit=1)
                    break
                except Exception:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.1)
            time.sleep(1)
            rss0 = rss_kib(gateway_proc.pid)
            conns0 = int(r.info("clients")["connected_clients"])
            share = [tokens[i :: args.clients] for i in range(args.clients)]
            t0 = time.perf_counter()
            clients = [
                ctx.Process(target=hold_sessions, args=(gateway, s, report, stop, args.stall_s), daemon=True)
                for s in share
            ]
            for c in clients:
                c.start()
            opened = [report.get(timeout=args.stall_s + 600) for _ in clients]
            open_s = time.perf_counter() - t0
            welcomed = sum(o[1] for o in opened)
            failed = sum(o[3] for o in opened)
            time.sleep(12)  # a heartbeat round with everything open
            rss1 = rss_kib(gateway_proc.pid)
            conns1 = int(r.info("clients")["connected_clients"])
            cpu0, w0 = cpu_s(gateway_proc.pid), time.monotonic()
            time.sleep(args.idle_s)
            idle_cpu = (cpu_s(gateway_proc.pid) - cpu0) / (time.monotonic() - w0)
            online = sum(1 for b in admin.list_bots() if b.online)
            waits = asyncio.run(first_turns(gateway, admin, probes, args.matches))
            stop.set()
            still = [report.get(timeout=120) for _ in clients]
            held = sum(s[1] for s in still)
            admin.close()
        finally:
            stop.set()
            for c in clients:
                c.join(30)
                if c.is_alive():
                    c.terminate()
            for p in (gateway_proc, worker):
                p.terminate()
                try:
                    p.wait(10)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
            r.close()
    print(f"sessions on one gateway ({args.clients} client processes, 2 cores)")
    print(f"  opened {welcomed:,} of {args.sessions:,} in {open_s:.1f} s ({failed} refused or failed)")
    print(f"  still open after the run: {held:,};  listed online: {online:,}")
    print(f"  gateway memory: {rss0 / 1024:.0f} MiB idle -> {rss1 / 1024:.0f} MiB with them open:"
          f" {(rss1 - rss0) / max(1, welcomed):.1f} KiB a session")  # fmt: skip
    print(f"  Redis connections (all processes): {conns0} before -> {conns1} with every session open")
    print(f"  gateway CPU with every session open and idle: {idle_cpu * 100:.1f} % of a core ({args.idle_s:.0f} s)")
    print(f"  a match's request to its first turn, every session open: median {statistics.median(waits) * 1000:.0f} ms"
          f", max {max(waits) * 1000:.0f} ms ({len(waits)} matches)")  # fmt: skip
    if welcomed < args.sessions or held < welcomed:
        print(f"FAILED: {args.sessions - welcomed:,} sessions not opened, {welcomed - held:,} lost", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
