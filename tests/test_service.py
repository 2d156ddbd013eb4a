"""The arena as a service, end to end, against a real Redis and real processes: the gateway,
referee worker processes (``arena worker``), bots connected through their sessions with the SDK.

What each failure does is stated in the test names: a worker killed with SIGKILL mid-match, a Redis
restart mid-run, a bad token, a disabled bot, a duplicate match id, malformed requests.
"""

from __future__ import annotations

import asyncio
import json
import secrets
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import redis

from arena import keys
from arena.errors import ArenaError
from arena.local.arena import LocalArena
from arena.service.client import ArenaClient
from referee import transcript as transcripts
from sdk.arena_client import ArenaBotRunner
from sdk.bot import Turn
from tests.helpers import (
    FAST,
    QUICK_JOIN,
    SlowRandom,
    call,
    finished,
    register,
    results_recorded,
    run_bots,
    wait_for,
)


class IllegalFirst(SlowRandom):
    """Sends an illegal action once per match, then plays legally (the retry works)."""

    name = "illegal-first"

    def __init__(self) -> None:
        super().__init__()
        self.tried: set[str] = set()

    async def act(self, turn: Turn) -> Any:
        if turn.match_id not in self.tried:
            self.tried.add(turn.match_id)
            return "not-a-move"
        return await super().act(turn)


def test_register_connect_queue_play_and_store_with_two_worker_processes(redis_url: str, tmp_path: Path) -> None:
    async def main() -> None:
        async with LocalArena(tmp_path, workers=2, redis_url=redis_url, worker_args=FAST) as arena:
            admin = ArenaClient(arena.gateway, arena.admin_token)
            tokens = await register(admin, "alpha", "beta")
            runners = run_bots({"alpha": SlowRandom(0.002, 1), "beta": SlowRandom(0.002, 2)}, tokens, arena.gateway)
            bots = {b.name: b for b in await call(admin.list_bots)}
            assert set(bots) == {"alpha", "beta"}
            await wait_for(
                lambda: call(lambda: all(b.online for b in admin.list_bots())), 20, "both bots online"
            )  # presence
            ids = [
                (await call(admin.request_match, "shanghaien", ["alpha", "beta"] if i % 2 else ["beta", "alpha"]))[0]
                for i in range(6)
            ]
            done = await finished(admin, ids, 120)
            for m in done.values():
                assert m.result.end_reason == 1  # completed
                assert {s.bot_version for s in m.result.seats} == {"2.1"}  # reported when connecting
                assert m.result.seed and m.seed_sha256 == m.result.seed_sha256
            workers = {m.worker for m in done.values()}
            assert len(workers) == 2, f"both worker processes take matches from the one queue: {workers}"
            assert results_recorded(redis_url) == 6  # exactly once each
            # listings by bot and game, newest first
            listed = await call(admin.list_matches, bot_name="alpha", game_id="shanghaien", limit=100)
            assert {m.match_id for m in listed} == set(ids)
            assert await call(admin.list_matches, bot_name="nobody") == []
            # stored transcripts verify with the engines, and record the bots' versions
            for match_id in ids:
                text, full = await call(admin.transcript, match_id)
                assert full
                path = tmp_path / f"{match_id}.jsonl"
                path.write_text(text)
                assert transcripts.verify(path) is None
                header = json.loads(text.splitlines()[0])
                assert {s["bot_version"] for s in header["seats"]} == {"2.1"}
            for r in runners:
                r.stop()
            admin.close()

    asyncio.run(main())


