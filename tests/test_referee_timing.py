"""The match runner's timing rules, driven in-process (no network): what goes out before the footer
at a match's end, and (below) how a turn's deadline treats time the referee itself lost."""

from __future__ import annotations

import asyncio
import json
import random
from typing import Any

import pytest

from referee.games import TimeControl
from referee.match import Match
from referee.spec import MatchSpec, SeatSpec
from referee.wire.values import EndReason, MatchResult

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
