"""Who may call what on the one public address: every RPC of every service the gateway serves
(ArenaService, LadderService, BotService's relayed Play) against every kind of caller, each answered
with the expected status. One pytest case per cell, so the matrix's size is the count of cases.

Callers: no token; a wrong token; a bot's token (the bot ``mine``); another owner's token (``them``);
the bot's own owner's token (``me``); the admin token. A token that is given must be valid on every
call, public ones included (UNAUTHENTICATED); a known caller without the right is PERMISSION_DENIED.
RefereeService on the workers (the control plane behind the gateway) has its own matrix in
test_worker_security.py. Rotated-away and disabled tokens, and rate limits, are tested below the matrix.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

import grpc
import pytest
import redis

from arena.ladder.service import host_ladder
from arena.redis_client import connect
from arena.service.gateway import start_gateway
from arena.service.owners import Owners
from arena.service.ratelimit import RateLimiter
from arena.service.registry import Registry
from referee.wire import arena_pb2, arena_pb2_grpc, bot_pb2, bot_pb2_grpc, ladder_pb2, ladder_pb2_grpc
from referee.wire.contract import bearer_metadata

OK = grpc.StatusCode.OK
UNAUTH = grpc.StatusCode.UNAUTHENTICATED
DENIED = grpc.StatusCode.PERMISSION_DENIED
NOT_FOUND = grpc.StatusCode.NOT_FOUND
CALLERS = ("none", "wrong", "bot", "other_owner", "own_owner", "admin")
ADMIN_TOKEN = "arena_admin_" + "Zq8" * 15 + "x9"


def row(*codes: grpc.StatusCode) -> dict[str, grpc.StatusCode]:
    return dict(zip(CALLERS, codes, strict=True))


PUBLIC = row(OK, UNAUTH, OK, OK, OK, OK)
ADMIN_ONLY = row(UNAUTH, UNAUTH, DENIED, DENIED, DENIED, OK)

# RPC -> expected status per caller. "mine" is the bot of owner "me"; "ref" is a reference bot (owner arena).
MATRIX: dict[str, dict[str, grpc.StatusCode]] = {
    "ArenaService/RegisterBot": row(UNAUTH, UNAUTH, DENIED, OK, OK, OK),  # an owner registers for itself
    "ArenaService/RotateToken": row(UNAUTH, UNAUTH, OK, DENIED, OK, OK),  # the bot itself, its owner, the admin
    "ArenaService/SetBotEnabled": row(UNAUTH, UNAUTH, DENIED, DENIED, OK, OK),
    "ArenaService/ListBots": PUBLIC,
    "ArenaService/RequestMatch": row(UNAUTH, UNAUTH, DENIED, DENIED, OK, OK),  # unrated, mine vs a reference bot
    "ArenaService/DescribeMatch": PUBLIC,
    "ArenaService/ListMatches": PUBLIC,
    "ArenaService/FollowMatch": row(NOT_FOUND, UNAUTH, NOT_FOUND, NOT_FOUND, NOT_FOUND, NOT_FOUND),  # no such match
    "ArenaService/GetTranscript": row(NOT_FOUND, UNAUTH, NOT_FOUND, NOT_FOUND, NOT_FOUND, NOT_FOUND),
    "ArenaService/CreateOwner": ADMIN_ONLY,
    "ArenaService/ListOwners": ADMIN_ONLY,
    "ArenaService/RotateOwnerToken": row(UNAUTH, UNAUTH, DENIED, DENIED, OK, OK),  # of "me"
    "ArenaService/OpenSession": row(UNAUTH, UNAUTH, OK, DENIED, DENIED, DENIED),  # sessions are bots'
    "BotService/Play": row(UNAUTH, UNAUTH, OK, DENIED, DENIED, DENIED),  # relayed; mine's queued match
    "LadderService/GetLeaderboard": PUBLIC,
    "LadderService/GetRatingHistory": PUBLIC,
    "LadderService/GetHeadToHead": PUBLIC,
}
CELLS = [(rpc, caller) for rpc in MATRIX for caller in CALLERS]


async def _status(coro: Any) -> grpc.StatusCode:
    try:
        await coro
    except grpc.aio.AioRpcError as e:
        return e.code()
    return OK


async def _first(stream: Any) -> None:
    """A server stream's first message (its welcome), then let it go."""
    async for _ in stream:
        stream.cancel()
        return


