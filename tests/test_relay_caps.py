"""Play streams on the gateway that never send their Hello: capped per client address and per gateway,
and held only briefly without a bot's token. Before, each was held 30 s with no cap: 10,000 from one
client in 12 s took the gateway from 64 to 313 MB (its deployed limit is 512 MiB)."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import grpc

from arena.local.arena import LocalArena
from arena.service import relay
from arena.service.client import ArenaClient
from tests.test_service import register


async def _silent(channel: grpc.aio.Channel, token: str | None) -> tuple[str, float]:
    """A Play stream that never sends anything: its status code and how long it stayed open."""

    async def nothing() -> Any:
        await asyncio.sleep(3600)
        yield b""

    metadata = (("authorization", f"Bearer {token}"),) if token else ()
    start = time.monotonic()
    play = channel.stream_stream(relay.PLAY)(nothing(), metadata=metadata)
    try:
        async for _ in play:
            pass
    except grpc.aio.AioRpcError as e:
        return e.code().name, time.monotonic() - start
    return "OK", time.monotonic() - start


def test_streams_that_never_say_hello_are_capped_per_client_and_short_lived_without_a_token(
    redis_url: str, tmp_path: Path
) -> None:
    async def main() -> None:
        async with LocalArena(tmp_path, workers=0, redis_url=redis_url) as arena:
            admin = ArenaClient(arena.gateway, arena.admin_token)
            tokens = await register(admin, "quiet")
            async with grpc.aio.insecure_channel(arena.gateway) as channel:
                n = relay.MAX_WAITING_HELLO_PER_CLIENT + 36
                bots = [asyncio.create_task(_silent(channel, tokens["quiet"])) for _ in range(n)]
                await asyncio.sleep(3)  # past HELLO_CROWDED_S: those over the cap are refused by now
                refused = [t.result() for t in bots if t.done()]
                assert len(refused) >= 36 and all(code == "RESOURCE_EXHAUSTED" for code, _ in refused), refused
                assert sum(1 for t in bots if not t.done()) <= relay.MAX_WAITING_HELLO_PER_CLIENT
                for t in bots:
                    t.cancel()
                await asyncio.gather(*bots, return_exceptions=True)
                await asyncio.sleep(0.5)  # the cancelled streams leave the count
                anonymous = await asyncio.gather(*(_silent(channel, None) for _ in range(3)),
                                                 *(_silent(channel, "no-such-token") for _ in range(3)))  # fmt: skip
                for code, held in anonymous:
                    assert code == "UNAUTHENTICATED" and held < relay.HELLO_TIMEOUT_S / 2, anonymous
            admin.close()

    asyncio.run(main())
