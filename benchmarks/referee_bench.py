"""Referee benchmarks (issue 16: targets quoted as ratios, never asserted in tests).

1. Round trip of one move through the referee (action received, validated, applied, chance plies
   sampled, next turn built and sent) against a bare gRPC bidirectional ping-pong on the same
   message types, with the same process layout (server in one process, client in another), both
   measured by one client in alternating blocks of 100 round trips so that load from other work on
   the machine falls on both alike. Targets: median <= 1.3x and p99 <= 2x the bare round trip. One
   client plays a chain of matches: a move's round trip is its action to the referee's answer, the
   next turn of the match or, for the ~1 move in 90 that ends it, the MatchEnded (shown apart too).
   The next match's start (MatchEnded -> its first turn) is the referee starting a match, not a
   move, and is printed as a figure of its own. The CPU seconds each server process spent per round
   trip are printed too (less noisy than latency on a shared machine).
2. Concurrent matches: N Shanghaien matches of random bots at a 1 s move limit (no bank) in one
   referee process (5 s for a bot's first move, the game's own allowance), the bots spread over
   ``--bot-procs`` processes (each holds the two seats of every
   ``--bot-procs``-th match), so that the bots are not the limit; reports completed matches, timeouts
   (strikes), turn latency and each process's CPU time (user + sys), which shows what the limit is.
   The bots ask for batched messages (Hello.accept_batches) and answer the turns of one message in one
   ActionBatch, as the SDK does; ``--no-batches``: one gRPC message per turn and per action.
   Target: 3,000 matches with no timeout.

    python benchmarks/referee_bench.py [--moves 3000] [--matches 1000] [--bot-procs 4] [--streams 1]
                                       [--no-batches] [--skip-round-trip] [--skip-concurrent] [--compare TREE]
                                       [--uvloop]

gRPC runs with the arena's setting (referee/grpc_env.py) in every process here, the floor's included;
``GRPC_EXPERIMENTS= python benchmarks/referee_bench.py ...`` measures all of them with gRPC's default.

``--compare TREE`` times a second referee, that of the source tree TREE (say a checkout of main, with
this file copied into its benchmarks/), in the same turns: before/after figures side by side in one run.
The two referees take turns at running right after the floor (that place measured up to ~7 us faster).
"""

from __future__ import annotations

import referee.grpc_env  # noqa: F401  # isort: skip  (first, before grpc: its process options)
import argparse
import asyncio
import multiprocessing
import os
import random
import statistics
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc

from referee import games
from referee.games import TimeControl
from referee.host import Referee
from referee.logs import configure
from referee.server import start_server
from referee.spec import MatchSpec, SeatSpec
from referee.wire import bot_pb2, bot_pb2_grpc
from referee.wire.contract import MAX_BATCH
from referee.wire.values import token_sha256

TOKEN = "bench-token"
UVLOOP_ENV = "REFEREE_BENCH_UVLOOP"


def serve_forever(coro: Any) -> None:
    """Run a server process's loop: asyncio's, or with ``--uvloop`` (inherited by the processes this
    starts, a compared tree's too) uvloop's, the loop an arena worker runs its referee on."""
    if os.environ.get(UVLOOP_ENV) == "1":
        import uvloop

        uvloop.run(coro)
    else:
        asyncio.run(coro)


def cpu_seconds(pid: int | None = None) -> float:
    """User + system CPU seconds of process ``pid`` (Linux ``/proc``), or of this process."""
    if pid is None:
        t = os.times()
        return t.user + t.system
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


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

    serve_forever(main())


@dataclass
class RefereeFigures:
    completed: int
    strikes: int
    plies: int
    cpu_s: float
    lag_ms: list[float]  # how late a 100 ms timer of the referee's event loop fired, each time