def test_a_worker_killed_mid_match_is_taken_over_and_the_result_recorded_once(redis_url: str, tmp_path: Path) -> None:
    async def main() -> None:
        async with LocalArena(tmp_path, workers=2, redis_url=redis_url, worker_args=FAST) as arena:
            admin = ArenaClient(arena.gateway, arena.admin_token)
            tokens = await register(admin, "alpha", "beta")
            run_bots({"alpha": SlowRandom(0.03, 1), "beta": SlowRandom(0.03, 2)}, tokens, arena.gateway)
            match_id, _ = await call(admin.request_match, "shanghaien", ["alpha", "beta"], time_control=QUICK_JOIN)
            r = redis.Redis.from_url(redis_url)

            async def some_plies() -> bool:
                return int(r.xlen(keys.events(match_id))) > 30

            await wait_for(some_plies, 60, "the match to get going")
            running_on = (await call(admin.describe, match_id)).worker
            victim = next(w for w in arena.workers if running_on.startswith(f"local-{w.index}-"))
            plies_before = int(r.xlen(keys.events(match_id)))
            victim.kill()  # SIGKILL: no clean-up at all
            done = await finished(admin, [match_id], 120)
            m = done[match_id]
            assert m.worker != running_on, "another worker finished the match"
            assert m.result.end_reason == 1, m.result.detail  # the bots followed the match to its new worker
            assert results_recorded(redis_url) == 1
            text, _ = await call(admin.transcript, match_id)
            events = [json.loads(line) for line in text.splitlines()]
            resumed = [e for e in events if e["type"] == "resumed"]
            assert len(resumed) == 1 and resumed[0]["ply"] >= plies_before - 10
            path = tmp_path / "taken-over.jsonl"
            path.write_text(text)
            assert transcripts.verify(path) is None  # the seed and the actions so far replayed it exactly
            r.close()
            admin.close()

    asyncio.run(main())


def test_a_redis_restart_mid_run_loses_no_queued_match_result_or_transcript(tmp_path: Path) -> None:
    async def main() -> None:
        async with LocalArena(tmp_path, workers=2, worker_args=FAST) as arena:  # its own Redis, to restart
            assert arena.redis is not None
            admin = ArenaClient(arena.gateway, arena.admin_token)
            tokens = await register(admin, "alpha", "beta")
            run_bots({"alpha": SlowRandom(0.01, 1), "beta": SlowRandom(0.01, 2)}, tokens, arena.gateway)
            ids = [
                (await call(admin.request_match, "shanghaien", ["alpha", "beta"], time_control=QUICK_JOIN))[0]
                for _ in range(8)
            ]
            r = redis.Redis.from_url(arena.redis_url)

            async def first_done() -> bool:
                return int(r.xlen(keys.results())) >= 1

            await wait_for(first_done, 90, "a first result")
            r.close()
            arena.redis.stop()  # a restart: the AOF is written, the server goes away...
            await asyncio.sleep(1.0)
            arena.redis.start()  # ...and comes back on the same port with its data
            done = await finished(admin, ids, 180)
            assert len(done) == 8
            assert results_recorded(arena.redis_url) == 8
            for match_id in ids:
                text, _ = await call(admin.transcript, match_id)
                assert json.loads(text.splitlines()[-1])["type"] == "footer"
            admin.close()

    asyncio.run(main())