async def _play(stub: Any, metadata: Any, match_id: str) -> None:
    async def requests() -> AsyncIterator[bot_pb2.PlayRequest]:
        yield bot_pb2.PlayRequest(hello=bot_pb2.Hello(bot_name="mine", bot_version="1", match_ids=[match_id]))
        await asyncio.sleep(30)

    call = stub.Play(requests(), metadata=metadata)
    message = await call.read()
    if message is grpc.aio.EOF:
        await call  # raises with the status
    assert message.WhichOneof("message") == "welcome"
    call.cancel()


def _calls(
    arena: Any, bots: Any, ladder: Any, md: Any, ids: dict[str, str]
) -> dict[str, Callable[[], Any]]:
    a = arena_pb2
    return {
        "ArenaService/RegisterBot": lambda: arena.RegisterBot(
            a.RegisterBotRequest(name="fresh", owner="me", game_ids=["shanghaien"]), metadata=md),
        "ArenaService/RotateToken": lambda: arena.RotateToken(a.RotateTokenRequest(name="mine"), metadata=md),
        "ArenaService/SetBotEnabled": lambda: arena.SetBotEnabled(
            a.SetBotEnabledRequest(name="mine", enabled=True), metadata=md),
        "ArenaService/ListBots": lambda: arena.ListBots(a.ListBotsRequest(), metadata=md),
        "ArenaService/RequestMatch": lambda: arena.RequestMatch(
            a.RequestMatchRequest(game_id="shanghaien", bot_names=["mine", "ref"]), metadata=md),
        "ArenaService/DescribeMatch": lambda: arena.DescribeMatch(
            a.DescribeMatchRequest(match_id=ids["queued"]), metadata=md),
        "ArenaService/ListMatches": lambda: arena.ListMatches(a.ListMatchesRequest(), metadata=md),
        "ArenaService/FollowMatch": lambda: _first(arena.FollowMatch(a.FollowMatchRequest(match_id="nope"),
                                                                     metadata=md)),
        "ArenaService/GetTranscript": lambda: arena.GetTranscript(a.GetTranscriptRequest(match_id="nope"), metadata=md),
        "ArenaService/CreateOwner": lambda: arena.CreateOwner(a.CreateOwnerRequest(name="newcomer"), metadata=md),
        "ArenaService/ListOwners": lambda: arena.ListOwners(a.ListOwnersRequest(), metadata=md),
        "ArenaService/RotateOwnerToken": lambda: arena.RotateOwnerToken(a.RotateOwnerTokenRequest(name="me"),
                                                                        metadata=md),
        "ArenaService/OpenSession": lambda: _first(arena.OpenSession(a.OpenSessionRequest(bot_version="1"),
                                                                     metadata=md)),
        "BotService/Play": lambda: _play(bots, md, ids["queued"]),
        "LadderService/GetLeaderboard": lambda: ladder.GetLeaderboard(
            ladder_pb2.GetLeaderboardRequest(game_id="shanghaien"), metadata=md),
        "LadderService/GetRatingHistory": lambda: ladder.GetRatingHistory(
            ladder_pb2.GetRatingHistoryRequest(game_id="shanghaien", bot_name="mine"), metadata=md),
        "LadderService/GetHeadToHead": lambda: ladder.GetHeadToHead(
            ladder_pb2.GetHeadToHeadRequest(game_id="shanghaien"), metadata=md),
    }  # fmt: skip


def _setup(redis_url: str) -> tuple[dict[str, str], dict[str, str]]:
    """Owners ``me`` and ``them``, bots ``mine`` (me's), ``theirs`` and ``ref`` (a reference bot), a queued
    match of mine against ref; the token of each kind of caller."""
    r = connect(redis_url)
    registry, owners = Registry(r), Owners(r)
    registry.set_admin_token(ADMIN_TOKEN)
    _, me = owners.create("me")
    _, them = owners.create("them")
    _, mine = registry.register("mine", "me", ["shanghaien"])
    registry.register("theirs", "them", ["shanghaien"])
    registry.register("ref", "arena", ["shanghaien"])
    from arena.service.matches import MatchStore

    queued, _ = MatchStore(r).request("shanghaien", ["mine", "ref"])
    r.close()
    tokens = {"none": "", "wrong": "arena_" + "Q" * 43, "bot": mine, "other_owner": them, "own_owner": me,
              "admin": ADMIN_TOKEN}  # fmt: skip
    return tokens, {"queued": queued}


