"""Batched messages (Hello.accept_batches, ResponseBatch, ActionBatch): what waits for a stream together
leaves in one message, and that changes nothing but the packaging. Real referee over loopback gRPC."""

from __future__ import annotations

import asyncio
import hashlib
import secrets
from dataclasses import dataclass, field
from typing import Any

import grpc
import pytest

from arena.service.relay import _RefusedError, _route, _upstream_hello
from referee.games import TimeControl
from referee.host import Referee
from referee.spec import MatchSpec, SeatSpec
from referee.wire import bot_pb2, bot_pb2_grpc
from referee.wire.contract import MAX_BATCH, NO_BATCHES, TOO_LONG
from referee.wire.values import EndReason, token_sha256
from sdk.bot import Bot, Turn
from sdk.client import BotClient
from tests.helpers import raw_session
from tests.helpers import run_referee as run

SLOW = TimeControl(first_move_ms=20_000, move_ms=20_000, bank_ms=0, join_timeout_ms=20_000)
TOKENS = ("tok-north", "tok-south")


def start(referee: Referee, n: int, tag: str) -> list[str]:
    """``n`` Shanghaien matches of the two tokens, seeds fixed by their index."""
    ids = []
    for i in range(n):
        seats = tuple(SeatSpec(s, f"bot{s}", token_sha256(t)) for s, t in enumerate(TOKENS))
        spec = MatchSpec(f"{tag}-{i}", "shanghaien", seats, seed=f"batches:{i}", time_control=SLOW)
        ids.append(referee.start_match(spec).match_id)
    return ids


def open_raw(channel: grpc.aio.Channel, token: str, batches: bool) -> tuple[Any, asyncio.Queue[Any]]:
    """A Play stream driven by hand (``raw_session``) whose Hello, asking for batches or not, is sent."""
    call, out = raw_session(bot_pb2_grpc.BotServiceStub(channel), token)  # type: ignore[no-untyped-call]
    out.put_nowait(bot_pb2.PlayRequest(hello=bot_pb2.Hello(bot_name="raw", bot_version="1", accept_batches=batches)))
    return call, out


def choose(turn: bot_pb2.Turn) -> str:
    """A legal action fixed by the match's seed index and ply, whatever order turns come in."""
    index = turn.match_id.rsplit("-", 1)[1]
    digest = hashlib.sha256(f"{index}/{turn.ply}".encode()).digest()
    return str(sorted(turn.legal_actions)[digest[0] % len(turn.legal_actions)])


@dataclass
class Seen:
    welcome: bot_pb2.Welcome | None = None
    messages: int = 0  # gRPC messages received
    inner: int = 0  # messages, batches unpacked
    biggest: int = 1  # the largest ResponseBatch
    sent_batches: int = 0  # ActionBatch messages sent
    turn_ids: dict[str, list[int]] = field(default_factory=dict)
    ended: set[str] = field(default_factory=set)
    refused: list[tuple[str, str]] = field(default_factory=list)


async def raw_bot(target: str, token: str, matches: int, batches: bool) -> Seen:
    """Answers every turn with ``choose``; with ``batches``, the answers to one received message leave
    together in one ActionBatch. Until every match has ended."""
    seen = Seen()
    async with grpc.aio.insecure_channel(target) as channel:
        call, out = open_raw(channel, token, batches)
        async for message in call:
            seen.messages += 1
            inner = list(message.batch.messages) if message.HasField("batch") else [message]
            seen.biggest = max(seen.biggest, len(inner))
            answers = []
            for m in inner:
                seen.inner += 1
                kind = m.WhichOneof("message")
                assert kind != "batch"  # never a batch in a batch
                if kind == "welcome":
                    seen.welcome = m.welcome
                elif kind == "turn":
                    seen.turn_ids.setdefault(m.turn.match_id, []).append(m.turn.turn_id)
                    answers.append(bot_pb2.SubmitAction(match_id=m.turn.match_id, seat=m.turn.seat,
                                                        turn_id=m.turn.turn_id, action=choose(m.turn)))  # fmt: skip
                elif kind == "refused":
                    seen.refused.append((m.refused.match_id, m.refused.reason))
                elif kind == "match_ended":
                    seen.ended.add(m.match_ended.result.match_id)
            if batches and len(answers) > 1:
                seen.sent_batches += 1
                out.put_nowait(bot_pb2.PlayRequest(actions=bot_pb2.ActionBatch(actions=answers)))
            else:
                for a in answers:
                    out.put_nowait(bot_pb2.PlayRequest(action=a))
            if len(seen.ended) == matches:
                break
        out.put_nowait(None)
        call.cancel()
    return seen


