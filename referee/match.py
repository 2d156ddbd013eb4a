"""Running one match: turns, deadlines, refusals, strikes, fallback, forfeits and the transcript.

The runner knows nothing of gRPC: it talks to each seat through a ``SeatChannel`` that the server
implements, and records every event as a transcript line. A match advances synchronously where a
decision is taken: inside ``submit`` (called by the session's reader) a bot's action is played and the
match goes on to the next decision; deadlines and forfeits the same way, in plain callbacks. The match's
task only waits for the end (no future and task wake-up per move). Time the referee itself lost is not
the bot's (``turn_handed_off``, ``DEADLINE_PASSES``).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol

import structlog

from referee import chance, games
from referee.fallback import fallback_action
from referee.spec import MatchSpec
from referee.timecontrol import SeatClock
from referee.transcript import (
    Disconnect,
    Event,
    Footer,
    Forfeit,
    Header,
    Incident,
    Ply,
    Reconnect,
    Refusal,
    Resumed,
    SeatInfo,
    Strike,
    TranscriptError,
    Visitor,
    final_ranks,
    parse_lines,
    ply_line,
    walk,
)
from referee.wire.values import EndReason, MatchResult, RefusalCode, SeatResult, SeatStatus, fit_note

log = structlog.get_logger("referee.match")

MAX_STRIKES = 3
MAX_REFUSALS_PER_TURN = 5
"""A seat's refused actions in one turn, at most: the last one ends the turn as a strike (reason
``refusals``) and the fallback is played, as for a missed deadline. Later answers to it are stale."""
MAX_REFUSALS_PER_MATCH = 200
"""A seat's refused actions in one match, at most: the last one forfeits the seat (reason ``refusals``).
With both limits a transcript stays small whatever a bot sends (refusals are recorded; stale answers are not)."""
SDK_VERSION = "0.1.0"
DEADLINE_PASSES = 2
"""Event-loop passes the referee makes at a turn's deadline before striking: a reply that reached the
referee's gRPC layer by then (while the loop was busy elsewhere) is read and taken first. One pass
delivers a received message to the session's reader, the next lets it submit."""


class SeatChannel(Protocol):
    """How the runner reaches the bot in a seat (the server's session implements it)."""

    def match_started(self, match: Match, seat: int) -> None: ...
    def turn(self, match: Match, seat: int, turn_id: int, history_from: int, move_ms: int, bank_ms: int) -> None: ...
    def match_ended(self, match: Match, seat: int, result: MatchResult, history_from: int) -> None: ...


class RefusalError(Exception):
    """An action the runner did not take, and why."""

    def __init__(self, code: RefusalCode, reason: str, remaining_ms: int = 0) -> None:
        super().__init__(reason)
        self.code = code
        self.reason = reason
        self.remaining_ms = remaining_ms


@dataclass
class Seat:
    spec_seat: int
    bot_name: str
    token_sha256: str
    clock: SeatClock
    channel: SeatChannel | None = None
    bot_version: str = ""
    strikes: int = 0
    refusals: int = 0
    forfeited: bool = False
    note_bytes: int = 0  # what its bot's notes hold in this match (UTF-8 bytes; NOTES_MAX_BYTES at most)
    history_sent: int = 0  # plies this seat's bot has been sent
    disconnect_timer: asyncio.Task[None] | None = None
    joined: bool = False


@dataclass(slots=True)
class PendingTurn:
    """A seat's open decision. ``sent_at``/``deadline`` are on the match's clock; ``due`` is the deadline
    on the event loop's clock (the match's timer's: ``Match._arm``). All three move later by the time the
    Turn waited in the referee before it left for the bot (``handed_off``)."""

    seat: int
    turn_id: int
    sent_at: float
    deadline: float
    due: float
    timer: asyncio.Handle | None = field(default=None, repr=False)  # its deadline's extra passes (DEADLINE_PASSES)
    handed_off: bool = False
    done: bool = False
    refusals: int = 0