def test_the_matrix_covers_every_rpc_of_the_gateways_services() -> None:
    served = {f"ArenaService/{m.name}" for m in arena_pb2.DESCRIPTOR.services_by_name["ArenaService"].methods}
    served |= {f"LadderService/{m.name}" for m in ladder_pb2.DESCRIPTOR.services_by_name["LadderService"].methods}
    served |= {f"BotService/{m.name}" for m in bot_pb2.DESCRIPTOR.services_by_name["BotService"].methods}
    assert set(MATRIX) == served
    assert len(CELLS) == len(served) * len(CALLERS) == 102


@pytest.mark.parametrize(("rpc", "caller"), CELLS, ids=[f"{rpc.split('/')[1]}-{caller}" for rpc, caller in CELLS])
def test_authorization(rpc: str, caller: str, redis_url: str) -> None:
    tokens, ids = _setup(redis_url)

    async def main() -> grpc.StatusCode:
        server, port, servicer = await start_gateway(redis_url, "127.0.0.1:0", host_ladder)
        try:
            async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
                stubs = (arena_pb2_grpc.ArenaServiceStub(channel), bot_pb2_grpc.BotServiceStub(channel),  # type: ignore[no-untyped-call]
                         ladder_pb2_grpc.LadderServiceStub(channel))  # type: ignore[no-untyped-call]  # fmt: skip
                md = bearer_metadata(tokens[caller]) if tokens[caller] else ()
                return await asyncio.wait_for(_status(_calls(*stubs, md, ids)[rpc]()), 20)
        finally:
            await server.stop(0)
            await servicer.close()

    assert asyncio.run(main()) == MATRIX[rpc][caller]


def test_rotated_away_and_disabled_tokens_are_refused_everywhere(redis_url: str) -> None:
    tokens, ids = _setup(redis_url)
    r = connect(redis_url)
    Registry(r).rotate_token("mine")
    Owners(r).rotate_token("me")
    _, disabled = Registry(r).register("off", "me", ["shanghaien"])
    Registry(r).set_enabled("off", False, "testing")
    r.close()

    async def main() -> None:
        server, port, servicer = await start_gateway(redis_url, "127.0.0.1:0", host_ladder)
        try:
            async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
                stubs = (arena_pb2_grpc.ArenaServiceStub(channel), bot_pb2_grpc.BotServiceStub(channel),  # type: ignore[no-untyped-call]
                         ladder_pb2_grpc.LadderServiceStub(channel))  # type: ignore[no-untyped-call]  # fmt: skip
                for old in ("bot", "own_owner"):  # rotated away: nobody, on every call
                    calls = _calls(*stubs, bearer_metadata(tokens[old]), ids)
                    for rpc, call in calls.items():
                        assert await asyncio.wait_for(_status(call()), 20) == UNAUTH, (old, rpc)
                calls = _calls(*stubs, bearer_metadata(disabled), ids)
                assert await _status(calls["ArenaService/OpenSession"]()) == DENIED
                assert await _status(calls["BotService/Play"]()) == DENIED
        finally:
            await server.stop(0)
            await servicer.close()

    asyncio.run(main())


