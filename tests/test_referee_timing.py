"""The match runner's timing rules, driven in-process (no network): what goes out before the footer
at a match's end, and (below) how a turn's deadline treats time the referee itself lost."""

from __future__ import annotations

import asyncio
import json
import multiprocessing
import random
import time
from typing import Any

import pytest

from referee.games import TimeControl
from referee.host import Referee
from referee.match import Match
from referee.server import start_server
from referee.session import Session
from referee.spec import MatchSpec, SeatSpec
from referee.wire.values import EndReason, MatchResult, token_sha256
from sdk.bot import Bot, Turn
from sdk.client import BotClient

CONTROL = TimeControl(first_move_ms=2000, move_ms=1000, bank_ms=0, grace_ms=0, join_timeout_ms=5000)


def spec(match_id: str = "t-1") -> MatchSpec:
    seats = tuple(SeatSpec(i, f"bot{i}", "0" * 64) for i in range(2))
    return MatchSpec(match_id, "shanghaien", seats, seed="timing", time_control=CONTROL)


class Answering:
    """A seat that answers each turn on the loop's next pass with a random legal action."""

    def __init__(self, seat: int, seed: int = 0) -> None:
        self.seat = seat
        self.rng = random.Random(seed)
        self.ended: list[tuple[MatchResult, str]] = []  # the result, and the transcript's last line then
        self.on_end: Any = None

    def match_started(self, match: Match, seat: int) -> None:
        pass

    def turn(self, match: Match, seat: int, turn_id: int, history_from: int, move_ms: int, bank_ms: int) -> None:
        loop = asyncio.get_running_loop()
        loop.call_soon(self._act, match, turn_id)

    def _act(self, match: Match, turn_id: int) -> None:
        actions = sorted(str(a) for a in match.state.legal_actions())
        match.submit(self.seat, turn_id, self.rng.choice(actions))

    def match_ended(self, match: Match, seat: int, result: MatchResult, history_from: int) -> None:
        self.ended.append((result, match.lines[-1]))
        if self.on_end is not None:
            self.on_end()


def test_match_ended_goes_out_before_the_footer_is_written() -> None:
    async def run() -> tuple[Match, list[Answering], list[str]]:
        match = Match(spec())
        seats = [Answering(i, i) for i in range(2)]
        for i, s in enumerate(seats):
            match.attach(i, s, "1")
        followed: list[str] = []

        async def follow() -> None:
            async for line in match.follow():
                followed.append(line)

        follower = asyncio.create_task(follow())
        result = await match.run()
        await asyncio.wait_for(follower, 5)
        assert result is match.result
        return match, seats, followed

    match, seats, followed = asyncio.run(run())
    for s in seats:
        (result, last), = s.ended  # fmt: skip
        assert result.end_reason is EndReason.COMPLETED
        assert json.loads(last)["type"] == "ply"  # the footer was not written yet
    assert json.loads(match.lines[-1])["type"] == "footer" and match.closed
    assert followed == match.lines  # a follower gets every line, the footer last


def test_a_match_cancelled_as_it_ends_still_writes_its_footer() -> None:
    async def run() -> Match:
        match = Match(spec())
        seats = [Answering(i, i) for i in range(2)]
        for i, s in enumerate(seats):
            match.attach(i, s, "1")
        task = asyncio.create_task(match.run())
        seats[0].on_end = task.cancel  # lands on the pass between MatchEnded and the footer
        with pytest.raises(asyncio.CancelledError):
            await task
        return match

    match = asyncio.run(run())
    assert match.result is not None
    footer = json.loads(match.lines[-1])
    assert footer["type"] == "footer" and footer["end_reason"] == "completed" and match.closed


# ---------------------------------------------------------------- time the referee lost is not the bot's
# The bots run in another process, so that they answer while the referee's loop is blocked.

SLOW_TURN = 8  # the seat-0 turn (counted by the referee) around which the referee's loop is blocked
BLOCK_S = 2.0  # for longer than the move limit
LIMIT = TimeControl(first_move_ms=1000, move_ms=1000, bank_ms=0, grace_ms=0, disconnect_grace_ms=10_000,
                    join_timeout_ms=20_000)  # fmt: skip


class QuickBot(Bot):
    name = "quick"

    def __init__(self, sleep_on_turn: int = 0) -> None:
        self.rng = random.Random(1)
        self.sleep_on_turn = sleep_on_turn
        self.turns = 0

    async def act(self, turn: Turn) -> Any:
        self.turns += 1
        if self.turns == self.sleep_on_turn:
            await asyncio.sleep(BLOCK_S + 1.5)  # truly past the limit, and past the referee's block
        return self.rng.choice(turn.legal_actions)


def _bot_process(port: int, token: str, sleep_on_turn: int) -> None:
    asyncio.run(BotClient(QuickBot(sleep_on_turn), f"127.0.0.1:{port}", token, max_matches=1).run())