class Match:
    """One match in progress. ``run()`` plays it to the end and returns the result."""

    def __init__(self, spec: MatchSpec, *, clock: Callable[[], float] = time.monotonic, hold_end: bool = False) -> None:
        self.spec = spec
        # the seats' MatchEnded waits for ``announce_end``: the host records the result first, so that a bot
        # is never told a result its host could still lose (a worker killed before it stored the end)
        self.hold_end = hold_end
        self.end_announced = False
        self.match_id = spec.match_id
        self.game = games.get(spec.game_id)
        self._two_players = self.game.num_players == 2
        if len(spec.seats) != self.game.num_players:
            raise ValueError(f"{spec.game_id} needs {self.game.num_players} seats, got {len(spec.seats)}")
        if sorted(s.seat for s in spec.seats) != list(range(self.game.num_players)):
            raise ValueError("seats must be numbered 0..n-1, each once")
        self.control = spec.control
        self.seats = [
            Seat(s.seat, s.bot_name, s.token_sha256, SeatClock.start(self.control))
            for s in sorted(spec.seats, key=lambda s: s.seat)
        ]
        self.seed_sha256 = chance.seed_hash(spec.seed)
        self.state: Any = self.game.new_state()
        self.history: list[tuple[int, str]] = []  # (actor, action text) per ply
        self.lines: list[str] = []
        self.result: MatchResult | None = None  # set when the match is over
        self.closed = False  # the footer is written: the transcript is complete
        self.pending: PendingTurn | None = None
        self.turn_id = 0
        self._clock = clock
        self._joined = asyncio.Event()
        self._over: asyncio.Future[None] | None = None  # set when the match is decided (run() awaits it)
        self._footer: Footer | None = None  # the footer, once the result is out, until it is written
        self._tick: asyncio.Event | None = None
        self._timer: asyncio.TimerHandle | None = None  # the match's deadline timer (``_open_turn``)
        self._timer_due = 0.0  # when it fires, on the loop's clock
        self._forfeit_at_start: dict[int, str] = {}  # seats given up before the match started, and why
        self.forfeits = 0  # seats forfeited so far (``Seat.forfeited``): checked after every decision
        self.log = log.bind(match_id=spec.match_id, game_id=spec.game_id)

    # ------------------------------------------------------------------ seats

    @property
    def ply(self) -> int:
        return len(self.history)

    def attach(self, seat: int, channel: SeatChannel, bot_version: str = "") -> None:
        """A bot joins its seat, or reconnects to it (within the grace period)."""
        s = self.seats[seat]
        s.channel = channel
        if bot_version:
            s.bot_version = bot_version
        s.history_sent = 0
        if self.result is not None:  # over: a bot back after the end hears it, once it may be told
            if self.end_announced:
                channel.match_started(self, seat)
                self._tell_end(seat)
            return
        if s.disconnect_timer is not None:
            s.disconnect_timer.cancel()
            s.disconnect_timer = None
            self._event(Reconnect(ply=self.ply, seat=seat))
            self.log.info("seat reconnected", seat=seat, ply=self.ply)
        if not s.joined:
            s.joined = True
            if all(x.joined for x in self.seats):
                self._joined.set()
        if self.lines:  # already started: catch the bot up
            channel.match_started(self, seat)
            p = self.pending
            if p is not None and p.seat == seat and not s.forfeited:
                self._send_turn(p)

    def detach(self, seat: int, channel: SeatChannel) -> None:
        """The bot's connection ended. It forfeits unless it is back within the grace period."""
        s = self.seats[seat]
        if s.channel is not channel:
            return
        s.channel = None
        if self.result is not None or not self.lines or s.forfeited:
            return
        self._event(Disconnect(ply=self.ply, seat=seat))
        if self._over is None or not self._over.cancelled():  # not a match called off (its bots stop next)
            self.log.warning("seat disconnected", seat=seat, ply=self.ply)
        s.disconnect_timer = asyncio.get_running_loop().create_task(self._disconnect_grace(seat))

    def forfeit(self, seat: int, reason: str = "disconnected") -> None:
        """Forfeit a seat now, from outside the match: its bot is known to be gone for good (the process
        that ran it ended), so waiting for it to join or come back would only delay the match. A seat not
        yet joined counts as joined and forfeits at ply 0, when the match starts."""
        s = self.seats[seat]
        if self.result is not None or s.forfeited:
            return
        if not self.lines:
            self._forfeit_at_start[seat] = reason
            if not s.joined:
                s.joined = True
                if all(x.joined for x in self.seats):
                    self._joined.set()
            return
        if s.disconnect_timer is not None:
            s.disconnect_timer.cancel()
            s.disconnect_timer = None
        self._forfeit(seat, reason)
        p = self.pending
        if p is not None and p.seat == seat and not p.done:
            self._forfeited_turn(p)

    async def _disconnect_grace(self, seat: int) -> None:
        await asyncio.sleep(self.control.disconnect_grace_ms / 1000)
        self.seats[seat].disconnect_timer = None
        self._forfeit(seat, "disconnected")
        p = self.pending
        if p is not None and p.seat == seat and not p.done:
            self._forfeited_turn(p)

    # ----------------------------------------------------------------- actions

    def submit(
        self,
        seat: int,
        turn_id: int,
        text: str,
        taken: Callable[[Any, int, str], None] | None = None,
        note: str = "",
    ) -> tuple[Any, int]:
        """A bot's action. Returns (action, think_ms) when taken; raises RefusalError otherwise.

        A taken action is played at once, here, and the match goes on to its next decision (chance plies,
        the next Turn sent, its deadline armed) before this returns. ``taken(action, think_ms, note_reason)``
        is called first (the server queues its acknowledgement there, ahead of the next Turn).

        ``note`` is the bot's note on its move, recorded on the ply's line as ``fit_note`` lets it through
        (cut to the limits, or left out with a reason: ``note_reason``, logged and acknowledged). A note never
        costs the action anything: no refusal, no strike.

        The server's side of "at once": what this sends to the stream that submitted goes out as soon as
        its reader has handled the request; other streams' writers wake on the loop's next pass
        (``Session.send``), so that the Turns of all the answers read in one pass still leave together."""
        p = self.pending
        if self.result is not None:
            raise RefusalError(RefusalCode.STALE_TURN, "the match is over")
        if p is None or p.seat != seat or p.turn_id != turn_id or p.done:
            raise RefusalError(RefusalCode.STALE_TURN, f"turn {turn_id} is not seat {seat}'s current decision")
        now = self._clock()
        remaining = max(0, int((p.deadline - now) * 1000))
        try:
            action = self.state.parse_action(text)
        except games.ActionError as e:
            code = RefusalCode.SYNTAX if isinstance(e, games.ActionSyntaxError) else RefusalCode.ILLEGAL
            self._refused(p, text, code, str(e))
            raise RefusalError(code, str(e), remaining) from None
        think_ms = (now - p.sent_at) * 1000
        self._close_turn(p)
        note_reason = ""
        if note:
            s = self.seats[seat]
            note, note_reason = fit_note(note, s.note_bytes)
            s.note_bytes += len(note.encode())
            if note_reason:
                self.log.info("note cut", seat=seat, ply=self.ply, reason=note_reason)
        if taken is not None:
            taken(action, int(think_ms), note_reason)
        try:
            self.seats[seat].clock.charge(think_ms)
            self._play(action, seat, think_ms=think_ms, note=note)
        except Exception as e:  # an engine error fails the match (its task), not the bot's stream
            self._fail(e)
        else:
            self._turn_done()
        return action, int(think_ms)

    def turn_handed_off(self, seat: int, turn_id: int) -> None:
        """The seat's Turn leaves the referee for the bot now (the server's stream takes it). The time it
        waited in the referee (behind other matches' work) is not the bot's: the turn's clock starts
        again from now, once (a Turn sent again after a reconnect keeps its deadline)."""
        p = self.pending
        if p is None or p.seat != seat or p.turn_id != turn_id or p.handed_off or p.done:
            return
        p.handed_off = True
        now = self._clock()
        waited = now - p.sent_at
        if waited > 0:
            p.sent_at = now
            p.deadline += waited
            p.due += waited  # the timer, when it fires, sees the later deadline and waits on

    def _refused(self, p: PendingTurn, text: str, code: RefusalCode, reason: str) -> None:
        """Record a refusal; past the limits, end the turn (a strike) or the seat's match (a forfeit)."""
        seat = p.seat
        s = self.seats[seat]
        s.refusals += 1
        p.refusals += 1
        self._event(Refusal(ply=self.ply, seat=seat, action=text[:200], code=code.value, reason=reason))
        self.log.info("action refused", seat=seat, ply=self.ply, code=code, reason=reason)
        if s.refusals >= MAX_REFUSALS_PER_MATCH:
            self._forfeit(seat, "refusals")
            self._forfeited_turn(p)
        elif p.refusals >= MAX_REFUSALS_PER_TURN:
            self._strike(p, "refusals")

    # --------------------------------------------------------------- the match

    @classmethod
    def resume(cls, spec: MatchSpec, lines: Sequence[str], **kwargs: Any) -> Match:
        """A match taken over from its recorded transcript lines (its first worker died).

        The seed and the plies replay the position exactly; strikes, refusals, forfeits and time
        banks are restored from their events. Seats that do not reconnect within the disconnect
        grace period forfeit, as after any disconnection.
        """
        match = cls(spec, **kwargs)
        numbered = list(parse_lines(lines))  # TranscriptError (a ValueError) names a bad line
        if not numbered or not isinstance(numbered[0][1], Header):
            raise ValueError("a transcript to resume from starts with its header")
        match.state = walk(numbered, _Resume(match))
        match.lines.extend(line for line in lines if line.strip())
        match.turn_id = 1_000_000 * (match.ply + 1)  # no collision with turn ids of the first worker
        match._event(Resumed(ply=match.ply))
        return match

    async def run(self) -> MatchResult:
        try:
            return await self._run()
        finally:  # ended, or called off (cancelled: another worker holds the match now): no timer fires later
            for s in self.seats:
                if s.disconnect_timer is not None:
                    s.disconnect_timer.cancel()
                    s.disconnect_timer = None

    async def _run(self) -> MatchResult:
        if self.lines:  # resumed: the bots reconnect, or forfeit after the grace period
            for seat, s in enumerate(self.seats):
                if s.channel is None and not s.forfeited:
                    s.disconnect_timer = asyncio.get_running_loop().create_task(self._disconnect_grace(seat))
            self.log.info("match resumed", ply=self.ply)
        else:
            try:
                if not self._joined.is_set():  # usually the bots are already connected: no wait at all
                    await asyncio.wait_for(self._joined.wait(), self.control.join_timeout_ms / 1000)
            except TimeoutError:
                missing = [s.spec_seat for s in self.seats if not s.joined]
                self._over = asyncio.get_running_loop().create_future()
                detail = f"seat(s) {missing} did not join within {self.control.join_timeout_ms} ms"
                self._decide(EndReason.ABORTED, detail)
                return await self._wait_over()
            self._header()
            for seat, s in enumerate(self.seats):
                if s.channel is not None:
                    s.channel.match_started(self, seat)
            self.log.info("match started", seats=[s.bot_name for s in self.seats])
            for seat, reason in sorted(self._forfeit_at_start.items()):
                self._forfeit(seat, reason)
        loop = asyncio.get_running_loop()
        self._over = loop.create_future()
        self._advance()
        return await self._wait_over()

    async def _wait_over(self) -> MatchResult:
        """Wait until the match is decided; then write the footer (the seats' MatchEnded went out first:
        their streams were woken before this task). A cancelled match closes its open turn, and still
        writes its footer when its result was already out."""
        assert self._over is not None
        try:
            await self._over
        finally:
            p = self.pending
            if p is not None:
                self._close_turn(p)
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
            if self._footer is not None:
                self._close()
        assert self.result is not None
        return self.result

    # ------------------------------------------------------------- the turns
    # Everything below runs synchronously where a decision is taken: in the session's reader (a bot's
    # action), in a timer (a deadline), or where a seat forfeits. The match's task only waits for the end.

    def _advance(self) -> None:
        """Play on from the position now (chance plies, forfeited seats' fallbacks) until a seat must
        decide (its Turn is sent, its deadline armed) or the match is decided."""
        try:
            while not (state := self.state).is_terminal():
                if self.forfeits and self._two_players:
                    self._decide(EndReason.FORFEIT)  # a seat forfeited before its turn came (``forfeit``)
                    return
                actor = state.current_player()
                if actor == games.CHANCE:
                    self._play(chance.sample(state, self.spec.seed, len(self.history)), actor)
                    continue
                if self.seats[actor].forfeited:
                    self._play(fallback_action(state, self.spec.seed, len(self.history)), actor, fallback=True)
                    continue
                self._open_turn(actor)
                return
            self._decide(EndReason.COMPLETED)
        except Exception as e:  # reported through the match's task, as any crash of it
            self._fail(e)

    def _turn_done(self) -> None:
        """A seat's decision was taken (played, struck or forfeited): a two-player match with a forfeited
        seat ends here; otherwise play on. Nothing once the match is decided or cancelled."""
        if self._over is None or self._over.done():
            return
        try:
            if self.forfeits and self._two_players:
                self._decide(EndReason.FORFEIT)
            else:
                self._advance()
        except Exception as e:
            self._fail(e)

    def _decide(self, end: EndReason, detail: str = "") -> None:
        """The match is over: the result and the seats' MatchEnded go out now; the footer when the
        match's task next runs (``_wait_over``)."""
        if self._over is None or self._over.done():
            return
        if end is EndReason.ABORTED:
            if not self.lines:
                self._header()
            self.log.warning("match aborted", detail=detail)
        self._footer = self._finish(end, detail)
        self._over.set_result(None)

    def _fail(self, error: BaseException) -> None:
        if self._over is not None and not self._over.done():
            self._over.set_exception(error)

    def _open_turn(self, seat: int) -> None:
        s = self.seats[seat]
        self.turn_id += 1
        now = self._clock()
        budget = s.clock.budget_ms() / 1000
        loop = asyncio.get_running_loop()
        due = loop.time() + budget
        p = PendingTurn(seat, self.turn_id, now, now + budget, due)
        self.pending = p
        self._send_turn(p)
        if self._timer is None or due < self._timer_due:  # else the armed timer fires first and waits on
            self._arm(due)

    def _arm(self, due: float) -> None:
        """One deadline timer per match, not one per turn: a turn answered in time leaves it armed for
        the next turn, whose deadline is usually later (``_on_timer`` then waits on). A timer armed and
        cancelled each move cost a measurable share of the referee's Python per move (docs/benchmarks.md,
        "Figures behind the code's choices")."""
        if self._timer is not None:
            self._timer.cancel()
        self._timer = asyncio.get_running_loop().call_at(due, self._on_timer)
        self._timer_due = due

    def _on_timer(self) -> None:
        self._timer = None
        p = self.pending
        if p is not None and not p.done:
            self._deadline(p, DEADLINE_PASSES)

    def _close_turn(self, p: PendingTurn) -> None:
        p.done = True
        if p.timer is not None:
            p.timer.cancel()
            p.timer = None
        if self.pending is p:
            self.pending = None

    def _deadline(self, p: PendingTurn, passes: int) -> None:
        """The turn's timer. If the Turn left the referee late, its deadline moved: wait on. At the
        deadline, first let the loop read what has already reached the referee (``DEADLINE_PASSES``);
        a seat still silent then gets a strike."""
        if p.done:
            return
        loop = asyncio.get_running_loop()
        if loop.time() < p.due:
            self._arm(p.due)
        elif passes > 0:
            p.timer = loop.call_soon(self._deadline, p, passes - 1)
        else:
            self._strike(p, "timeout")

    def _strike(self, p: PendingTurn, reason: str) -> None:
        """The turn ends without a move (deadline, or too many refusals): a strike, then the fallback."""
        seat = p.seat
        s = self.seats[seat]
        self._close_turn(p)
        try:
            if reason == "timeout":
                s.clock.miss()
            else:
                s.clock.charge((self._clock() - p.sent_at) * 1000)
            s.strikes += 1
            self._event(Strike(ply=self.ply, seat=seat, strikes=s.strikes, reason=reason))
            self.log.warning("turn struck", seat=seat, ply=self.ply, strikes=s.strikes, reason=reason)
            if s.strikes >= MAX_STRIKES:
                self._forfeit(seat, "strikes")
            if not (self.game.num_players == 2 and s.forfeited):
                self._play(fallback_action(self.state, self.spec.seed, self.ply), seat, fallback=True)
            self._turn_done()
        except Exception as e:
            self._fail(e)

    def _forfeited_turn(self, p: PendingTurn) -> None:
        """The seat forfeited while its turn was open: a larger match plays the fallback for it."""
        self._close_turn(p)
        try:
            if self.game.num_players != 2:
                self._play(fallback_action(self.state, self.spec.seed, self.ply), p.seat, fallback=True)
            self._turn_done()
        except Exception as e:
            self._fail(e)

    def _send_turn(self, p: PendingTurn) -> None:
        s = self.seats[p.seat]
        if s.channel is None:
            return
        remaining = max(0.0, p.deadline - self._clock()) * 1000
        move_ms = int(max(0.0, min(s.clock.limit_ms(), remaining - self.control.grace_ms)))
        bank_ms = int(s.clock.bank_ms)
        history_from = s.history_sent
        s.history_sent = self.ply
        s.channel.turn(self, p.seat, p.turn_id, history_from, move_ms, bank_ms)

    def _play(
        self, action: Any, actor: int, *, think_ms: float | None = None, fallback: bool = False, note: str = ""
    ) -> None:
        text = str(action)
        history = self.history
        if actor >= 0:
            ms = None if think_ms is None else round(think_ms, 1)
            line = ply_line(len(history), actor, text, ms, int(self.seats[actor].clock.bank_ms), fallback, note)
        else:
            line = ply_line(len(history), actor, text)
        self.state = self.state.apply(action)
        history.append((actor, text))
        self._line(line)

    def _forfeit(self, seat: int, reason: str) -> None:
        s = self.seats[seat]
        if s.forfeited or self.result is not None:
            return
        s.forfeited = True
        self.forfeits += 1
        self._event(Forfeit(ply=self.ply, seat=seat, reason=reason))
        self.log.warning("seat forfeited", seat=seat, ply=self.ply, reason=reason)

    # ------------------------------------------------------------- transcript

    def _header(self) -> None:
        self._event(
            Header(
                match_id=self.match_id,
                game_id=self.spec.game_id,
                sdk_version=SDK_VERSION,
                rated=self.spec.rated,
                seats=tuple(
                    SeatInfo(seat=i, bot_name=s.bot_name, bot_version=s.bot_version) for i, s in enumerate(self.seats)
                ),
                time_control=self.control.to_dict(),
                seed_sha256=self.seed_sha256,
                started_at=_now(),
            )
        )

    def _event(self, event: Event) -> None:
        self._line(event.to_line())

    def _line(self, line: str) -> None:
        self.lines.append(line)
        tick = self._tick
        if tick is not None:  # someone follows the match: wake them
            self._tick = None
            tick.set()

    async def follow(self) -> AsyncIterator[str]:
        """Every transcript line, past and future, until the footer."""
        sent = 0
        while True:
            while sent < len(self.lines):
                line = self.lines[sent]
                sent += 1
                yield line
            if self.closed:
                return
            if self._tick is None:
                self._tick = asyncio.Event()
            await self._tick.wait()

    def _close(self) -> None:
        """Write the footer: the transcript is complete."""
        footer, self._footer = self._footer, None
        assert footer is not None and self.result is not None
        self._event(footer)
        self.closed = True
        r = self.result
        self.log.info("match ended", end_reason=r.end_reason.value, ranks=[x.rank for x in r.seats],
                      scores=[x.score for x in r.seats], plies=self.ply)  # fmt: skip

    def announce_end(self) -> None:
        """Send the result (MatchEnded) to the seats: when the match is decided, or, with ``hold_end``,
        when the host has recorded it. Seats that come back later get it as they attach."""
        assert self.result is not None
        self.end_announced = True
        for seat, s in enumerate(self.seats):
            if s.channel is not None:
                self._tell_end(seat)

    def _tell_end(self, seat: int) -> None:
        s = self.seats[seat]
        assert self.result is not None and s.channel is not None
        history_from = s.history_sent
        s.history_sent = self.ply
        s.channel.match_ended(self, seat, self.result, history_from)

    def _finish(self, end: EndReason, detail: str = "") -> Footer:
        """Set the result and send it to the seats; returns the footer for ``_end`` to write."""
        n = self.game.num_players
        forfeited = [i for i, s in enumerate(self.seats) if s.forfeited]
        scores = self.state.scores()  # before the end: the scores as the position stands
        game_ranks = self.state.ranks() if self.state.is_terminal() else [1] * n
        ranks = final_ranks(game_ranks, forfeited) if end is not EndReason.ABORTED else [0] * n
        for s in self.seats:
            if s.disconnect_timer is not None:
                s.disconnect_timer.cancel()
        self.result = MatchResult(
            match_id=self.match_id,
            game_id=self.spec.game_id,
            end_reason=end,
            seats=tuple(
                SeatResult(
                    seat=i,
                    bot_name=s.bot_name,
                    bot_version=s.bot_version,
                    score=scores[i],
                    rank=ranks[i],
                    status=SeatStatus.FORFEITED if s.forfeited else SeatStatus.ACTIVE,
                    strikes=s.strikes,
                    refusals=s.refusals,
                )
                for i, s in enumerate(self.seats)
            ),
            seed=self.spec.seed,
            seed_sha256=self.seed_sha256,
            plies=self.ply,
            detail=detail,
        )
        if not self.hold_end:
            self.announce_end()
        return Footer(
            end_reason=end.value,
            plies=self.ply,
            scores=tuple(scores),
            game_ranks=tuple(game_ranks),
            ranks=tuple(ranks),
            forfeited=tuple(forfeited),
            seed=self.spec.seed,
            ended_at=_now(),
            detail=detail,
        )


