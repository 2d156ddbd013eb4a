"""Limits an abuser cannot reset or dodge, against a real gateway and Redis: a rotated token keeps its
bot's and its owner's counts (before, one rotation doubled a bot's session opens and an owner's match
requests in a window); calls with tokens that are nobody's and anonymous FollowMatch streams are bounded
per client address (before, unlimited: 831 unknown-token calls a second at 4 Redis commands each, and
2,000 anonymous FollowMatch streams that used a whole core)."""

from __future__ import annotations

import asyncio
from typing import Any

import grpc
import pytest

from arena.redis_client import connect
from arena.service.owners import Owners
from arena.service.ratelimit import AddressGuard, RateLimiter, RateLimits
from referee.wire import arena_pb2, arena_pb2_grpc
from referee.wire.contract import bearer_metadata
from tests.helpers import early_in_window, gateway, setup_owner_world


@pytest.fixture
def r(redis_url: str) -> Any:
    client = connect(redis_url)
    yield client
    client.close()


def test_rotating_a_token_does_not_reset_the_owners_request_count(redis_url: str, r: Any) -> None:
    tokens = setup_owner_world(r)
    window = 4.0

    async def main() -> None:
        limits = RateLimits(session_opens=100, match_requests=2, window_s=window)
        async with gateway(redis_url, limiter=RateLimiter.from_limits(r, limits)) as address, \
                grpc.aio.insecure_channel(address) as channel:  # fmt: skip
            stub = arena_pb2_grpc.ArenaServiceStub(channel)  # type: ignore[no-untyped-call]
            request = arena_pb2.RequestMatchRequest(game_id="shanghaien", bot_names=["mine", "ref"])

            async def status(token: str) -> grpc.StatusCode:
                try:
                    await stub.RequestMatch(request, metadata=bearer_metadata(token))
                except grpc.aio.AioRpcError as e:
                    return e.code()
                return grpc.StatusCode.OK

            await asyncio.to_thread(early_in_window, r, window)
            assert [await status(tokens["me"]) for _ in range(2)] == [grpc.StatusCode.OK] * 2
            rotated = await asyncio.to_thread(Owners(r).rotate_token, "me")
            assert await status(rotated) == grpc.StatusCode.RESOURCE_EXHAUSTED  # the owner's, whatever token

    asyncio.run(main())


def test_unknown_tokens_and_anonymous_follows_are_bounded_per_client_address(redis_url: str, r: Any) -> None:
    setup_owner_world(r)

    async def main() -> None:
        async with gateway(redis_url) as address, grpc.aio.insecure_channel(address) as channel:
            stub = arena_pb2_grpc.ArenaServiceStub(channel)  # type: ignore[no-untyped-call]
            codes = []
            for i in range(AddressGuard().unknown_per_window + 5):
                try:
                    await stub.ListBots(arena_pb2.ListBotsRequest(), metadata=bearer_metadata(f"nobody-{i}"))
                except grpc.aio.AioRpcError as e:
                    codes.append(e.code())
            budget = AddressGuard().unknown_per_window
            assert codes[:budget] == [grpc.StatusCode.UNAUTHENTICATED] * budget
            assert codes[budget:] == [grpc.StatusCode.RESOURCE_EXHAUSTED] * 5
            # a caller without a token may still read public data
            await stub.ListBots(arena_pb2.ListBotsRequest())

            request = arena_pb2.RequestMatchRequest(game_id="shanghaien", bot_names=["mine", "ref"])
            admin = bearer_metadata(r.get("test-admin-token").decode()) if r.get("test-admin-token") else None
            assert admin is None or admin  # (the match below is requested through the store instead)
            from arena.service.matches import MatchStore

            match_id, _ = await asyncio.to_thread(MatchStore(r).request, request.game_id, list(request.bot_names))
            n = AddressGuard().anonymous_follows
            follows = [stub.FollowMatch(arena_pb2.FollowMatchRequest(match_id=match_id)) for _ in range(n + 1)]
            await asyncio.sleep(1.0)
            over = follows[-1]
            try:
                async for _ in over:
                    pass
                code = grpc.StatusCode.OK
            except grpc.aio.AioRpcError as e:
                code = e.code()
            assert code == grpc.StatusCode.RESOURCE_EXHAUSTED
            for f in follows[:-1]:
                assert not f.done()  # the first n go on (the match is queued: they wait for its lines)
                f.cancel()

    asyncio.run(main())