def play(batches: bool, n: int = 24) -> tuple[list[tuple[Any, ...]], list[Seen]]:
    """``n`` matches at once, both seats of all of them on one stream each; each match's plies and result."""
    outcome: list[tuple[Any, ...]] = []
    seen: list[Seen] = []

    async def test(referee: Referee, target: str) -> None:
        ids = start(referee, n, "b" if batches else "s")
        seen.extend(await asyncio.gather(*(raw_bot(target, t, n, batches) for t in TOKENS)))
        for match_id in ids:
            result = await referee.tasks[match_id]
            match = referee.matches[match_id]
            scores = [(s.score, s.rank, s.strikes, s.refusals) for s in result.seats]
            outcome.append((list(match.history), result.end_reason, scores))

    run(test)
    return outcome, seen


def test_batches_change_the_packaging_and_nothing_else() -> None:
    batched, seen_b = play(batches=True)
    single, seen_s = play(batches=False)
    assert batched == single  # the same plies, scores and ranks, match by match
    assert all(reason == EndReason.COMPLETED for _, reason, _ in batched)
    for b, s in zip(seen_b, seen_s, strict=True):
        assert b.welcome is not None and b.welcome.batches
        assert s.welcome is not None and not s.welcome.batches
        assert s.biggest == 1 and s.messages == s.inner  # a bot that did not ask never gets a batch
        assert b.inner == s.inner  # the same messages ...
        assert b.messages < b.inner / 2  # ... in fewer gRPC messages: 24 matches answered at once pile up
        assert 1 < b.biggest <= MAX_BATCH
        assert b.sent_batches > 0 and not b.refused and not s.refused
        for ids in b.turn_ids.values():  # in order within each match
            assert ids == sorted(ids)


def refusals_for(batches: bool, actions: int) -> tuple[list[tuple[str, str]], Any]:
    """One ActionBatch of ``actions`` answers (a right one and copies) from a stream that asked for
    batches or not: the refusals it got, and the match's ply when it was sent, once its refusals had
    come, and once the same action sent alone had been answered."""
    found: list[Any] = []

    async def test(referee: Referee, target: str) -> None:
        (match_id,) = start(referee, 1, "r")
        match = referee.matches[match_id]
        south = asyncio.create_task(BotClient(FirstBot(), target, TOKENS[1]).run())  # a match starts with all seats

        refused: list[tuple[str, str]] = []
        async with grpc.aio.insecure_channel(target) as channel:
            call, out = open_raw(channel, TOKENS[0], batches)
            turn: bot_pb2.Turn | None = None
            async for message in call:
                for m in message.batch.messages if message.HasField("batch") else [message]:
                    if m.HasField("turn") and turn is None:
                        turn = m.turn
                        a = bot_pb2.SubmitAction(match_id=match_id, seat=0, turn_id=turn.turn_id, action=choose(turn))
                        found.append(match.ply)
                        out.put_nowait(bot_pb2.PlayRequest(actions=bot_pb2.ActionBatch(actions=[a] * actions)))
                        out.put_nowait(bot_pb2.PlayRequest(ping=bot_pb2.Ping(nonce=1)))
                    elif m.HasField("refused"):
                        refused.append((bot_pb2.RefusalCode.Name(m.refused.code), m.refused.reason))
                    elif m.HasField("pong") and m.pong.nonce == 1 and turn is not None:  # after the batch's refusals
                        found.insert(0, list(refused))
                        found.append(match.ply)
                        a = bot_pb2.SubmitAction(match_id=match_id, seat=0, turn_id=turn.turn_id, action=choose(turn))
                        out.put_nowait(bot_pb2.PlayRequest(action=a))
                        out.put_nowait(bot_pb2.PlayRequest(ping=bot_pb2.Ping(nonce=2)))
                    elif m.HasField("pong"):
                        found.append(match.ply)
                        break
                if len(found) == 4:
                    break
            out.put_nowait(None)
            call.cancel()
        south.cancel()

    run(test)
    return found[0], found[1:]


def test_an_action_batch_on_a_stream_that_did_not_ask_is_refused_action_by_action_and_loses_nothing() -> None:
    refused, (sent, answered, alone) = refusals_for(batches=False, actions=3)
    assert refused == [("REFUSAL_CODE_MALFORMED", NO_BATCHES)] * 3
    assert answered == sent < alone  # the turn stayed open; the same action sent alone played it


@pytest.mark.parametrize("batches", [True, False])
def test_an_action_batch_over_the_limit_ends_the_stream_without_an_answer_for_each(batches: bool) -> None:
    """65 actions in one message: INVALID_ARGUMENT with the reason, not 65 refusals (a small message must
    not ask for thousands of answers); nothing of it reaches the match."""

    async def test(referee: Referee, target: str) -> None:
        (match_id,) = start(referee, 1, "long")
        match = referee.matches[match_id]
        south = asyncio.create_task(BotClient(FirstBot(), target, TOKENS[1]).run())

        kinds: list[str] = []
        async with grpc.aio.insecure_channel(target) as channel:
            call, out = open_raw(channel, TOKENS[0], batches)
            ply = None
            with pytest.raises(grpc.aio.AioRpcError) as info:
                async for message in call:
                    for m in message.batch.messages if message.HasField("batch") else [message]:
                        kinds.append(m.WhichOneof("message"))
                        if m.HasField("turn") and ply is None:
                            ply = match.ply
                            a = bot_pb2.SubmitAction(match_id=match_id, seat=0, turn_id=m.turn.turn_id,
                                                     action=choose(m.turn))  # fmt: skip
                            out.put_nowait(bot_pb2.PlayRequest(actions=bot_pb2.ActionBatch(actions=[a] * 65)))
            out.put_nowait(None)
        south.cancel()
        assert (info.value.code(), info.value.details()) == (grpc.StatusCode.INVALID_ARGUMENT, TOO_LONG)
        assert "refused" not in kinds
        assert match.ply == ply  # the turn is still open, for the bot's next stream

    run(test)