class _Resume(Visitor):
    """Restores a match from its transcript: versions, history, clocks, strikes, refusals, forfeits."""

    def __init__(self, match: Match) -> None:
        self.match = match

    def header(self, header: Header, state: games.State) -> None:
        if header.game_id != self.match.spec.game_id:
            raise TranscriptError(f"the transcript is of {header.game_id}, the match of {self.match.spec.game_id}")
        for s in header.seats:
            self.match.seats[s.seat].bot_version = s.bot_version

    def ply(self, ply: Ply, action: Any, before: games.State, after: games.State) -> None:
        self.match.history.append((ply.actor, ply.action))
        if ply.actor >= 0:
            seat = self.match.seats[ply.actor]
            seat.clock.moves += 1
            seat.clock.bank_ms = float(ply.bank_ms)
            seat.note_bytes += len(ply.note.encode())

    def incident(self, event: Incident, state: games.State) -> None:
        if isinstance(event, Strike):
            self.match.seats[event.seat].strikes = event.strikes
        elif isinstance(event, Refusal):
            self.match.seats[event.seat].refusals += 1
        elif isinstance(event, Forfeit):
            seat = self.match.seats[event.seat]
            if not seat.forfeited:
                seat.forfeited = True
                self.match.forfeits += 1

    def footer(self, footer: Footer, state: games.State) -> None:
        raise ValueError(f"match {self.match.match_id} has already ended")


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")