def _blocked_match(when: str, sleep_on_turn: int = 0) -> tuple[list[dict[str, Any]], int]:
    """One Shanghaien match whose referee blocks its loop for BLOCK_S at seat 0's SLOW_TURN-th turn:
    ``before`` the Turn is queued (it leaves the referee late), or ``after`` it left (the bot's
    answer arrives while the loop is blocked). Seat 0's bot sleeps past the limit on its
    ``sleep_on_turn``-th turn (0: never). Returns the transcript events and the ply of that turn."""
    tokens = ["tok-a", "tok-b"]
    slow_ply = [-1]

    async def run() -> list[dict[str, Any]]:
        referee = Referee()
        server, port = await start_server(referee)
        original = Session.turn
        count = [0]

        def turn(self: Session, match: Match, seat: int, *args: Any) -> None:
            if seat == 0:
                count[0] += 1
            blocking = seat == 0 and count[0] == SLOW_TURN
            loop = asyncio.get_running_loop()
            if blocking:
                slow_ply[0] = match.ply
                if when == "before":  # the loop's next pass blocks before the session's stream takes the Turn
                    loop.call_soon(time.sleep, BLOCK_S)
            original(self, match, seat, *args)
            if blocking and when == "after":  # the pass after the stream took it: the bot answers meanwhile
                loop.call_soon(loop.call_soon, time.sleep, BLOCK_S)

        ctx = multiprocessing.get_context("spawn")
        bots = [ctx.Process(target=_bot_process, args=(port, t, sleep_on_turn if i == 0 else 0), daemon=True)
                for i, t in enumerate(tokens)]  # fmt: skip
        try:
            Session.turn = turn  # type: ignore[method-assign,assignment]
            seats = tuple(SeatSpec(i, f"bot{i}", token_sha256(t)) for i, t in enumerate(tokens))
            match = referee.start_match(MatchSpec("slow-1", "shanghaien", seats, seed="slow", time_control=LIMIT))
            for b in bots:
                b.start()
            await asyncio.wait_for(referee.tasks[match.match_id], 120)
            return [json.loads(line) for line in match.lines]
        finally:
            Session.turn = original  # type: ignore[method-assign]
            for b in bots:
                b.join(10)
                if b.is_alive():
                    b.kill()
            await referee.shutdown()
            await server.stop(None)

    events = asyncio.run(run())
    return events, slow_ply[0]


@pytest.mark.parametrize("when", ["before", "after"])
def test_a_bot_is_not_struck_for_time_the_referee_spent_blocked(when: str) -> None:
    events, slow_ply = _blocked_match(when)
    assert slow_ply > 0
    plies = [e for e in events if e["type"] == "ply" and e["ply"] == slow_ply]
    assert plies and plies[0]["actor"] == 0 and not plies[0]["fallback"]  # the bot's own move was played
    assert [e for e in events if e["type"] == "strike"] == []
    assert events[-1]["type"] == "footer" and events[-1]["end_reason"] == "completed"


def test_a_bot_that_sleeps_past_the_limit_is_struck_even_when_the_referee_was_blocked() -> None:
    events, slow_ply = _blocked_match("after", sleep_on_turn=SLOW_TURN)
    strikes = [e for e in events if e["type"] == "strike"]
    assert [(e["ply"], e["seat"], e["reason"]) for e in strikes] == [(slow_ply, 0, "timeout")]
    plies = [e for e in events if e["type"] == "ply" and e["ply"] == slow_ply]
    assert plies[0]["actor"] == 0 and plies[0]["fallback"]


class Silent(Answering):
    """Answers its first ``answers`` turns on the loop's next pass, then never again."""

    def __init__(self, seat: int, answers: int) -> None:
        super().__init__(seat)
        self.answers = answers
        self.turns = 0
        self.silent_since: float | None = None  # when the turn it does not answer was sent (loop clock)

    def turn(self, match: Match, seat: int, turn_id: int, history_from: int, move_ms: int, bank_ms: int) -> None:
        self.turns += 1
        if self.turns <= self.answers:
            super().turn(match, seat, turn_id, history_from, move_ms, bank_ms)
        elif self.silent_since is None:
            self.silent_since = asyncio.get_running_loop().time()


@pytest.mark.parametrize("answers", [0, 1, 3])
def test_each_turn_is_struck_at_its_own_deadline_when_an_earlier_turn_had_a_later_one(answers: int) -> None:
    """The match keeps one deadline timer, armed for the first turn's 3 s allowance; a later turn with a
    0.2 s limit is still struck at 0.2 s (the timer is brought forward), not when the first would have been."""
    control = TimeControl(first_move_ms=3000, move_ms=200, bank_ms=0, grace_ms=0, join_timeout_ms=5000)

    async def run() -> float:
        seats = tuple(SeatSpec(i, f"bot{i}", "0" * 64) for i in range(2))
        match = Match(MatchSpec("early", "shanghaien", seats, seed="early", time_control=control))
        bots = [Silent(i, answers) for i in range(2)]
        for i, b in enumerate(bots):
            match.attach(i, b, "1")
        task = asyncio.create_task(match.run())
        loop = asyncio.get_running_loop()
        while not any(json.loads(line)["type"] == "strike" for line in match.lines):
            await asyncio.sleep(0.01)
        struck_at = loop.time()
        task.cancel()
        # the first strike is of the first turn left unanswered (the match waits on it)
        return struck_at - min(b.silent_since for b in bots if b.silent_since is not None)

    waited = asyncio.run(run())
    if answers:  # each seat answered its first turn(s): the silent turn has the 0.2 s limit
        assert 0.2 <= waited < 1.5, waited
    else:  # the very first turn: 3 s
        assert 3.0 <= waited < 4.5, waited