def serve_referee(
    port_queue: Any,
    matches: int,
    control: TimeControl,
    token_pairs: list[tuple[str, str]],
    one_at_a_time: bool = False,
) -> None:
    """A referee process running ``matches`` Shanghaien matches, match i between the tokens of
    ``token_pairs[i % len(token_pairs)]``: all at once, or one after the other (so a client sees one
    decision at a time). Puts its port, then (all at once) a ``RefereeFigures``."""

    configure(json=True, level="ERROR")

    async def main() -> None:
        referee = Referee()
        server, port = await start_server(referee)
        seats = [(SeatSpec(0, "a", token_sha256(a)), SeatSpec(1, "b", token_sha256(b))) for a, b in token_pairs]

        def start(i: int) -> None:
            spec = MatchSpec(f"bench-{i}", "shanghaien", seats[i % len(seats)], seed=f"bench:{i}", time_control=control)
            referee.start_match(spec)

        if one_at_a_time:
            referee.on_result.append(lambda match, _r: start(int(match.match_id.split("-")[1]) + 1))
            start(0)
        else:
            for i in range(matches):
                start(i)
        lag: list[float] = []

        async def watch_lag() -> None:
            loop = asyncio.get_running_loop()
            while True:
                t = loop.time()
                await asyncio.sleep(0.1)
                lag.append((loop.time() - t - 0.1) * 1000)

        watcher = asyncio.get_running_loop().create_task(watch_lag())
        port_queue.put(port)
        if one_at_a_time:
            await asyncio.Event().wait()
        results = await asyncio.gather(*referee.tasks.values())
        watcher.cancel()
        strikes = sum(s.strikes for r in results for s in r.seats)
        completed = sum(1 for r in results if r.end_reason.value == "completed")
        port_queue.put(RefereeFigures(completed, strikes, sum(r.plies for r in results), cpu_seconds(), lag))
        await referee.shutdown()  # ends the bots' streams (UNAVAILABLE) before the server goes
        await server.stop(1)

    serve_forever(main())


class PingPong:
    """The floor: a bare bidi stream to the echo server, timed a block of round trips at a time."""

    def __init__(self, target: str) -> None:
        self.channel = grpc.aio.insecure_channel(target)
        self.out: asyncio.Queue[bot_pb2.PlayRequest] = asyncio.Queue()
        self.call: Any = None
        self.times: list[float] = []

    async def requests(self) -> AsyncIterator[bot_pb2.PlayRequest]:
        while True:
            yield await self.out.get()

    async def run(self, n: int) -> None:
        if self.call is None:
            self.call = bot_pb2_grpc.BotServiceStub(self.channel).Play(self.requests())  # type: ignore[no-untyped-call]
        for i in range(n):
            request = bot_pb2.PlayRequest(ping=bot_pb2.Ping(nonce=i))
            t = time.perf_counter()  # from the hand-off, as the referee's bots time their actions
            self.out.put_nowait(request)
            await self.call.read()
            self.times.append(time.perf_counter() - t)

    async def close(self) -> None:
        if self.call is not None:
            self.call.cancel()
        await self.channel.close()


@dataclass
class BotFigures:
    within: list[float] = field(default_factory=list)  # action sent -> next turn of the same match
    ending: list[float] = field(default_factory=list)  # action that ended a match -> its MatchEnded
    starting: list[float] = field(default_factory=list)  # MatchEnded -> the next match's first turn (a chain)
    answered: int = 0
    cpu_s: float = 0.0


