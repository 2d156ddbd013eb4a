"""What the one public address costs: a move's round trip through the gateway's relay against the same
bot connected straight to the worker, measured in one run (issue 11; target: relay <= 1.3x direct).

The processes are the deployment's: ``redis-server``, one ``arena worker``, one ``arena gateway``, each
its own process, and this process as the bot. The bot holds both seats of one Shanghaien match at a
time (so each answer is followed at once by the next turn) and answers each turn with a random legal
action; a move's round trip is the time from sending the action to receiving the next turn on that
stream. Matches alternate between the two paths, so both see the same machine noise.

    python benchmarks/relay_bench.py [--moves 3000]
"""

from __future__ import annotations

import referee.grpc_env  # noqa: F401  # isort: skip  (first, before grpc: its process options)
import argparse
import asyncio
import os
import random
import secrets
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path

import grpc

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from referee_bench import cpu_seconds  # noqa: E402  (this directory's)

from arena.errors import ArenaError  # noqa: E402
from arena.local.arena import arena_command  # noqa: E402
from arena.local.redisproc import RedisProcess, free_port  # noqa: E402
from arena.service.client import ArenaClient  # noqa: E402
from referee.wire import bot_pb2, bot_pb2_grpc  # noqa: E402

CONTROL = {"first_move_ms": 60_000, "move_ms": 60_000, "join_timeout_ms": 60_000}


async def play_one(target: str, token: str, match_id: str, rng: random.Random) -> list[float]:
    """Play both seats of ``match_id`` over one Play stream at ``target``; the move round trips."""
    out: asyncio.Queue[bot_pb2.PlayRequest | None] = asyncio.Queue()
    hello = bot_pb2.Hello(bot_name="bench", bot_version="1", match_ids=[match_id], omit_view_json=True)
    out.put_nowait(bot_pb2.PlayRequest(hello=hello))

    async def requests() -> AsyncIterator[bot_pb2.PlayRequest]:
        while (item := await out.get()) is not None:
            yield item

    times: list[float] = []
    async with grpc.aio.insecure_channel(target) as channel:
        call = bot_pb2_grpc.BotServiceStub(channel).Play(  # type: ignore[no-untyped-call]
            requests(), metadata=(("authorization", f"Bearer {token}"),)
        )
        sent_at: float | None = None
        async for message in call:
            kind = message.WhichOneof("message")
            if kind == "match_ended":
                break
            if kind != "turn":
                continue
            if sent_at is not None:
                times.append(time.perf_counter() - sent_at)
            turn = message.turn
            action = bot_pb2.SubmitAction(
                match_id=turn.match_id, seat=turn.seat, turn_id=turn.turn_id, action=rng.choice(turn.legal_actions)
            )
            sent_at = time.perf_counter()
            out.put_nowait(bot_pb2.PlayRequest(action=action))
        out.put_nowait(None)
        call.cancel()
    return times[1:]  # the first answer also waited for the match to settle


def wait_port(port: int, timeout: float = 30.0) -> None:
    import socket

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise TimeoutError(f"nothing listens on {port}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--moves", type=int, default=3000, help="moves measured on each path (default 3000)")
    args = parser.parse_args()
    admin_token = "arena_admin_" + secrets.token_urlsafe(32)
    rng = random.Random(1)
    with tempfile.TemporaryDirectory(prefix="relay-bench-") as tmp, RedisProcess(Path(tmp) / "redis") as redis:
        gateway_port = free_port()
        env = {**os.environ, "ARENA_ADMIN_TOKEN": admin_token, "ARENA_LOG_LEVEL": "WARNING"}
        log = (Path(tmp) / "procs.log").open("ab")
        procs = [
            subprocess.Popen(arena_command("worker", "--redis", redis.url, "--listen", "127.0.0.1:0"), env=env,
                             stdout=log, stderr=subprocess.STDOUT),
            subprocess.Popen(arena_command("gateway", "--redis", redis.url, "--listen", f"127.0.0.1:{gateway_port}"),
                             env=env, stdout=log, stderr=subprocess.STDOUT),
        ]  # fmt: skip
        try:
            wait_port(gateway_port)
            gateway = f"127.0.0.1:{gateway_port}"
            admin = ArenaClient(gateway, admin_token)
            for _ in range(100):
                try:
                    _, token = admin.register_bot("bench", "bench", ["shanghaien"], 10)
                    break
                except ArenaError:
                    time.sleep(0.1)
            paths: dict[str, list[float]] = {"direct": [], "relay": []}
            cpu = {"direct": [0.0, 0.0], "relay": [0.0, 0.0]}  # worker, gateway: while the bot plays on each path
            moves = {"direct": 0, "relay": 0}
            worker_pid, gateway_pid = procs[0].pid, procs[1].pid
            matches = 0
            while min(len(v) for v in paths.values()) < args.moves:
                for path in ("relay", "direct"):
                    match_id, _ = admin.request_match("shanghaien", ["bench", "bench"], time_control=CONTROL)
                    while not (record := admin.describe(match_id)).referee_address:
                        time.sleep(0.01)
                    target = gateway if path == "relay" else record.referee_address
                    w0, g0 = cpu_seconds(worker_pid), cpu_seconds(gateway_pid)
                    times = asyncio.run(play_one(target, token, match_id, rng))
                    cpu[path][0] += cpu_seconds(worker_pid) - w0
                    cpu[path][1] += cpu_seconds(gateway_pid) - g0
                    moves[path] += len(times) + 2  # the first and the last answer are not timed
                    paths[path] += times
                    matches += 1
                print(f"  {matches} matches, {len(paths['relay'])} relayed and {len(paths['direct'])} direct moves",
                      file=sys.stderr)  # fmt: skip
            admin.close()
        finally:
            for p in procs:
                p.terminate()
            for p in procs:
                p.wait(10)
    figures = {k: (statistics.median(v) * 1e6, sorted(v)[int(len(v) * 0.99)] * 1e6) for k, v in paths.items()}
    (d_med, d_p99), (r_med, r_p99) = figures["direct"], figures["relay"]
    print("a move's round trip (action sent -> next turn received); bot, gateway, worker, Redis: separate processes")
    print(f"  straight to the worker     median {d_med:7.0f} us   p99 {d_p99:7.0f} us   ({len(paths['direct'])} moves)")
    print(f"  through the gateway relay  median {r_med:7.0f} us   p99 {r_p99:7.0f} us   ({len(paths['relay'])} moves)")
    print(f"  ratio (median)             {r_med / d_med:.2f}x   target <= 1.3x")
    print(f"CPU per move while the bot played (the match's Hello and Welcome included), {os.cpu_count()} cores:")
    for path in ("direct", "relay"):
        w, g = (c / max(moves[path], 1) * 1e6 for c in cpu[path])
        print(f"  {path:<8} worker {w:5.0f} us   gateway {g:5.0f} us   ({moves[path]} moves)")


if __name__ == "__main__":
    main()
