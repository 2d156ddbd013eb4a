"""``arena match request`` seating a bot that has no session: queued all the same (it may be about to
connect), but said at once, instead of an aborted match half a minute later."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from arena.cli.main import main
from arena.redis_client import connect
from arena.service.gateway import start_gateway
from arena.service.registry import Registry


def test_a_request_seating_offline_bots_warns_at_once(redis_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    registry = Registry(connect(redis_url))
    registry.set_admin_token("admin")
    for name in ("alpha", "beta"):
        registry.register(name, "me", ["shanghaien"])

    async def run() -> None:
        server, port, servicer = await start_gateway(redis_url, "127.0.0.1:0")
        try:
            capsys.readouterr()
            argv = ["match", "request", "alpha", "beta", "--game", "shanghaien", "--gateway", f"127.0.0.1:{port}",
                    "--admin-token", "admin"]  # fmt: skip
            assert await asyncio.to_thread(main, argv) == 0
        finally:
            await server.stop(None)
            await servicer.close()

    asyncio.run(run())
    captured = capsys.readouterr()
    assert "queued shanghaien-" in captured.out
    assert "warning: alpha, beta are offline" in captured.err and "within 30 s" in captured.err, captured.err


def test_a_match_request_retried_with_its_request_id_is_the_same_match(redis_url: str) -> None:
    """RequestMatch is idempotent by ``arena-request-id``: the same caller sending the same request again
    (its first answer lost) gets the same match and seed hash, one queue entry; with an explicit match id
    too; another request naming that id is still refused, and a request id reused for another request is
    refused as such. Through a real gateway."""
    import grpc

    from arena import keys
    from arena.errors import ArenaError
    from arena.service.client import ArenaClient
    from arena.service.queue import Priority
    from referee.wire import arena_pb2
    from referee.wire.contract import request_id_metadata
    from tests.helpers import gateway, refused

    r: Any = connect(redis_url)
    registry = Registry(r)
    registry.set_admin_token("admin")
    for name in ("alpha", "beta", "gamma"):
        registry.register(name, "me", ["shanghaien"])

    async def run() -> None:
        async with gateway(redis_url) as address:
            with ArenaClient(address, "admin") as admin:
                first = await asyncio.to_thread(admin.request_match, "shanghaien", ["alpha", "beta"],
                                                request_id="req-match-0001")  # fmt: skip
                again = await asyncio.to_thread(admin.request_match, "shanghaien", ["alpha", "beta"],
                                                request_id="req-match-0001")  # fmt: skip
                assert again == first and first[1]
                other = await asyncio.to_thread(admin.request_match, "shanghaien", ["alpha", "beta"])
                assert other[0] != first[0]  # a request of its own (the client drew its own id)

                named = await asyncio.to_thread(admin.request_match, "shanghaien", ["beta", "alpha"],
                                                match_id="mine-1", seed="s1", request_id="req-match-0002")  # fmt: skip
                assert named[0] == "mine-1"
                same = await asyncio.to_thread(admin.request_match, "shanghaien", ["beta", "alpha"],
                                               match_id="mine-1", seed="s1", request_id="req-match-0002")  # fmt: skip
                assert same == named
                assert await refused(admin.request_match, "shanghaien", ["beta", "alpha"], match_id="mine-1",
                                     request_id="req-match-0003") == "ALREADY_EXISTS"  # fmt: skip
                request = arena_pb2.RequestMatchRequest(game_id="shanghaien", bot_names=["beta", "alpha"],
                                                        match_id="mine-1")  # fmt: skip
                with pytest.raises(ArenaError) as plain:  # no request id at all: taken, as before
                    await asyncio.to_thread(admin._call, "RequestMatch", request)
                assert plain.value.code == grpc.StatusCode.ALREADY_EXISTS.name

                with pytest.raises(ArenaError) as reused:  # the same id for another request: not a retry
                    await asyncio.to_thread(admin.request_match, "shanghaien", ["gamma", "alpha"],
                                            request_id="req-match-0001")  # fmt: skip
                assert reused.value.code == "INVALID_ARGUMENT" and "req-match-0001" in reused.value.message
                assert "bots" in reused.value.message and first[0] in reused.value.message
                with pytest.raises(ArenaError) as bad:
                    await asyncio.to_thread(admin._call, "RequestMatch", request, request_id_metadata("short"))
                assert bad.value.code == "INVALID_ARGUMENT"

    asyncio.run(run())
    queued = [keys.text(f[b"match_id"]) for _, f in r.xrange(keys.queue(Priority.REQUESTED))]
    assert len(queued) == len(set(queued)) == 3 and "mine-1" in queued  # three matches, one entry each
    assert r.zcard(keys.matches_by_time()) == 3
    assert r.ttl(keys.match_request("admin", "req-match-0001")) > 86_000  # kept a day, then gone


def test_a_request_id_is_the_callers_own(redis_url: str) -> None:
    """Two callers using the same request id make two matches: an id names a request of its caller."""
    from arena.service.matches import MatchStore

    r = connect(redis_url)
    registry = Registry(r)
    for name in ("alpha", "beta"):
        registry.register(name, "me", ["shanghaien"])
    store = MatchStore(r)
    alice = store.request("shanghaien", ["alpha", "beta"], requested_by="alice", request_id="req-shared-01")
    bob = store.request("shanghaien", ["alpha", "beta"], requested_by="bob", request_id="req-shared-01")
    assert alice[0] != bob[0]
    assert store.request("shanghaien", ["alpha", "beta"], requested_by="bob", request_id="req-shared-01") == bob
