"""``arena bot run`` as a real process on a real arena (Redis, gateway, worker processes): a session
that stays off the ladder (``--no-ladder``), and SIGTERM, which drains instead of forfeiting."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
from pathlib import Path

import redis

from arena import keys
from arena.ladder.scheduler import SchedulerConfig
from arena.local.arena import LocalArena, arena_command
from arena.local.ladder_runner import LadderRunner, RegistryBots
from arena.service.client import ArenaClient
from tests.helpers import FAST, SlowRandom, call, finished, register, run_bots, wait_for

SLOW_BOT = """
import asyncio
import random

from sdk.bot import Bot


class Slow(Bot):
    name = "slow"
    version = "1"

    async def act(self, turn):
        await asyncio.sleep({delay})
        return random.choice(turn.legal_actions)
"""


def bot_process(tmp_path: Path, gateway: str, token: str, *args: str, delay: float = 0.0) -> subprocess.Popen[bytes]:
    """``arena bot run`` of a bot that takes ``delay`` seconds a move, logging to a file in ``tmp_path``."""
    source = tmp_path / f"slow_{int(delay * 1000)}.py"
    source.write_text(SLOW_BOT.format(delay=delay))
    log = (tmp_path / "bot.log").open("ab")
    return subprocess.Popen(
        arena_command("bot", "run", f"{source}:Slow", "--arena", gateway, "--log-format", "json", *args),
        stdout=log, stderr=subprocess.STDOUT, env={**os.environ, "ARENA_BOT_TOKEN": token},
    )  # fmt: skip


async def online(admin: ArenaClient, *names: str) -> None:
    async def check() -> bool:
        return {b.name for b in await call(admin.list_bots) if b.online} >= set(names)

    await wait_for(check, 60, f"{', '.join(names)} online")


def test_a_no_ladder_session_is_not_scheduled_but_plays_requested_matches(redis_url: str, tmp_path: Path) -> None:
    async def main() -> None:
        async with LocalArena(tmp_path, workers=1, redis_url=redis_url, worker_args=FAST) as arena:
            admin = ArenaClient(arena.gateway, arena.admin_token)
            tokens = await register(admin, "ace", "bob", "tester")
            runners = run_bots({"ace": SlowRandom(0, 1), "bob": SlowRandom(0, 2)}, tokens, arena.gateway)
            process = bot_process(tmp_path, arena.gateway, tokens["tester"], "--no-ladder")
            try:
                await online(admin, "ace", "bob", "tester")
                client = redis.Redis.from_url(redis_url)
                ladder = LadderRunner(arena.redis_url, SchedulerConfig(games=("shanghaien",), queue_depth=2),
                                      max_matches=4)  # fmt: skip
                infos = {b.name: b for b in RegistryBots(ladder.registry, ladder.ladder, ("shanghaien",)).bots()}
                assert infos["tester"].online and not infos["tester"].ladder
                assert infos["ace"].ladder and infos["bob"].ladder
                threads = ladder.start()
                await wait_for(lambda: call(lambda: int(client.xlen(keys.results())) >= 4), 120, "4 ladder matches")
                ladder.stop(threads)
                ladder_matches = await call(admin.list_matches, limit=100)
                assert len(ladder_matches) == 4
                assert all("tester" not in m.bot_names for m in ladder_matches), "the ladder seated a --no-ladder bot"
                match_id, _ = await call(admin.request_match, "shanghaien", ["tester", "ace"])
                await finished(admin, [match_id], 60)
                result = json.loads(client.hget(keys.match(match_id), "result") or b"{}")
                assert result["end_reason"] == "completed", result  # requested matches still come
                client.close()
            finally:
                process.terminate()
                process.wait(30)
                for r in runners:
                    r.stop()
            admin.close()

    asyncio.run(main())


def test_sigterm_lets_the_running_match_finish_then_the_bot_exits_0(redis_url: str, tmp_path: Path) -> None:
    """Stopping a bot (docker stop, a rollout) sends SIGTERM. The bot takes no new matches (its session
    closes) and plays the running one to its end instead of forfeiting it, then exits 0."""

    async def main() -> None:
        async with LocalArena(tmp_path, workers=1, redis_url=redis_url, worker_args=FAST) as arena:
            admin = ArenaClient(arena.gateway, arena.admin_token)
            tokens = await register(admin, "subject", "other")
            runners = run_bots({"other": SlowRandom(0, 1)}, tokens, arena.gateway)
            process = bot_process(tmp_path, arena.gateway, tokens["subject"], "--drain-s", "120", delay=0.03)
            try:
                await online(admin, "subject", "other")
                match_id, _ = await call(admin.request_match, "shanghaien", ["subject", "other"])
                client = redis.Redis.from_url(redis_url)
                await wait_for(lambda: call(lambda: int(client.xlen(keys.events(match_id))) > 20), 60, "mid-match")
                process.send_signal(signal.SIGTERM)
                await wait_for(lambda: call(lambda: not client.exists(keys.presence("subject"))), 30,
                               "the draining bot to go offline (no new matches)")  # fmt: skip
                code = await asyncio.to_thread(process.wait, 120)  # the drain's bound
                assert code == 0
                m = await call(admin.describe, match_id)
                assert m.state == 3, "the bot exited before its match ended"
                result = json.loads(client.hget(keys.match(match_id), "result") or b"{}")
                assert result["end_reason"] == "completed", result
                assert all(seat["status"] != "forfeited" for seat in result["seats"]), result
                client.close()
            finally:
                if process.poll() is None:
                    process.kill()
                    process.wait()
                for r in runners:
                    r.stop()
            admin.close()

    asyncio.run(main())


def test_sigterm_stops_the_bot_within_the_drain_time_even_mid_match(redis_url: str, tmp_path: Path) -> None:
    """The drain is bounded: a match that will not end in ``--drain-s`` is left (the bot forfeits it, as
    any bot that goes away) and the process still exits 0."""

    async def main() -> None:
        async with LocalArena(tmp_path, workers=1, redis_url=redis_url, worker_args=FAST) as arena:
            admin = ArenaClient(arena.gateway, arena.admin_token)
            tokens = await register(admin, "subject", "other")
            runners = run_bots({"other": SlowRandom(0, 1)}, tokens, arena.gateway)
            # 0.4 s a move: a Shanghaien match takes half a minute or more, far longer than the drain
            process = bot_process(tmp_path, arena.gateway, tokens["subject"], "--drain-s", "1", delay=0.4)
            try:
                await online(admin, "subject", "other")
                match_id, _ = await call(admin.request_match, "shanghaien", ["subject", "other"])
                client = redis.Redis.from_url(redis_url)
                await wait_for(lambda: call(lambda: int(client.xlen(keys.events(match_id))) > 6), 60, "mid-match")
                process.send_signal(signal.SIGTERM)
                code = await asyncio.to_thread(process.wait, 60)
                assert code == 0
                assert (await call(admin.describe, match_id)).state != 3, "exited when the match ended, not before"
                client.close()
            finally:
                if process.poll() is None:
                    process.kill()
                    process.wait()
                for r in runners:
                    r.stop()
            admin.close()

    asyncio.run(main())