async def raw_bots(
    target: str,
    tokens: tuple[str, ...],
    want_turns: int | None,
    seed: int,
    omit_view: bool = True,
    interlude: Callable[[], Awaitable[None]] | None = None,
    every: int = 100,
    batches: bool = True,
) -> BotFigures:
    """Minimal bots (no SDK replay): answer each turn at once with a random legal action.

    Times each action sent to the referee's answer to it received by any of ``tokens``' streams (all
    seats of a match are here): the next turn of its match (``within``), or the match's MatchEnded for
    the action that ends it (``ending``). A chain of matches played one at a time (``want_turns``) also
    times a match's MatchEnded to the next match's first turn (``starting``): that is the referee
    starting a match, not a move's round trip.
    """
    rng = random.Random(seed)
    figures = BotFigures()
    sent_at: dict[str, float] = {}
    ended: list[float] = []  # when the last match's MatchEnded arrived (a chain, one match at a time)

    async def one(token: str) -> None:
        out: asyncio.Queue[bot_pb2.PlayRequest | None] = asyncio.Queue()
        await out.put(
            bot_pb2.PlayRequest(
                hello=bot_pb2.Hello(bot_name="raw", bot_version="1", omit_view_json=omit_view, accept_batches=batches)
            )
        )

        async def requests() -> AsyncIterator[bot_pb2.PlayRequest]:
            while (item := await out.get()) is not None:
                if not batches or out.empty() or not item.HasField("action"):
                    yield item
                    continue
                batch = bot_pb2.PlayRequest()  # answers waiting together leave in one message, as the SDK does
                batch.actions.actions.append(item.action)
                while not out.empty() and len(batch.actions.actions) < MAX_BATCH:
                    nxt = out.get_nowait()
                    if nxt is None:
                        yield batch
                        return
                    batch.actions.actions.append(nxt.action)
                yield batch

        async def answer(message: bot_pb2.PlayResponse, now: float) -> bool:
            """Answers one message that arrived at ``now``; True when this bot has answered all it wants."""
            kind = message.WhichOneof("message")
            if kind == "match_ended":
                t = sent_at.pop(message.match_ended.result.match_id, None)
                if t is not None:  # the first of the match's MatchEnded messages (one per seat)
                    figures.ending.append(now - t)
                    if want_turns is not None:
                        ended[:] = [now]
                return False
            if kind != "turn":
                return False
            turn = message.turn
            t = sent_at.pop(turn.match_id, None)
            if t is not None:
                figures.within.append(now - t)
            elif ended:
                figures.starting.append(now - ended.pop())
            if interlude is not None and figures.answered % every == 0:
                await interlude()  # the other timed parties' turn
            choice = rng.choice(turn.legal_actions)
            action = bot_pb2.SubmitAction(match_id=turn.match_id, seat=turn.seat, turn_id=turn.turn_id, action=choice)
            request = bot_pb2.PlayRequest(action=action)
            sent_at[turn.match_id] = time.perf_counter()  # from the hand-off, as the floor times its pings
            out.put_nowait(request)
            figures.answered += 1
            return want_turns is not None and figures.answered >= want_turns

        async with grpc.aio.insecure_channel(target) as channel:
            call = bot_pb2_grpc.BotServiceStub(channel).Play(  # type: ignore[no-untyped-call]
                requests(), metadata=(("authorization", f"Bearer {token}"),)
            )
            read = call.read  # the floor's client API (PingPong): ``async for`` adds an async generator's step
            try:
                while (received := await read()) is not grpc.aio.EOF:
                    now = time.perf_counter()
                    for message in received.batch.messages if received.HasField("batch") else (received,):
                        if await answer(message, now):
                            out.put_nowait(None)
                            call.cancel()
                            return
            except grpc.aio.AioRpcError:
                return  # the referee shut down after its last match

    await asyncio.gather(*(one(t) for t in tokens))
    figures.cpu_s = cpu_seconds()
    return figures


def bot_process(target: str, tokens: tuple[str, ...], seed: int, out: Any, batches: bool = True) -> None:
    out.put(asyncio.run(raw_bots(target, tokens, None, seed, batches=batches)))


def summary(times: list[float]) -> tuple[float, float]:
    """Median and p99, in microseconds."""
    ordered = sorted(times)
    return statistics.median(ordered) * 1e6, ordered[int(len(ordered) * 0.99)] * 1e6


