"""Presence per gateway and token changes pushed to the sessions (issue 34), against a real redis-server
and a real gateway: a dead gateway's bots go offline and are swept away, a live one writes its lost
presence again, a rotated, disabled or retired token ends its open session without waiting for a
heartbeat, and the ladder's view of the registry follows the online bots and their changes."""

from __future__ import annotations

import asyncio
import json

import grpc
import redis

from arena import keys
from arena.ladder.store import Ladder
from arena.local.ladder_runner import RegistryBots
from arena.service.gateway import start_gateway
from arena.service.presence import PRESENCE_TTL_S, Presence
from arena.service.registry import Registry
from referee.wire import arena_pb2, arena_pb2_grpc
from referee.wire.contract import bearer_metadata
from referee.wire.tls import aio_channel
from tests.helpers import wait_for


def test_a_bot_is_online_while_one_of_its_gateways_lives_and_a_dead_gateways_entries_are_swept(
    redis_url: str,
) -> None:
    r = redis.Redis.from_url(redis_url)
    a, b = Presence(r, "gw-a"), Presence(r, "gw-b")
    a.present("x", "1", {"session_id": "s1"})
    b.present("x", "2", {"session_id": "s2"})
    b.present("y", "1", {"session_id": "s3", keys.PRESENCE_LADDER: False})
    assert a.online_names() == ["x", "y"]
    assert 0 < int(r.ttl(keys.gateway_alive("gw-b"))) <= PRESENCE_TTL_S
    assert b.sessions(["y"])["y"] == {"session_id": "s3", keys.PRESENCE_LADDER: False}
    r.delete(keys.gateway_alive("gw-b"))  # gw-b died: its key ran out
    assert a.online("x") and not a.online("y")
    assert a.online_names() == ["x"]
    assert a.sweep() == 1 and a.sweep() == 0
    assert {keys.text(n) for n in r.smembers(keys.online())} == {"x"}
    assert not r.exists(keys.presence("y")) and not r.exists(keys.gateway_bots("gw-b"))
    assert {keys.text(g) for g in r.smembers(keys.gateways())} == {"gw-a"}
    a.absent("x")
    assert not a.online("x") and not r.exists(keys.presence("x")) and not r.smembers(keys.online())
    # a presence string written by a gateway of before counts while it lasts, and is replaced by a hash
    r.set(keys.presence("old"), json.dumps({"session_id": "s4"}), ex=PRESENCE_TTL_S)
    assert a.sessions(["old"])["old"] == {}
    a.present("old", "1", {"session_id": "s5"})
    assert a.sessions(["old"])["old"] == {"session_id": "s5"}
    r.close()


def test_rotated_disabled_and_retired_tokens_end_open_sessions_at_once_and_lost_presence_is_rewritten(
    redis_url: str,
) -> None:
    r = redis.Redis.from_url(redis_url)
    registry = Registry(r)
    tokens = {n: registry.register(n, "tests", ["shanghaien"])[1] for n in ("rot", "dis", "ret", "keep")}

    async def main() -> None:
        server, port, servicer = await start_gateway(redis_url, "127.0.0.1:0")
        for task in servicer.hub._tasks:  # no heartbeat: whatever ends a session now was pushed
            if task.get_name() == "sessions-beat":
                task.cancel()
        channel = aio_channel(f"127.0.0.1:{port}", None)
        stub = arena_pb2_grpc.ArenaServiceStub(channel)  # type: ignore[no-untyped-call]
        ends: dict[str, tuple[grpc.StatusCode, str]] = {}
        welcomed: set[str] = set()

        async def session(name: str) -> None:
            request = arena_pb2.OpenSessionRequest(bot_version="1")
            call = stub.OpenSession(request, metadata=bearer_metadata(tokens[name]))
            try:
                async for event in call:
                    if event.WhichOneof("event") == "welcome":
                        welcomed.add(name)
            except grpc.aio.AioRpcError as e:
                ends[name] = (e.code(), e.details() or "")

        tasks = [asyncio.create_task(session(n)) for n in tokens]

        async def all_welcomed() -> bool:
            return len(welcomed) == len(tokens)

        await wait_for(all_welcomed, 20, "every session's welcome")
        await wait_for(lambda: asyncio.to_thread(lambda: len(registry.presence.online_names()) == 4), 20, "online")
        await asyncio.to_thread(registry.rotate_token, "rot")
        await asyncio.to_thread(registry.set_enabled, "dis", False, "testing")
        await asyncio.to_thread(registry.retire, "ret", "replaced")

        async def three_ended() -> bool:
            return len(ends) == 3

        await wait_for(three_ended, 20, "the changed bots' sessions to end")
        assert ends["rot"][0] == grpc.StatusCode.UNAUTHENTICATED and "rotated" in ends["rot"][1]
        assert ends["dis"] == (grpc.StatusCode.PERMISSION_DENIED, "bot dis was disabled")
        assert ends["ret"][0] == grpc.StatusCode.PERMISSION_DENIED
        assert "keep" not in ends and not tasks[-1].done()
        assert await asyncio.to_thread(registry.presence.online_names) == ["keep"]
        # Redis lost the gateway's presence (restarted empty): its next heartbeat writes it again
        await asyncio.to_thread(lambda: r.delete(keys.presence("keep"), keys.online(), keys.gateway_bots(
            servicer.registry.presence.gateway_id)))  # fmt: skip
        assert not await asyncio.to_thread(registry.online, "keep")
        await servicer.hub.beat()
        assert await asyncio.to_thread(registry.online, "keep")
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await channel.close()
        await server.stop(0)
        await servicer.close()

    asyncio.run(main())
    r.close()


def test_the_ladders_view_follows_the_online_bots_and_their_changes(redis_url: str) -> None:
    r = redis.Redis.from_url(redis_url)
    registry = Registry(r, "gw-1")
    for n in ("a", "b", "c", "offline"):
        registry.register(n, "tests", ["shanghaien"], max_concurrent=2)
    registry.seen("a", "1.0", {"session_id": "1"})
    registry.seen("b", "2.0", {"session_id": "2", keys.PRESENCE_LADDER: False})
    Registry(r, "gw-2").seen("c", "3.0", {"session_id": "3"})
    source = RegistryBots(registry, Ladder(r), ("shanghaien",))
    bots = {b.name: b for b in source.bots()}
    assert set(bots) == {"a", "b", "c"}
    assert (bots["a"].version, bots["a"].ladder, bots["a"].max_concurrent, bots["a"].games) == (
        "1.0", True, 2, ("shanghaien",))  # fmt: skip
    assert not bots["b"].ladder and bots["c"].version == "3.0"
    registry.set_enabled("a", False, "testing")
    source.changed(["a"])  # the ladder runner reads keys.bot_changes for this
    bots = {b.name: b for b in source.bots()}
    assert not bots["a"].enabled
    r.delete(keys.gateway_alive("gw-2"))  # gw-2 died
    assert {b.name for b in source.bots()} == {"a", "b"}
    registry.gone("b")
    assert {b.name for b in source.bots()} == {"a"}
    r.close()
