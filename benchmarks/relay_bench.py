"""What the public Play path costs: a move's round trip straight to the worker, through the gateway's
Python relay, and through the Play proxy (nginx ``grpc_pass``, its config from ``arena proxy-config``),
measured side by side in one run, with the CPU per move of every process on each path (issues 11 and 32;
targets: proxied median <= 1.3x direct, nginx's CPU per relayed message <= 50 us, the gateway's CPU per
move on the proxied path near 0).

The processes are the deployment's: ``redis-server``, one ``arena worker``, one ``arena gateway``,
``arena proxy-config --watch`` and Debian's ``nginx`` (one worker process; plaintext, as the other two
paths), each its own process, and this process as the bot. The bot holds both seats of one Shanghaien
match at a time (so each answer is followed at once by the next turn) and answers each turn with a random
legal action; a move's round trip is the time from sending the action to receiving the next turn on that
stream. Matches rotate over the three paths, so all see the same machine noise. A relayed message is one
the proxy carries either way: a move is two (the action in, the next turn out).

    python benchmarks/relay_bench.py [--moves 3000] [--paths direct,relay,proxy]
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
from arena.service.playproxy import route_of  # noqa: E402
from referee.wire import bot_pb2, bot_pb2_grpc  # noqa: E402
from referee.wire.contract import ROUTE_HEADER  # noqa: E402
from tests.helpers import nginx_play_proxy  # noqa: E402

CONTROL = {"first_move_ms": 60_000, "move_ms": 60_000, "join_timeout_ms": 60_000}


async def play_one(target: str, token: str, match_id: str, rng: random.Random, route: str = "") -> list[float]:
    """Play both seats of ``match_id`` over one Play stream at ``target`` (through a Play proxy with
    ``route``); the move round trips."""
    out: asyncio.Queue[bot_pb2.PlayRequest | None] = asyncio.Queue()
    hello = bot_pb2.Hello(bot_name="bench", bot_version="1", match_ids=[match_id], omit_view_json=True)
    out.put_nowait(bot_pb2.PlayRequest(hello=hello))

    async def requests() -> AsyncIterator[bot_pb2.PlayRequest]:
        while (item := await out.get()) is not None:
            yield item

    times: list[float] = []
    async with grpc.aio.insecure_channel(target) as channel:
        call = bot_pb2_grpc.BotServiceStub(channel).Play(  # type: ignore[no-untyped-call]
            requests(), metadata=(("authorization", f"Bearer {token}"),) + (((ROUTE_HEADER, route),) if route else ())
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


def children(pid: int) -> list[int]:
    """The child processes of ``pid`` (nginx's workers under its master)."""
    out = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        out += [int(c) for c in (task / "children").read_text().split()]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--moves", type=int, default=3000, help="moves measured on each path (default 3000)")
    parser.add_argument("--paths", default="direct,relay,proxy", help="which paths (default direct,relay,proxy)")
    args = parser.parse_args()
    names = [p for p in args.paths.split(",") if p]
    if not names or set(names) - {"direct", "relay", "proxy"}:
        parser.error("--paths: some of direct, relay, proxy")
    admin_token = "arena_admin_" + secrets.token_urlsafe(32)
    rng = random.Random(1)
    with tempfile.TemporaryDirectory(prefix="relay-bench-") as tmp, RedisProcess(Path(tmp) / "redis") as redis:
        gateway_port, proxy_port = free_port(), free_port()
        proxy = f"127.0.0.1:{proxy_port}"
        env = {**os.environ, "ARENA_ADMIN_TOKEN": admin_token, "ARENA_LOG_LEVEL": "WARNING"}
        log = (Path(tmp) / "procs.log").open("ab")
        procs = [
            subprocess.Popen(arena_command("worker", "--redis", redis.url, "--listen", "127.0.0.1:0"), env=env,
                             stdout=log, stderr=subprocess.STDOUT),
            subprocess.Popen(arena_command("gateway", "--redis", redis.url, "--listen", f"127.0.0.1:{gateway_port}",
                                           "--play-proxy", proxy), env=env, stdout=log, stderr=subprocess.STDOUT),
        ]  # fmt: skip
        try:
            with nginx_play_proxy(redis.url, Path(tmp) / "proxy", proxy_port) as (_, nginx):
                assert nginx is not None  # run apart: its master's pid is the one to measure under
                wait_port(gateway_port)
                conf = Path(tmp) / "proxy" / "nginx.conf"
                while "upstream w" not in conf.read_text():  # the worker in nginx's map, then its reload
                    time.sleep(0.1)
                time.sleep(1.0)
                figures = run(args.moves, names, f"127.0.0.1:{gateway_port}", proxy, admin_token, rng,
                              {"worker": procs[0].pid, "gateway": procs[1].pid, "nginx": nginx.pid})  # fmt: skip
        finally:
            for p in procs:
                p.terminate()
            for p in procs:
                p.wait(10)
    report(figures, names)


Figures = tuple[dict[str, list[float]], dict[str, dict[str, float]], dict[str, int]]


def run(
    moves_wanted: int, names: list[str], gateway: str, proxy: str, admin_token: str, rng: random.Random,
    pids: dict[str, int],
) -> Figures:  # fmt: skip
    """Matches on each path in turn until each has ``moves_wanted`` timed moves: the round trips, the CPU
    seconds of each process while the bot played on each path, and the moves played on each."""
    admin = ArenaClient(gateway, admin_token)
    for _ in range(100):
        try:
            _, token = admin.register_bot("bench", "bench", ["shanghaien"], 10)
            break
        except ArenaError:
            time.sleep(0.1)
    paths: dict[str, list[float]] = {p: [] for p in names}
    cpu = {p: dict.fromkeys(pids, 0.0) for p in names}
    moves = dict.fromkeys(names, 0)
    nginx_master = pids.pop("nginx")
    matches = 0
    while min(len(v) for v in paths.values()) < moves_wanted:
        for path in names:
            match_id, _ = admin.request_match("shanghaien", ["bench", "bench"], time_control=CONTROL)
            while not (record := admin.describe(match_id)).referee_address:
                time.sleep(0.01)
            target = {"relay": gateway, "direct": record.referee_address, "proxy": proxy}[path]
            route = route_of(record.referee_address) if path == "proxy" else ""
            now = {**pids, "nginx": 0, **{f"nginx-{c}": c for c in children(nginx_master)}}
            before = {k: cpu_seconds(pid) if pid else 0.0 for k, pid in now.items()}
            times = asyncio.run(play_one(target, token, match_id, rng, route))
            for k, pid in now.items():
                key = "nginx" if k.startswith("nginx") else k
                cpu[path][key] += (cpu_seconds(pid) if pid else 0.0) - before[k]
            moves[path] += len(times) + 2  # the first and the last answer are not timed
            paths[path] += times
            matches += 1
        print(f"  {matches} matches, " + ", ".join(f"{len(v)} moves {k}" for k, v in paths.items()), file=sys.stderr)
    admin.close()
    return paths, cpu, moves


def report(figures: Figures, names: list[str]) -> None:
    paths, cpu, moves = figures
    stats = {k: (statistics.median(v) * 1e6, sorted(v)[int(len(v) * 0.99)] * 1e6) for k, v in paths.items()}
    floor = stats["direct"][0] if "direct" in stats else None
    label = {"direct": "straight to the worker", "relay": "through the gateway relay", "proxy": "through nginx"}
    print("a move's round trip (action sent -> next turn received); bot, gateway, worker, nginx, Redis: separate "
          "processes")  # fmt: skip
    for path in names:
        med, p99 = stats[path]
        ratio = f"   {med / floor:.2f}x direct" if floor else ""
        print(f"  {label[path]:<26} median {med:7.0f} us   p99 {p99:7.0f} us{ratio}   ({len(paths[path])} moves)")
    print("  targets: through nginx <= 1.3x direct (median); nginx <= 50 us CPU per relayed message")
    print(f"CPU per move while the bot played (the match's Hello and Welcome included), {os.cpu_count()} cores:")
    for path in names:
        per = {k: c / max(moves[path], 1) * 1e6 for k, c in cpu[path].items()}
        nginx = f"   nginx {per['nginx']:5.0f} us ({per['nginx'] / 2:.0f} us a relayed message)"
        print(f"  {path:<8} worker {per['worker']:5.0f} us   gateway {per['gateway']:5.0f} us{nginx}   "
              f"({moves[path]} moves)")  # fmt: skip


if __name__ == "__main__":
    main()
