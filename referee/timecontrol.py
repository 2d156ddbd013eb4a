"""Time controls: per-game defaults and the referee-side clock of one seat.

A seat's budget for a move is its limit (``first_move_ms`` for its first move of the match,
``move_ms`` after) plus whatever is left of its time bank, plus ``grace_ms`` of network margin
that is never reported to the bot. Time beyond the limit is taken from the bank; a seat that is
still silent at the deadline gets a strike, its bank is emptied and the fallback action is played.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from typing import Any


@dataclass(frozen=True, slots=True)
class TimeControl:
    first_move_ms: int
    move_ms: int
    bank_ms: int
    grace_ms: int = 200
    disconnect_grace_ms: int = 10_000
    join_timeout_ms: int = 30_000

    def with_overrides(self, **changes: int) -> TimeControl:
        return replace(self, **{k: v for k, v in changes.items() if v is not None})

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TimeControl:
        return cls(**{k: int(v) for k, v in data.items() if k in cls.__dataclass_fields__})


DEFAULTS: dict[str, TimeControl] = {
    # Short decisions, many of them: a game is ~70 player decisions per seat.
    "shanghaien": TimeControl(first_move_ms=5_000, move_ms=1_000, bank_ms=10_000),
    # Larger branching (hundreds of recruits), ~35-60 decisions per seat.
    "shangrila-3p": TimeControl(first_move_ms=10_000, move_ms=2_000, bank_ms=20_000),
    "shangrila-4p": TimeControl(first_move_ms=10_000, move_ms=2_000, bank_ms=20_000),
}


def default_for(game_id: str) -> TimeControl:
    return DEFAULTS[game_id]


@dataclass(slots=True)
class SeatClock:
    """The referee's measure of one seat's time; all figures in milliseconds."""

    control: TimeControl
    bank_ms: float
    moves: int = 0

    @classmethod
    def start(cls, control: TimeControl) -> SeatClock:
        return cls(control, float(control.bank_ms))

    def limit_ms(self) -> int:
        return self.control.first_move_ms if self.moves == 0 else self.control.move_ms

    def budget_ms(self) -> float:
        """Time until the deadline, grace included, for a move starting now."""
        return self.limit_ms() + self.bank_ms + self.control.grace_ms

    def charge(self, think_ms: float) -> None:
        """A move answered after ``think_ms``: overruns come out of the bank (grace is free)."""
        self.bank_ms = max(0.0, self.bank_ms - max(0.0, think_ms - self.limit_ms()))
        self.moves += 1

    def miss(self) -> None:
        """The deadline passed: the bank is spent."""
        self.bank_ms = 0.0
        self.moves += 1
