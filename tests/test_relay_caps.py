"""The gateway's relay at its edges. Play streams that never send their Hello: capped per client address
and per gateway, and held only briefly without a bot's token. Before, each was held 30 s with no cap: 10,000 from one
client in 12 s took the gateway from 64 to 313 MB (its deployed limit is 512 MiB).
A stream naming a finished match: told its recorded result."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import grpc

from arena.local.arena import LocalArena
from arena.service import relay
from arena.service.client import ArenaClient
from tests.helpers import QUICK_JOIN, SlowRandom, finished, register, run_bots


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


def test_a_stream_naming_a_finished_match_is_told_its_recorded_result(redis_url: str, tmp_path: Path) -> None:
    """A bot whose worker died between recording the result and telling it, or that comes back after the
    end, gets MatchStarted and MatchEnded from the recorded result and the stream ends OK. Before, it was
    refused FAILED_PRECONDITION and never learnt how its match ended (and a draining bot waited for it)."""
    from arena.local.arena import LocalArena as Arena
    from referee.wire import bot_pb2

    async def main() -> None:
        async with Arena(tmp_path, workers=1, redis_url=redis_url) as arena:
            admin = ArenaClient(arena.gateway, arena.admin_token)
            tokens = await register(admin, "alpha", "beta")
            runners = run_bots({"alpha": SlowRandom(0, 1), "beta": SlowRandom(0, 2)}, tokens, arena.gateway)
            match_id, _ = await asyncio.to_thread(
                admin.request_match, "shanghaien", ["alpha", "beta"], time_control=QUICK_JOIN
            )
            record = (await finished(admin, [match_id], 120))[match_id]
            for runner in runners:
                runner.stop()
            hello = bot_pb2.PlayRequest(hello=bot_pb2.Hello(bot_name="alpha", bot_version="1", match_ids=[match_id]))

            async def requests() -> Any:
                yield hello

            async with grpc.aio.insecure_channel(arena.gateway) as channel:
                stub = channel.stream_stream(
                    relay.PLAY, request_serializer=bot_pb2.PlayRequest.SerializeToString,
                    response_deserializer=bot_pb2.PlayResponse.FromString,
                )  # fmt: skip
                call = stub(requests(), metadata=(("authorization", f"Bearer {tokens['alpha']}"),))
                got = [m async for m in call]
                assert await call.code() == grpc.StatusCode.OK
            assert [m.WhichOneof("message") for m in got] == ["welcome", "match_started", "match_ended"]
            ended = got[2].match_ended.result
            assert ended.match_id == match_id
            assert [s.score for s in ended.seats] == [s.score for s in record.result.seats]
            assert got[1].match_started.seat == 0 and list(got[1].match_started.bot_names) == ["alpha", "beta"]
            admin.close()

    asyncio.run(main())