def test_each_action_of_a_batch_is_taken_or_refused_alone() -> None:
    """Two copies of the right answer: the first plays the turn, the second is refused as stale."""
    refused, (sent, answered, _) = refusals_for(batches=True, actions=2)
    assert [code for code, _ in refused] == ["REFUSAL_CODE_STALE_TURN"]
    assert answered > sent


class FirstBot(Bot):
    name = "first"

    def act(self, turn: Turn) -> Any:
        return turn.legal_actions[0]


def test_the_sdk_asks_for_batches_and_plays_many_matches_on_one_stream() -> None:
    async def test(referee: Referee, target: str) -> None:
        ids = start(referee, 16, "sdk")
        clients = [BotClient(FirstBot(), target, t, max_matches=16) for t in TOKENS]
        outcomes = await asyncio.gather(*(c.run() for c in clients))
        assert all(c._batches for c in clients)  # the referee's Welcome offered them
        assert all(len(o) == 16 for o in outcomes)
        for match_id in ids:
            assert (await referee.tasks[match_id]).end_reason == EndReason.COMPLETED

    run(test)


def test_the_gateway_neither_asks_its_workers_for_batches_nor_takes_action_batches() -> None:
    """Its relay reads MatchEnded message by message, and its own Welcome says batches = false."""
    hello = bot_pb2.Hello(bot_name="b", bot_version="1", match_ids=["m1", "m2"], accept_batches=True)
    upstream = bot_pb2.PlayRequest.FromString(_upstream_hello(hello, "m1")).hello
    assert (list(upstream.match_ids), upstream.accept_batches) == (["m1"], False)
    actions = [bot_pb2.SubmitAction(match_id=m, seat=0, turn_id=7, action="roll") for m in ("m1", "m2")]
    batch = bot_pb2.PlayRequest(actions=bot_pb2.ActionBatch(actions=actions)).SerializeToString()
    link, replies = _route(batch, {"m1": object(), "m2": object()})  # type: ignore[dict-item]
    assert link is None
    refusals = [bot_pb2.PlayResponse.FromString(r).refused for r in replies]
    assert [(r.match_id, r.turn_id, r.code, r.reason) for r in refusals] == [
        (m, 7, bot_pb2.REFUSAL_CODE_MALFORMED, NO_BATCHES) for m in ("m1", "m2")
    ]
    too_long = bot_pb2.PlayRequest(actions=bot_pb2.ActionBatch(actions=actions * 33)).SerializeToString()
    with pytest.raises(_RefusedError) as info:  # the stream ends (INVALID_ARGUMENT), as on a worker
        _route(too_long, {"m1": object(), "m2": object()})  # type: ignore[dict-item]
    assert (info.value.code, info.value.details) == (grpc.StatusCode.INVALID_ARGUMENT, TOO_LONG)


@pytest.mark.parametrize("n", [1, 3])
def test_a_session_that_ends_right_behind_a_batch_still_gets_the_batch(n: int) -> None:
    """A revoked session: what was queued before the end is sent, then the stream ends UNAUTHENTICATED."""

    async def test(referee: Referee, target: str) -> None:
        start(referee, n, f"end{n}-{secrets.token_hex(2)}")
        kinds: list[str] = []
        south = asyncio.create_task(BotClient(FirstBot(), target, TOKENS[1]).run())  # a match starts with all seats
        async with grpc.aio.insecure_channel(target) as channel:
            call, out = open_raw(channel, TOKENS[0], batches=True)
            mine = referee.sessions.setdefault(token_sha256(TOKENS[0]), set())
            while not any(s.hello for s in mine) or not all(m.seats[1].joined for m in referee.matches.values()):
                await asyncio.sleep(0.01)
            (session,) = mine
            referee.revoke(session, "gone")  # queued behind Welcome, MatchStarted and Turn of each match
            with pytest.raises(grpc.aio.AioRpcError) as info:
                async for message in call:
                    kinds += [m.WhichOneof("message") for m in message.batch.messages] if message.HasField("batch") \
                        else [message.WhichOneof("message")]  # fmt: skip
            out.put_nowait(None)
        south.cancel()
        assert info.value.code() == grpc.StatusCode.UNAUTHENTICATED
        assert kinds == ["welcome"] + ["match_started", "turn"] * n

    run(test)
