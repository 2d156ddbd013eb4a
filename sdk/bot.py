"""What a bot author writes: a ``Bot`` subclass with one method, ``act``.

``act`` receives a ``Turn``: the seat's view (the engine's typed view dataclass), the legal
actions (engine action values, ``str(a)`` is the notation), the full engine ``state`` replayed
locally (so a bot may search with ``state.apply``), and its time. It returns one of the legal
actions (or its canonical text). ``act`` may be a plain method (run in a worker thread) or
``async def``.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True)
class Noted:
    """An answer with the bot's own note: ``return Noted(action, "why")`` from ``act``. The note is the
    seat's private data: recorded in its owner's transcript beside the move, never shown to other seats,
    watchers or the public transcript."""

    action: Any  # an engine action or its canonical text
    note: str = ""


@dataclass(frozen=True, slots=True)
class Refusal:
    """The referee's refusal of an earlier answer to this turn (RULINGS A2)."""

    action: str
    code: str  # "syntax", "illegal", ...
    reason: str


@dataclass(frozen=True, slots=True)
class Turn:
    match_id: str
    game_id: str
    seat: int
    ply: int
    state: Any  # the engine State (referee.games), replayed from the match history
    view: Any  # state.view(seat): ShangriLaView or ShanghaienView
    legal_actions: list[Any]
    move_ms: int  # time for this move, as the referee measures it
    time_bank_ms: int
    received_at: float = field(default_factory=time.monotonic)
    refusals: tuple[Refusal, ...] = ()
    history: tuple[Any, ...] = ()  # every action of the match so far (chance outcomes too), in ply order

    def time_left(self) -> float:
        """Seconds left of this move's limit (not counting the bank)."""
        return self.move_ms / 1000 - (time.monotonic() - self.received_at)


@dataclass(frozen=True, slots=True)
class MatchInfo:
    match_id: str
    game_id: str
    seat: int
    bot_names: tuple[str, ...]
    seed_sha256: str
    rated: bool


@dataclass(frozen=True, slots=True)
class SeatOutcome:
    seat: int
    bot_name: str
    score: int
    rank: int
    forfeited: bool


@dataclass(frozen=True, slots=True)
class MatchOutcome:
    match_id: str
    game_id: str
    seat: int  # this bot's seat
    end_reason: str  # "completed", "forfeit", "aborted"
    seats: tuple[SeatOutcome, ...]
    seed: str
    plies: int

    @property
    def mine(self) -> SeatOutcome:
        return self.seats[self.seat]


class Bot:
    """Base class of every bot. Override ``act``; the other hooks are optional."""

    name: str = "bot"
    version: str = "0.0.0"

    def act(self, turn: Turn) -> Any | Awaitable[Any]:
        raise NotImplementedError

    def on_match_start(self, match: MatchInfo) -> None:
        """Called when a match this bot is seated in starts (or is resumed after a reconnect)."""

    def on_match_end(self, outcome: MatchOutcome) -> None:
        """Called with the result of each match."""
