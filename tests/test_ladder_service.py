"""The ladder running on the arena, end to end: the scheduler queues rated matches between online
bots, workers play them, the ladder process applies each result once, and the leaderboard is served
over gRPC (``LadderService`` on the gateway). A rebuild from the stored results gives the same state."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import time
from pathlib import Path

import grpc
import redis

from arena.ladder.scheduler import BotInfo, SchedulerConfig
from arena.ladder.service import host_ladder
from arena.ladder.store import Ladder
from arena.local.arena import LocalArena, arena_command
from arena.local.ladder_runner import LadderRunner, caught_up
from referee.wire import ladder_pb2, ladder_pb2_grpc
from sdk.arena_client import ArenaBotRunner
from sdk.bots import make_bot
from tests.helpers import call, register

MATCHES = 12


def test_the_scheduler_feeds_the_queue_and_every_result_moves_ratings_once(redis_url: str, tmp_path: Path) -> None:
    async def main() -> None:
        async with LocalArena(
            tmp_path, workers=1, redis_url=redis_url, worker_args=("--lease-ms", "1500"), gateway_extra=host_ladder
        ) as arena:
            from arena.service.client import ArenaClient

            admin = ArenaClient(arena.gateway, arena.admin_token)
            tokens = await register(admin, "ace", "bob", "cat")
            players = {"ace": make_bot("greedy", seed=1), "bob": make_bot("random", seed=2),
                       "cat": make_bot("random", seed=3)}  # fmt: skip
            runners = [ArenaBotRunner(players[n], arena.gateway, tokens[n]) for n in players]
            for r in runners:
                asyncio.get_running_loop().create_task(r.run())
            while sum(b.online for b in await call(admin.list_bots)) < 3:
                await asyncio.sleep(0.1)
            config = SchedulerConfig(games=("shanghaien",), queue_depth=2, max_rate=20.0)
            ladder = LadderRunner(arena.redis_url, config, max_matches=MATCHES)
            threads = ladder.start()
            client = redis.Redis.from_url(redis_url)
            deadline = time.monotonic() + 120
            while client.xlen("arena:results") < MATCHES or not caught_up(client):
                assert time.monotonic() < deadline, "the ladder did not play and apply its matches"
                await asyncio.sleep(0.2)
            ladder.stop(threads)
            matches = await call(admin.list_matches, limit=100)
            assert len(matches) == MATCHES and all(m.rated and m.priority == "ladder" for m in matches)
            first_seats = {m.bot_names[0] for m in matches}
            assert len(first_seats) >= 2, "seats rotate: nobody keeps the first seat"
            board = ladder.ladder.leaderboard("shanghaien")
            assert sum(s.row.games for s in board) == 2 * MATCHES  # every result applied exactly once
            before = ladder.ladder.snapshot("shanghaien")
            assert ladder.ladder.rebuild("shanghaien") == MATCHES
            assert ladder.ladder.snapshot("shanghaien") == before  # rebuild equals the incremental updates
            async with grpc.aio.insecure_channel(arena.gateway) as channel:
                stub = ladder_pb2_grpc.LadderServiceStub(channel)  # type: ignore[no-untyped-call]
                reply = await stub.GetLeaderboard(ladder_pb2.GetLeaderboardRequest(game_id="shanghaien"))
            assert [r.bot_name for r in reply.rows] == [s.row.name for s in board]
            for r in runners:
                r.stop()
            client.close()
            admin.close()

    asyncio.run(main())


def test_an_owner_sees_why_the_ladder_paused_their_bot(redis_url: str, tmp_path: Path) -> None:
    from arena.ladder.scheduler import Scheduler
    from arena.service.client import ArenaClient

    async def main() -> None:
        async with LocalArena(tmp_path, workers=0, redis_url=redis_url) as arena:
            admin = ArenaClient(arena.gateway, arena.admin_token)
            await register(admin, "ace", "bob")
            client = redis.Redis.from_url(redis_url)
            client.hset("arena:bot:ace", "version", "1.2")
            scheduler = Scheduler(_NoBots(), lambda g: {}, lambda p: None, store=client)
            for i in range(3):
                seats = [{"seat": 0, "bot_name": "ace", "bot_version": "1.2", "rank": 2, "status": "forfeited"},
                         {"seat": 1, "bot_name": "bob", "bot_version": "", "rank": 1, "status": "active"}]  # fmt: skip
                scheduler.on_result({"match_id": f"m{i}", "end_reason": "forfeit", "seats": seats})
            bots = {b.name: b for b in await call(admin.list_bots)}
            assert "forfeited 3 matches in a row" in bots["ace"].ladder_paused
            assert bots["bob"].ladder_paused == ""
            client.close()
            admin.close()

    asyncio.run(main())


def test_a_bot_author_reads_the_ladder_through_the_gateway_alone(redis_url: str, tmp_path: Path) -> None:
    """After ``arena serve`` (the ladder served on the gateway, Redis on a port nobody is told),
    ``arena ladder show --gateway ADDR --json`` works with no Redis URL (a dead one in the environment);
    with the gateway down it says so in one line and exits 1."""
    ladder = Ladder(redis.Redis.from_url(redis_url))
    for i in range(6):
        seats = [{"seat": s, "bot_name": n, "bot_version": "1.0", "score": 10 - 3 * s, "rank": s + 1,
                  "status": "active", "strikes": 0, "refusals": 0}
                 for s, n in enumerate(("ace", "bob") if i % 3 else ("bob", "ace"))]  # fmt: skip
        ladder.apply({"match_id": f"m{i}", "game_id": "shanghaien", "end_reason": "completed", "rated": True,
                      "finished_at": 1_700_000_000.0 + i, "seats": seats, "plies": 100, "seed": str(i),
                      "seed_sha256": "x", "detail": ""})  # fmt: skip
    env = {k: v for k, v in os.environ.items() if not k.startswith("ARENA_")}
    env |= {"ARENA_REDIS_URL": "redis://127.0.0.1:1/0", "ARENA_CONFIG": str(tmp_path / "no-config.toml")}
    (tmp_path / "no-config.toml").write_text("")

    def show(gateway: str) -> subprocess.CompletedProcess[str]:
        argv = arena_command("ladder", "show", "--game", "shanghaien", "--gateway", gateway, "--json")
        return subprocess.run(argv, check=False, env=env, capture_output=True, text=True, timeout=60)

    async def main() -> str:
        async with LocalArena(tmp_path / "arena", workers=0, redis_url=redis_url, gateway_extra=host_ladder) as arena:
            done = await asyncio.to_thread(show, arena.gateway)
            assert done.returncode == 0, done.stderr
            shown = json.loads(done.stdout)
            assert [(r["rank"], r["name"], r["games"]) for r in shown["rows"]] == [(1, "ace", 6), (2, "bob", 6)]
            assert shown["rows"][0]["rating"] == ladder.leaderboard("shanghaien")[0].row.rating
            return arena.gateway

    gateway = asyncio.run(main())
    started = time.monotonic()
    down = show(gateway)
    assert down.returncode == 1 and down.stdout == "" and time.monotonic() - started < 15
    lines = [line for line in down.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith(f"arena: error: cannot reach the arena at {gateway}: "), lines


class _NoBots:
    def bots(self) -> list[BotInfo]:
        return []