class RoundRobin:
    """Lets the timed parties (the floor, then each referee) run one block at a time, in turn. The
    referees change places after the floor each round: the party right after the floor measured 0-7 us
    faster a round trip than the same code one place later, which flattered this tree in ``--compare``."""

    def __init__(self, n: int) -> None:
        self.turns = [asyncio.Event() for _ in range(n)]
        self.finished: set[int] = set()
        self.round = 0
        self.turns[0].set()

    async def wait(self, i: int) -> None:
        await self.turns[i].wait()

    def next(self, i: int) -> None:
        """Party ``i`` has done a block: the next party still running goes."""
        self.turns[i].clear()
        n = len(self.turns)
        if i == 0:
            self.round += 1
        rest = list(range(1, n))
        shift = self.round % len(rest) if rest else 0
        order = [0, *rest[shift:], *rest[:shift]]
        at = order.index(i)
        for k in range(1, n + 1):
            j = order[(at + k) % n]
            if j not in self.finished:
                self.turns[j].set()
                return

    def finish(self, i: int) -> None:
        self.finished.add(i)
        if self.turns[i].is_set():
            self.next(i)


@dataclass
class ChainReferee:
    """A referee process serving a chain of matches (``serve_referee``'s one-at-a-time mode)."""

    label: str
    pid: int
    port: int
    stop: Callable[[], None]


def chain_referee(tree: str | None) -> ChainReferee:
    """The referee of this tree, or of the source tree ``tree``: another Python process importing that
    tree's ``referee``, served by that tree's copy of this file. Both are started the same way: this
    tree's referee as a ``multiprocessing`` child and the other as a script was one more difference
    between the two sides of a ``--compare``."""
    root = tree or str(Path(__file__).resolve().parents[1])
    env = {**os.environ, "PYTHONPATH": root}
    script = str(Path(root) / "benchmarks" / "referee_bench.py")
    child = subprocess.Popen([sys.executable, script, "--serve-chain"], env=env, cwd=root, stdout=subprocess.PIPE,
                             text=True)  # fmt: skip
    assert child.stdout is not None
    port = int(child.stdout.readline())
    return ChainReferee(tree or "this tree", child.pid, port, child.kill)


class _PrintPort:
    def put(self, item: Any) -> None:
        if isinstance(item, int):
            print(item, flush=True)


def serve_chain() -> None:
    """``--serve-chain``: serve a chain of matches (one client holds both seats: each answer is followed
    by the next turn) and print the port."""
    control = TimeControl(first_move_ms=60_000, move_ms=60_000, bank_ms=0, join_timeout_ms=60_000)
    serve_referee(_PrintPort(), 0, control, [(TOKEN, TOKEN)], True)


