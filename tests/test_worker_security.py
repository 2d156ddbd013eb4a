"""A referee worker against hostile callers, with real processes (redis-server, gateway, ``arena worker``):

- a bot token rotated away, or a disabled bot's, is refused when it opens a Play stream, and a stream
  already open with it ends within seconds (UNAUTHENTICATED); the bot's new token gets its seat back;
- RefereeService on a worker is the control plane: without the admin token a caller is UNAUTHENTICATED,
  a bot PERMISSION_DENIED, so nobody can squat a match id or read a match's private refusals;
- a worker with free capacity takes over a match whose worker died before it claims new ones.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import grpc
import pytest

from arena.local.arena import LocalArena
from arena.redis_client import connect
from arena.service.client import ArenaClient
from arena.service.queue import MatchQueue, Priority, QueuedMatch
from arena.service.worker import Worker
from referee import games
from referee.wire import bot_pb2, bot_pb2_grpc, match_pb2, referee_pb2, referee_pb2_grpc
from tests.helpers import FAST, SlowRandom, call, register, run_bots, wait_for

LONG_JOIN = {"join_timeout_ms": 60_000, "disconnect_grace_ms": 60_000}


async def play_stream(address: str, token: str, wait_s: float = 5.0) -> tuple[grpc.StatusCode | None, list[str]]:
    """Open Play with ``token``, say Hello, and collect message kinds until the stream ends or ``wait_s``
    passes. Returns the status it ended with (None: still open) and the kinds."""
    kinds: list[str] = []
    requests: asyncio.Queue[bot_pb2.PlayRequest | None] = asyncio.Queue()
    await requests.put(bot_pb2.PlayRequest(hello=bot_pb2.Hello(bot_name="x", bot_version="1")))

    async def feed() -> Any:
        while (item := await requests.get()) is not None:
            yield item

    async with grpc.aio.insecure_channel(address) as channel:
        call_ = bot_pb2_grpc.BotServiceStub(channel).Play(  # type: ignore[no-untyped-call]
            feed(), metadata=(("authorization", f"Bearer {token}"),)
        )

        async def read() -> None:
            async for message in call_:
                kinds.append(message.WhichOneof("message"))

        try:
            await asyncio.wait_for(read(), wait_s)
        except grpc.aio.AioRpcError as e:
            return e.code(), kinds
        except TimeoutError:
            return None, kinds
        finally:
            await requests.put(None)
    return grpc.StatusCode.OK, kinds


def test_rotated_and_disabled_tokens_stop_playing_on_the_worker_at_once(redis_url: str, tmp_path: Path) -> None:
    async def main() -> None:
        async with LocalArena(tmp_path, workers=1, redis_url=redis_url, worker_args=FAST) as arena:
            admin = ArenaClient(arena.gateway, arena.admin_token)
            tokens = await register(admin, "alpha", "beta")
            match_id, _ = await call(admin.request_match, "shanghaien", ["alpha", "beta"], time_control=LONG_JOIN)

            async def assigned() -> bool:
                return bool((await call(admin.describe, match_id)).referee_address)

            await wait_for(assigned, 20, "the match to start on the worker")
            address = (await call(admin.describe, match_id)).referee_address
            # both connect and the match starts; then alpha's token is rotated away
            beta = asyncio.create_task(play_stream(address, tokens["beta"], wait_s=30.0))
            (old_status, old_kinds), new_token = await asyncio.gather(
                play_stream(address, tokens["alpha"], wait_s=8.0), _rotate_after(admin, "alpha", 1.0)
            )
            assert "match_started" in old_kinds  # it was playing ...
            assert old_status == grpc.StatusCode.UNAUTHENTICATED  # ... and the open stream ended within seconds
            refused, _ = await play_stream(address, tokens["alpha"], wait_s=3.0)
            assert refused == grpc.StatusCode.UNAUTHENTICATED  # the old token opens nothing
            back, back_kinds = await play_stream(address, new_token, wait_s=3.0)
            assert back is None and "match_started" in back_kinds  # the new token gets the seat back
            # a disabled bot's token is refused too, open stream or new one
            await call(admin.set_enabled, "beta", False, "cheating")
            beta_status, beta_kinds = await beta
            assert "match_started" in beta_kinds and beta_status == grpc.StatusCode.UNAUTHENTICATED
            disabled, _ = await play_stream(address, tokens["beta"], wait_s=3.0)
            assert disabled == grpc.StatusCode.UNAUTHENTICATED

    asyncio.run(main())


async def _rotate_after(admin: ArenaClient, name: str, delay: float) -> str:
    await asyncio.sleep(delay)
    token: str = await call(admin.rotate_token, name)
    return token


def test_referee_service_on_a_worker_needs_the_admin_token(redis_url: str, tmp_path: Path) -> None:
    """Match-id squatting and private refusals through the worker: refused before anything happens."""

    async def main() -> None:
        async with LocalArena(tmp_path, workers=1, redis_url=redis_url, worker_args=FAST) as arena:
            admin = ArenaClient(arena.gateway, arena.admin_token)
            tokens = await register(admin, "alpha", "beta")
            run_bots({"alpha": SlowRandom(0.05, 1), "beta": SlowRandom(0.05, 2)}, tokens, arena.gateway)
            match_id, _ = await call(admin.request_match, "shanghaien", ["alpha", "beta"])

            async def assigned() -> bool:
                return bool((await call(admin.describe, match_id)).referee_address)

            await wait_for(assigned, 20, "the match to start on the worker")
            address = (await call(admin.describe, match_id)).referee_address
            squat = referee_pb2.StartMatchRequest(spec=match_pb2.MatchSpec(
                match_id="squatted", game_id="shanghaien", seed="s",
                seats=[match_pb2.SeatSpec(seat=i, bot_name="x", token_sha256="0" * 64) for i in range(2)],
                time_control=match_pb2.TimeControl(join_timeout_ms=3_000_000),
            ))  # fmt: skip
            async with grpc.aio.insecure_channel(address) as channel:
                stub = referee_pb2_grpc.RefereeServiceStub(channel)  # type: ignore[no-untyped-call]
                for metadata, code in [
                    ((), grpc.StatusCode.UNAUTHENTICATED),
                    ((("authorization", "Bearer nonsense"),), grpc.StatusCode.UNAUTHENTICATED),
                    ((("authorization", f"Bearer {arena.admin_token}"),), grpc.StatusCode.UNAUTHENTICATED),
                    ((("authorization", f"Bearer {tokens['alpha']}"),), grpc.StatusCode.PERMISSION_DENIED),
                ]:
                    with pytest.raises(grpc.aio.AioRpcError) as info:
                        await stub.StartMatch(squat, metadata=metadata)
                    assert info.value.code() == code
                    with pytest.raises(grpc.aio.AioRpcError) as info:
                        await stub.GetMatch(referee_pb2.GetMatchRequest(match_id=match_id), metadata=metadata)
                    assert info.value.code() == code
                    with pytest.raises(grpc.aio.AioRpcError) as info:
                        async for _ in stub.WatchMatch(referee_pb2.WatchMatchRequest(match_id=match_id),
                                                       metadata=metadata):  # fmt: skip
                            pass
                    assert info.value.code() == code
            # the arena's admin token is the gateway's; a worker started without ARENA_ADMIN_TOKEN has a
            # random one of its own (nobody can call it), so even the arena admin is refused above

    asyncio.run(main())


def test_a_worker_takes_over_an_orphaned_match_before_claiming_a_new_one(redis_url: str) -> None:
    """With a backlog of new matches and one whose worker died, the free slot goes to the orphan."""

    async def main() -> None:
        client = connect(redis_url)
        queue = MatchQueue(client, lease_ms=300)
        control = games.get("shanghaien").time_control.with_overrides(join_timeout_ms=30_000)

        def queued(match_id: str) -> QueuedMatch:
            return QueuedMatch(match_id, "shanghaien", ("ghost-a", "ghost-b"), control, "0" * 64)

        queue.enqueue(queued("orphan"), Priority.REQUESTED, seed="s")
        assert queue.claim("dead-worker") is not None  # its worker dies: the lease runs out
        for i in range(5):
            queue.enqueue(queued(f"new-{i}"), Priority.REQUESTED, seed="s")
        time.sleep(0.4)
        worker = Worker(redis_url, capacity=1, lease_ms=300, block_ms=200)
        await worker.start()
        stop = asyncio.Event()
        loop = asyncio.create_task(worker.run(stop))
        try:
            deadline = time.monotonic() + 10
            while not worker.running and time.monotonic() < deadline:
                await asyncio.sleep(0.02)
            assert list(worker.running) == ["orphan"]
        finally:
            stop.set()
            worker.drain_s = 0.1
            await loop
            client.close()

    asyncio.run(main())


def test_the_join_timeout_a_caller_may_ask_for_is_bounded() -> None:
    control = games.get("shanghaien").time_control
    with pytest.raises(ValueError, match="join_timeout_ms at most"):
        control.with_overrides(join_timeout_ms=3_000_000)
    assert control.with_overrides(join_timeout_ms=300_000).join_timeout_ms == 300_000