def test_match_requests_past_the_limit_are_refused_with_a_retry_hint_across_gateways(redis_url: str) -> None:
    tokens, _ = _setup(redis_url)

    async def main() -> None:
        limits = {"request": 2, "session": 100}
        gateways = [
            await start_gateway(redis_url, "127.0.0.1:0", limiter=RateLimiter(redis.Redis.from_url(redis_url), limits,
                                                                              window_s=3))
            for _ in range(2)
        ]  # fmt: skip
        try:
            channels = [grpc.aio.insecure_channel(f"127.0.0.1:{port}") for _, port, _ in gateways]
            stubs = [arena_pb2_grpc.ArenaServiceStub(c) for c in channels]  # type: ignore[no-untyped-call]
            md = bearer_metadata(tokens["own_owner"])
            request = arena_pb2.RequestMatchRequest(game_id="shanghaien", bot_names=["mine", "ref"])
            statuses = []
            for stub in (stubs[0], stubs[1], stubs[0]):  # one limit, kept in Redis, for both replicas
                statuses.append(await _status(stub.RequestMatch(request, metadata=md)))
            if statuses[:2] != [OK, OK]:  # the window turned between the calls: try once more from a fresh one
                await asyncio.sleep(3.1)
                statuses = [await _status(s.RequestMatch(request, metadata=md)) for s in (stubs[0], stubs[1], stubs[0])]
            assert statuses == [OK, OK, grpc.StatusCode.RESOURCE_EXHAUSTED]
            call = stubs[1].RequestMatch(request, metadata=md)
            with pytest.raises(grpc.aio.AioRpcError) as refused:
                await call
            assert refused.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
            assert "retry in" in (refused.value.details() or "")
            retry = dict(refused.value.trailing_metadata() or ())["retry-after-s"]
            assert 1 <= int(retry) <= 3
            await asyncio.sleep(int(retry) + 0.2)  # the window is over: accepted again
            assert await _status(stubs[1].RequestMatch(request, metadata=md)) == OK
            # the admin is not limited
            admin = bearer_metadata(ADMIN_TOKEN)
            for _ in range(4):
                assert await _status(stubs[0].RequestMatch(request, metadata=admin)) == OK
            for c in channels:
                await c.close()
        finally:
            for server, _, servicer in gateways:
                await server.stop(0)
                await servicer.close()

    asyncio.run(main())


def test_an_owner_manages_its_own_bots_and_nothing_of_another_owners(redis_url: str) -> None:
    tokens, _ = _setup(redis_url)
    from arena.service.client import ArenaClient, ArenaError

    async def main() -> None:
        server, port, servicer = await start_gateway(redis_url, "127.0.0.1:0")
        try:
            me = ArenaClient(f"127.0.0.1:{port}", tokens["own_owner"])
            bot, token = await asyncio.to_thread(me.register_bot, "second", "someone-else", ["shanghaien"])
            assert bot.owner == "me" and token.startswith("arena_")  # the owner field is the caller's
            r = connect(redis_url)
            r.hset("arena:owner:me", "max_bots", 2)  # me has mine and second now: its limit
            r.close()
            with pytest.raises(ArenaError) as full:
                await asyncio.to_thread(me.register_bot, "third", "me", ["shanghaien"])
            assert full.value.code == "RESOURCE_EXHAUSTED"
            for call in (lambda: me.set_enabled("theirs", False), lambda: me.rotate_token("theirs"),
                         lambda: me.request_match("shanghaien", ["theirs", "ref"]),
                         lambda: me.request_match("shanghaien", ["mine", "theirs"]),
                         lambda: me.request_match("shanghaien", ["mine", "ref"], rated=True),
                         lambda: me.rotate_owner_token("them")):  # fmt: skip
                with pytest.raises(ArenaError) as denied:
                    await asyncio.to_thread(call)
                assert denied.value.code == "PERMISSION_DENIED"
            assert (await asyncio.to_thread(me.set_enabled, "second", False, "resting")).enabled is False
            assert (await asyncio.to_thread(me.set_enabled, "second", True)).enabled is True
            match_id, _ = await asyncio.to_thread(me.request_match, "shanghaien", ["mine", "second"])
            assert match_id
            me.close()
        finally:
            await server.stop(0)
            await servicer.close()

    asyncio.run(main())


def test_a_token_is_checked_on_every_call_whatever_came_before(redis_url: str) -> None:
    """One gateway, one method, callers in turn: an interceptor's handler is kept per method, so a check
    that lived in the handler's choice (not its behaviour) would let the first caller decide for all."""
    tokens, _ = _setup(redis_url)

    async def main() -> list[grpc.StatusCode]:
        server, port, servicer = await start_gateway(redis_url, "127.0.0.1:0", host_ladder)
        try:
            async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
                stub = ladder_pb2_grpc.LadderServiceStub(channel)  # type: ignore[no-untyped-call]
                request = ladder_pb2.GetLeaderboardRequest(game_id="shanghaien")
                out = []
                for caller in ("none", "wrong", "none", "admin", "wrong", "bot"):
                    md = bearer_metadata(tokens[caller]) if tokens[caller] else ()
                    out.append(await _status(stub.GetLeaderboard(request, metadata=md)))
                return out
        finally:
            await server.stop(0)
            await servicer.close()

    assert asyncio.run(main()) == [OK, UNAUTH, OK, OK, UNAUTH, OK]