def round_trip(moves: int, compare: str | None = None, block: int = 100) -> None:
    """The floor and the referee (and with ``compare``, the referee of that source tree too) measured
    in turns, a block of ``block`` round trips each, from one client process, all servers up all
    along: load from other work on the machine falls on all of them alike."""
    ctx = multiprocessing.get_context("spawn")
    q = ctx.Queue()
    echo = ctx.Process(target=serve_echo, args=(q,), daemon=True)
    echo.start()
    echo_port = q.get()
    referees = [chain_referee(None)] + ([chain_referee(compare)] if compare else [])
    rr = RoundRobin(1 + len(referees))

    async def measure() -> tuple[PingPong, float, list[tuple[BotFigures, float]]]:
        pinger = PingPong(f"127.0.0.1:{echo_port}")
        c0 = cpu_seconds(echo.pid)

        async def floor() -> None:
            for _ in range(-(-moves // block)):
                await rr.wait(0)
                await pinger.run(block)
                rr.next(0)
            rr.finish(0)

        async def referee(i: int, r: ChainReferee) -> tuple[BotFigures, float]:
            answered = [0]

            async def interlude() -> None:
                if answered[0]:
                    rr.next(i)
                answered[0] += 1
                await rr.wait(i)

            r0 = cpu_seconds(r.pid)
            bots = await raw_bots(f"127.0.0.1:{r.port}", (TOKEN,), moves, 1, interlude=interlude, every=block)
            cpu = cpu_seconds(r.pid) - r0  # includes its idle waits while the others run (~0)
            rr.finish(i)
            return bots, cpu

        results = await asyncio.gather(floor(), *(referee(i + 1, r) for i, r in enumerate(referees)))
        bare_cpu = cpu_seconds(echo.pid) - c0
        await pinger.close()
        return pinger, bare_cpu, list(results[1:])  # type: ignore[arg-type]

    try:
        pinger, bare_cpu, figures = asyncio.run(measure())
    finally:  # the referees are scripts, not daemon children: they would outlive a failed run
        echo.kill()
        for r in referees:
            r.stop()
    bare = pinger.times
    b_med, b_p99 = summary(bare[block:])
    print(f"round trip of one move (client and servers in separate processes; the floor and each referee"
          f" measured in turns, {block} round trips at a time)")  # fmt: skip
    print(f"  bare gRPC bidi ping-pong   median {b_med:7.0f} us   p99 {b_p99:7.0f} us   ({len(bare)} round trips,"
          f" server CPU {bare_cpu / len(bare) * 1e6:.0f} us each)")  # fmt: skip
    for r, (bots, ref_cpu) in zip(referees, figures, strict=True):
        within = bots.within[100:]  # the first moves warm the referee up
        ending = bots.ending[2:]
        everything = within + ending
        r_med, r_p99 = summary(everything)
        w_med, w_p99 = summary(within)
        e_med, e_p99 = summary(ending) if ending else (0.0, 0.0)
        s_med, s_p99 = summary(bots.starting[2:]) if bots.starting[2:] else (0.0, 0.0)
        n = len(bots.within) + len(bots.ending)
        print(f"  referee of {r.label}")
        print(f"    all moves                median {r_med:7.0f} us   p99 {r_p99:7.0f} us   ({n} moves,"
              f" referee CPU {ref_cpu / n * 1e6:.0f} us each, match starts included)")  # fmt: skip
        print(f"    moves within a match     median {w_med:7.0f} us   p99 {w_p99:7.0f} us   ({len(within)}:"
              " action -> next turn)")  # fmt: skip
        print(f"    moves that end a match   median {e_med:7.0f} us   p99 {e_p99:7.0f} us   ({len(ending)}:"
              " action -> MatchEnded)")  # fmt: skip
        print(f"    ratio to bare            median {r_med / b_med:.2f}x (target <= 1.3x)   p99 {r_p99 / b_p99:.2f}x"
              f" (target <= 2x)   within a match: median {w_med / b_med:.2f}x p99 {w_p99 / b_p99:.2f}x")  # fmt: skip
        print(f"    match start (not a move) median {s_med:7.0f} us   p99 {s_p99:7.0f} us   ({len(bots.starting[2:])}:"
              " MatchEnded -> the next match's first turn)")  # fmt: skip


def concurrent(matches: int, bot_procs: int, streams: int = 1, batches: bool = True) -> None:
    ctx = multiprocessing.get_context("spawn")
    q = ctx.Queue()
    # each bot's first move gets the game's own allowance (Shanghaien: 5 s), so that the start of all
    # the matches at once is not what is measured; every later move has 1 s and no bank
    first = games.get("shanghaien").time_control.first_move_ms
    control = TimeControl(first_move_ms=first, move_ms=1000, bank_ms=0, grace_ms=0, join_timeout_ms=120_000)
    # ``streams`` pairs of tokens per process, each token its own Play stream: a stream carries about one
    # message each way per pass of the referee's event loop, so hundreds of matches on one stream wait in it
    pairs = [(f"bench-a{k}", f"bench-b{k}") for k in range(bot_procs * streams)]
    ref = ctx.Process(target=serve_referee, args=(q, matches, control, pairs), daemon=True)
    t0 = time.perf_counter()
    ref.start()
    port = q.get()
    out = ctx.Queue()
    procs = [
        ctx.Process(target=bot_process, args=(f"127.0.0.1:{port}", tokens, k, out, batches), daemon=True)
        for k, tokens in enumerate(tuple(t for pair in pairs[k::bot_procs] for t in pair) for k in range(bot_procs))
    ]
    for p in procs:
        p.start()
    bots: list[BotFigures] = [out.get() for _ in procs]
    figures: RefereeFigures = q.get()
    elapsed = time.perf_counter() - t0
    ref.join(10)
    for p in procs:
        p.join(10)
    times = [t for b in bots for t in b.within]
    answered = sum(b.answered for b in bots)
    med, p99 = summary(times) if times else (0.0, 0.0)
    lag = sorted(figures.lag_ms) or [0.0]
    print(f"{matches} concurrent Shanghaien matches, random bots in {bot_procs} processes ({2 * streams} Play"
          f" streams each, {matches * 2 / (2 * streams * bot_procs):.0f} seats a stream), 1 s move limit"
          f" ({control.first_move_ms / 1000:g} s for the first), no bank, one referee process,"
          f" {'batched messages' if batches else 'one message each (--no-batches)'};"
          f" GRPC_EXPERIMENTS={os.environ.get('GRPC_EXPERIMENTS', '')!r}")  # fmt: skip
    print(f"  completed {figures.completed}/{matches}, timeouts (strikes) {figures.strikes}, {answered} moves,"
          f" {figures.plies} plies")  # fmt: skip
    print(f"  {elapsed:.1f} s wall, {answered / elapsed:.0f} moves/s, turn round trip median {med / 1000:.1f} ms"
          f" p99 {p99 / 1000:.1f} ms")  # fmt: skip
    print(f"  referee event loop lag: median {statistics.median(lag):.1f} ms, p99 {lag[int(len(lag) * 0.99)]:.1f} ms,"
          f" max {lag[-1]:.1f} ms")  # fmt: skip
    print(f"  CPU (user+sys): referee {figures.cpu_s:.1f} s ({figures.cpu_s / elapsed:.0%} of one core);"
          f" bot processes {', '.join(f'{b.cpu_s:.1f}' for b in bots)} s; {os.cpu_count()} cores")  # fmt: skip
    per_move = figures.cpu_s / max(answered, 1)
    print(f"  referee CPU per move {per_move * 1e6:.0f} us: one core carries at most ~{1 / per_move:.0f} moves/s;"
          f" {matches} matches at a 1 s limit need over {matches} moves/s (one open decision each)")  # fmt: skip
    ok = matches >= 3000 and figures.completed == matches and figures.strikes == 0
    print(f"  target: 3,000 matches with no timeout -> {'met' if ok else 'not shown by this run'}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--moves", type=int, default=3000)
    parser.add_argument("--matches", type=int, default=1000)
    parser.add_argument("--bot-procs", type=int, default=4, help="processes the concurrent mode's bots run in")
    parser.add_argument("--streams", type=int, default=1, help="token pairs (two Play streams) per bot process")
    parser.add_argument("--no-batches", action="store_true", help="concurrent mode: bots that neither ask for"
                        " ResponseBatch nor send ActionBatch (one gRPC message a turn or an action)")  # fmt: skip
    parser.add_argument("--skip-round-trip", action="store_true")
    parser.add_argument("--skip-concurrent", action="store_true")
    parser.add_argument("--compare", metavar="TREE", help="round trip: also time the referee of this source tree"
                        " (e.g. a checkout of main), in turns with this one's")  # fmt: skip
    parser.add_argument("--uvloop", action="store_true", help="run the servers (the floor's and the referees) on"
                        " uvloop's event loop, as an arena worker runs its referee; default: asyncio's")  # fmt: skip
    parser.add_argument("--serve-chain", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_chain:
        serve_chain()
        return
    if args.uvloop:
        os.environ[UVLOOP_ENV] = "1"
    print(f"grpcio {grpc.__version__}, cpus {os.cpu_count()}, servers on {'uvloop' if args.uvloop else 'asyncio'}")
    if not args.skip_round_trip:
        round_trip(args.moves, args.compare)
    if not args.skip_concurrent:
        concurrent(args.matches, args.bot_procs, args.streams, not args.no_batches)


if __name__ == "__main__":
    main()