def test_bad_requests_are_clear_errors_and_lose_nothing(redis_url: str, tmp_path: Path) -> None:
    async def main() -> None:
        async with LocalArena(tmp_path, workers=1, redis_url=redis_url, worker_args=FAST) as arena:
            admin = ArenaClient(arena.gateway, arena.admin_token)
            tokens = await register(admin, "alpha", "beta", "gamma")

            async def refused(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> ArenaError:
                with pytest.raises(ArenaError) as e:
                    await call(fn, *args, **kwargs)
                return e.value

            # a wrong admin token, or none
            stranger = ArenaClient(arena.gateway, "arena_wrong")
            assert (await refused(stranger.register_bot, "x", "me", ["shanghaien"])).code == "UNAUTHENTICATED"
            assert (await refused(stranger.request_match, "shanghaien", ["alpha", "beta"])).code == "UNAUTHENTICATED"
            # a bot token is not the admin token; a bot may rotate its own token only
            as_alpha = ArenaClient(arena.gateway, tokens["alpha"])
            # a bot is a known caller: not allowed, rather than not known
            assert (await refused(as_alpha.request_match, "shanghaien", ["alpha", "beta"])).code == "PERMISSION_DENIED"
            assert (await refused(as_alpha.rotate_token, "beta")).code == "PERMISSION_DENIED"
            # a bad bot token on the session
            bad = ArenaBotRunner(SlowRandom(), arena.gateway, "arena_not-a-token")
            with pytest.raises(Exception, match="unknown bot token"):
                await asyncio.wait_for(bad.run(), 10)
            # malformed requests
            for args, kwargs, fragment in [
                (("chess", ["alpha", "beta"]), {}, "unknown game id"),
                (("shanghaien", ["alpha"]), {}, "seats 2 bots"),
                (("shanghaien", ["alpha", "nobody"]), {}, "no bot named"),
                (("shangrila-3p", ["alpha", "beta", "gamma"]), {}, "does not play"),
                (("shanghaien", ["alpha", "beta"]), {"match_id": "bad id!"}, "match id"),
            ]:
                e = await refused(admin.request_match, *args, **kwargs)
                assert e.code == "INVALID_ARGUMENT" and fragment in e.message, e
            assert (await refused(admin.register_bot, "alpha", "me", ["shanghaien"])).code == "ALREADY_EXISTS"
            assert (await refused(admin.register_bot, "bad name!", "me", ["shanghaien"])).code == "INVALID_ARGUMENT"
            # a disabled bot: no session, no new match
            await call(admin.set_enabled, "gamma", False, "crashes on turn 1")
            assert not (await call(admin.list_bots))[2].enabled
            e = await refused(admin.request_match, "shanghaien", ["alpha", "gamma"])
            assert "disabled: crashes on turn 1" in e.message
            disabled = ArenaBotRunner(SlowRandom(), arena.gateway, tokens["gamma"])
            with pytest.raises(Exception, match="disabled"):
                await asyncio.wait_for(disabled.run(), 10)
            # a duplicate match id: refused, and the first match is untouched and plays
            run_bots({"alpha": SlowRandom(0, 1), "beta": SlowRandom(0, 2)}, tokens, arena.gateway)
            await call(admin.request_match, "shanghaien", ["alpha", "beta"], match_id="final-1", seed="s1")
            dup = await refused(admin.request_match, "shanghaien", ["beta", "alpha"], match_id="final-1", seed="s2")
            assert dup.code == "ALREADY_EXISTS"
            done = await finished(admin, ["final-1"], 60)
            assert list(done["final-1"].bot_names) == ["alpha", "beta"] and done["final-1"].result.seed == "s1"
            # a transcript of a match that does not exist, or is not finished
            assert (await refused(admin.transcript, "nope")).code == "NOT_FOUND"
            for c in (admin, stranger, as_alpha):
                c.close()

    asyncio.run(main())


def test_owners_see_their_bots_refusals_others_see_the_public_transcript(redis_url: str, tmp_path: Path) -> None:
    async def main() -> None:
        async with LocalArena(tmp_path, workers=1, redis_url=redis_url, worker_args=FAST) as arena:
            admin = ArenaClient(arena.gateway, arena.admin_token)
            tokens = await register(admin, "alpha", "beta")
            run_bots({"alpha": IllegalFirst(), "beta": SlowRandom(0, 2)}, tokens, arena.gateway)
            match_id, _ = await call(admin.request_match, "shanghaien", ["alpha", "beta"])
            await finished(admin, [match_id], 60)
            public, full = await call(ArenaClient(arena.gateway).transcript, match_id)
            assert not full
            mine, full = await call(ArenaClient(arena.gateway, tokens["alpha"]).transcript, match_id)
            assert full
            theirs, _ = await call(ArenaClient(arena.gateway, tokens["beta"]).transcript, match_id)

            def refusals(text: str) -> list[dict[str, Any]]:
                return [e for e in map(json.loads, text.splitlines()) if e["type"] == "refusal"]

            assert len(refusals(mine)) == 1 and refusals(mine)[0]["action"] == "not-a-move"
            assert "reason" in refusals(mine)[0]
            for other in (public, theirs):
                (r,) = refusals(other)
                assert r["seat"] == 0 and "action" not in r and "reason" not in r
            path = tmp_path / "public.jsonl"
            path.write_text(public)
            assert transcripts.verify(path) is None  # the public transcript still verifies
            admin.close()

    asyncio.run(main())


def test_the_cli_drives_the_arena_and_follows_a_match_live(
    redis_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from arena.cli.main import main as cli

    async def main() -> None:
        async with LocalArena(tmp_path / "arena", workers=1, redis_url=redis_url, worker_args=FAST) as arena:
            g = ["--gateway", arena.gateway]
            admin = [*g, "--admin-token", arena.admin_token]

            async def run(*argv: str) -> Any:
                capsys.readouterr()
                code = await call(cli, list(argv))
                out = capsys.readouterr().out
                assert code == 0, out
                if "--json" in argv:  # the last line: the gateway in this process may log above it
                    return json.loads(out.strip().splitlines()[-1])
                return out

            tokens = {}
            for name in ("alpha", "beta"):
                reply = await run("bot", "register", name, "--owner", "me", "--game", "shanghaien", "--json", *admin)
                tokens[name] = reply["token"]
            assert [b["name"] for b in await run("bot", "list", "--json", *g)] == ["alpha", "beta"]
            capsys.readouterr()
            assert await call(cli, ["bot", "register", "x", "--owner", "me", "--game", "shanghaien", *g]) == 1
            assert "admin token" in capsys.readouterr().err
            run_bots({"alpha": SlowRandom(0.01, 1), "beta": SlowRandom(0.01, 2)}, tokens, arena.gateway)
            # a match followed live from its first line, then compared with the stored transcript
            queued = await run("match", "request", "alpha", "beta", "--game", "shanghaien", "--json", *admin)
            follower = ArenaClient(arena.gateway)
            live = await call(lambda: list(follower.follow(queued["match_id"])))
            assert json.loads(live[0])["type"] == "header" and json.loads(live[-1])["type"] == "footer"
            await finished(follower, [queued["match_id"]], 30)  # the footer is logged just before the result is stored
            stored, _ = await call(follower.transcript, queued["match_id"])
            assert live == stored.splitlines()
            # request and wait; list; download one and many; watch a finished match
            reply = await run("match", "request", "beta", "alpha", "--game", "shanghaien", "--wait", "--json", *admin)
            assert reply["match"]["state"] == "finished"  # as --state spells it (docs/cli.md)
            listed = await run("matches", "list", "--bot", "alpha", "--json", *g)
            assert {m["match_id"] for m in listed} == {queued["match_id"], reply["match_id"]}
            one = tmp_path / "one.jsonl"
            await run("transcript", "get", reply["match_id"], "-o", str(one), *g)
            assert transcripts.verify(one) is None
            await run("transcript", "get", "--bot", "alpha", "-o", str(tmp_path / "all"), *g)
            assert len(list((tmp_path / "all").glob("*.jsonl"))) == 2
            # --bot asks for a set: a folder, even when it does not exist yet and one match is found
            await run("transcript", "get", "--bot", "beta", "--limit", "1", "-o", str(tmp_path / "beta"), *g)
            assert [p.name for p in (tmp_path / "beta").glob("*.jsonl")] == [f"{reply['match_id']}.jsonl"]
            watched = (await run("match", "watch", reply["match_id"], *g)).splitlines()
            assert watched[-1].startswith("end: completed")
            follower.close()

    asyncio.run(main())


def test_gateway_and_worker_processes_serve_grpc_health_and_prometheus_metrics(redis_url: str, tmp_path: Path) -> None:
    import subprocess
    import urllib.request

    import grpc
    from grpc_health.v1 import health_pb2, health_pb2_grpc

    from arena.local.arena import arena_command
    from arena.local.redisproc import free_port

    gw, gw_metrics, wk, wk_metrics = (free_port() for _ in range(4))
    token = "arena_admin_" + secrets.token_urlsafe(32)
    procs = [
        subprocess.Popen(arena_command("gateway", "--redis", redis_url, "--listen", f"127.0.0.1:{gw}",
                                       "--admin-token", token, "--metrics-port", str(gw_metrics))),
        subprocess.Popen(arena_command("worker", "--redis", redis_url, "--listen", f"127.0.0.1:{wk}",
                                       "--metrics-port", str(wk_metrics))),
    ]  # fmt: skip
    try:
        for port, metrics_port, metric in (
            (gw, gw_metrics, "arena_bot_sessions"),
            (wk, wk_metrics, "arena_matches_running"),
        ):
            deadline = time.monotonic() + 30
            while True:
                try:
                    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
                        stub = health_pb2_grpc.HealthStub(channel)
                        status = stub.Check(health_pb2.HealthCheckRequest(service=""), timeout=2).status
                    text = urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=2).read().decode()
                    if metric in text:
                        break
                except (grpc.RpcError, OSError):
                    pass
                assert time.monotonic() < deadline, f"port {port} never became healthy with {metric}"
                time.sleep(0.2)
            assert status == health_pb2.HealthCheckResponse.SERVING
        with ArenaClient(f"127.0.0.1:{gw}", token) as admin:  # the gateway installed ARENA_ADMIN_TOKEN
            admin.register_bot("alpha", "me", ["shanghaien"])
    finally:
        for p in procs:
            p.terminate()
            p.wait(timeout=30)
