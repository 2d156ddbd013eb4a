"""The referee-side clock of one seat, applying a match's ``TimeControl`` (a game fact, ``referee.games``).

A seat's budget for a move is its limit (``first_move_ms`` for its first move of the match,
``move_ms`` after) plus whatever is left of its time bank, plus ``grace_ms`` of network margin
that is never reported to the bot. Time beyond the limit is taken from the bank; a seat that is
still silent at the deadline gets a strike, its bank is emptied and the fallback action is played.
"""

from __future__ import annotations

from dataclasses import dataclass

from referee.games import TimeControl


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
