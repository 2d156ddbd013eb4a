"""Referee benchmarks (issue: targets quoted as ratios, never asserted in tests).

1. Round trip of one move through the referee (action received, validated, applied, chance plies
   sampled, next turn built and sent) against a bare gRPC bidirectional ping-pong on the same
   message types, measured in the same run with the same process layout (server in one process,
   client in another). Target: referee <= 1.5x the bare round trip.
2. Concurrent matches: N Shanghaien matches of random bots at a 1 s move limit (no bank) in one
   referee process; reports timeouts (strikes) and turn latency. Target: 1,000 with no timeout.

    python benchmarks/referee_bench.py [--moves 3000] [--matches 1000]
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import os
import random
import statistics
import time
from collections.abc import AsyncIterator
from typing import Any

import grpc

from referee.games import TimeControl
from referee.logs import configure
from referee.server import Referee, start_server
from referee.spec import MatchSpec, SeatSpec
from referee.wire import bot_pb2, bot_pb2_grpc
from referee.wire.values import token_sha256

TOKEN = "bench-token"


class EchoServicer(bot_pb2_grpc.BotServiceServicer):
    """The floor: a bidi stream that answers each message at once, with nothing else to do."""

    async def Play(  # noqa: N802
        self, request_iterator: AsyncIterator[bot_pb2.PlayRequest], context: grpc.aio.ServicerContext
    ) -> AsyncIterator[bot_pb2.PlayResponse]:
        async for request in request_iterator:
            yield bot_pb2.PlayResponse(pong=bot_pb2.Pong(nonce=request.ping.nonce))


def serve_echo(port_queue: Any) -> None:
    async def main() -> None:
        server = grpc.aio.server()
        bot_pb2_grpc.add_BotServiceServicer_to_server(EchoServicer(), server)  # type: ignore[no-untyped-call]
        port = server.add_insecure_port("127.0.0.1:0")
        await server.start()
        port_queue.put(port)
        await server.wait_for_termination()

    asyncio.run(main())


def serve_referee(
    port_queue: Any, matches: int, control: TimeControl, tokens: tuple[str, str], one_at_a_time: bool = False
) -> None:
    """A referee process running ``matches`` Shanghaien matches between the two tokens: all at once,
    or one after the other (so a client sees one decision at a time)."""

    configure(json=True, level="ERROR")

    async def main() -> None:
        referee = Referee()
        server, port = await start_server(referee)
        seats = (SeatSpec(0, "a", token_sha256(tokens[0])), SeatSpec(1, "b", token_sha256(tokens[1])))

        def start(i: int) -> None:
            referee.start_match(MatchSpec(f"bench-{i}", "shanghaien", seats, seed=f"bench:{i}", time_control=control))

        if one_at_a_time:
            referee.on_result.append(lambda match, _r: start(int(match.match_id.split("-")[1]) + 1))
            start(0)
        else:
            for i in range(matches):
                start(i)
        port_queue.put(port)
        if one_at_a_time:
            await asyncio.Event().wait()
        results = await asyncio.gather(*referee.tasks.values())
        strikes = sum(s.strikes for r in results for s in r.seats)
        completed = sum(1 for r in results if r.end_reason.value == "completed")
        port_queue.put((completed, strikes, sum(r.plies for r in results)))
        await server.stop(1)

    asyncio.run(main())


async def ping_pong(target: str, n: int) -> list[float]:
    out: asyncio.Queue[bot_pb2.PlayRequest] = asyncio.Queue()

    async def requests() -> AsyncIterator[bot_pb2.PlayRequest]:
        while True:
            yield await out.get()

    times: list[float] = []
    async with grpc.aio.insecure_channel(target) as channel:
        call = bot_pb2_grpc.BotServiceStub(channel).Play(requests())  # type: ignore[no-untyped-call]
        for i in range(n):
            t = time.perf_counter()
            await out.put(bot_pb2.PlayRequest(ping=bot_pb2.Ping(nonce=i)))
            await call.read()
            times.append(time.perf_counter() - t)
        call.cancel()
    return times


async def raw_bots(
    target: str, tokens: tuple[str, ...], want_turns: int | None, seed: int, omit_view: bool = True
) -> tuple[list[float], int]:
    """Minimal bots (no SDK replay): answer each turn at once with a random legal action.

    Returns the round trips (action sent -> next turn received on that stream) and turns answered.
    """
    rng = random.Random(seed)
    times: list[float] = []
    answered = 0

    async def one(token: str) -> None:
        nonlocal answered
        out: asyncio.Queue[bot_pb2.PlayRequest | None] = asyncio.Queue()
        await out.put(
            bot_pb2.PlayRequest(hello=bot_pb2.Hello(bot_name="raw", bot_version="1", omit_view_json=omit_view))
        )

        async def requests() -> AsyncIterator[bot_pb2.PlayRequest]:
            while (item := await out.get()) is not None:
                yield item

        async with grpc.aio.insecure_channel(target) as channel:
            call = bot_pb2_grpc.BotServiceStub(channel).Play(  # type: ignore[no-untyped-call]
                requests(), metadata=(("authorization", f"Bearer {token}"),)
            )
            sent_at: float | None = None
            try:
                async for message in call:
                    if message.WhichOneof("message") != "turn":
                        continue
                    if sent_at is not None:
                        times.append(time.perf_counter() - sent_at)
                    turn = message.turn
                    choice = rng.choice(turn.legal_actions)
                    action = bot_pb2.SubmitAction(
                        match_id=turn.match_id, seat=turn.seat, turn_id=turn.turn_id, action=choice
                    )
                    sent_at = time.perf_counter()
                    await out.put(bot_pb2.PlayRequest(action=action))
                    answered += 1
                    if want_turns is not None and answered >= want_turns:
                        await out.put(None)
                        call.cancel()
                        return
            except grpc.aio.AioRpcError:
                return  # the referee shut down after its last match

    await asyncio.gather(*(one(t) for t in tokens))
    return times, answered


def summary(times: list[float]) -> tuple[float, float]:
    ordered = sorted(times)
    return statistics.median(ordered) * 1e6, ordered[int(len(ordered) * 0.99)] * 1e6


def round_trip(moves: int) -> None:
    ctx = multiprocessing.get_context("spawn")
    q = ctx.Queue()
    echo = ctx.Process(target=serve_echo, args=(q,), daemon=True)
    echo.start()
    port = q.get()
    bare = asyncio.run(ping_pong(f"127.0.0.1:{port}", moves))
    echo.kill()

    control = TimeControl(first_move_ms=60_000, move_ms=60_000, bank_ms=0, join_timeout_ms=60_000)
    q2 = ctx.Queue()
    # one client holds both seats of one long chain of matches: each answer is followed by the next turn
    ref = ctx.Process(target=serve_referee, args=(q2, 0, control, (TOKEN, TOKEN), True), daemon=True)
    ref.start()
    port = q2.get()
    times, _ = asyncio.run(raw_bots(f"127.0.0.1:{port}", (TOKEN,), moves, 1))
    ref.kill()
    b_med, b_p99 = summary(bare[100:])
    r_med, r_p99 = summary(times[100:])
    print("round trip of one move (client and server in separate processes)")
    print(f"  bare gRPC bidi ping-pong   median {b_med:7.0f} us   p99 {b_p99:7.0f} us   ({len(bare)} round trips)")
    print(f"  through the referee        median {r_med:7.0f} us   p99 {r_p99:7.0f} us   ({len(times)} moves)")
    print(f"  ratio (median)             {r_med / b_med:.2f}x   target <= 1.5x")


def concurrent(matches: int) -> None:
    ctx = multiprocessing.get_context("spawn")
    q = ctx.Queue()
    control = TimeControl(first_move_ms=1000, move_ms=1000, bank_ms=0, grace_ms=0, join_timeout_ms=120_000)
    tokens = ("bench-a", "bench-b")
    ref = ctx.Process(target=serve_referee, args=(q, matches, control, tokens), daemon=True)
    t0 = time.perf_counter()
    ref.start()
    port = q.get()
    times, answered = asyncio.run(raw_bots(f"127.0.0.1:{port}", tokens, None, 2))
    completed, strikes, plies = q.get()
    elapsed = time.perf_counter() - t0
    ref.join(10)
    med, p99 = summary(times) if times else (0.0, 0.0)
    print(f"{matches} concurrent Shanghaien matches, random bots, 1 s move limit, no bank, one referee process")
    print(f"  completed {completed}/{matches}, timeouts (strikes) {strikes}, {answered} moves, {plies} plies")
    print(f"  {elapsed:.1f} s wall, {answered / elapsed:.0f} moves/s, turn round trip median {med / 1000:.1f} ms"
          f" p99 {p99 / 1000:.1f} ms")  # fmt: skip
    ok = matches >= 1000 and completed == matches and strikes == 0
    print(f"  target: 1,000 matches with no timeout -> {'met' if ok else 'not shown by this run'}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--moves", type=int, default=3000)
    parser.add_argument("--matches", type=int, default=1000)
    parser.add_argument("--skip-round-trip", action="store_true")
    parser.add_argument("--skip-concurrent", action="store_true")
    args = parser.parse_args()
    print(f"grpcio {grpc.__version__}, cpus {os.cpu_count()}")
    if not args.skip_round_trip:
        round_trip(args.moves)
    if not args.skip_concurrent:
        concurrent(args.matches)


if __name__ == "__main__":
    main()
