"""The referee's own description of a match to run (converted from the wire at the server's edge).
What a match produces, ``MatchResult``, crosses the wire and lives in ``referee.wire.contract``."""

from __future__ import annotations

from dataclasses import dataclass, field

from referee import games
from referee.chance import new_seed
from referee.games import TimeControl


@dataclass(frozen=True, slots=True)
class SeatSpec:
    seat: int
    bot_name: str
    token_sha256: str


@dataclass(frozen=True, slots=True)
class MatchSpec:
    match_id: str
    game_id: str
    seats: tuple[SeatSpec, ...]
    seed: str = field(default_factory=new_seed)
    time_control: TimeControl | None = None
    rated: bool = False

    @property
    def control(self) -> TimeControl:
        return self.time_control or games.time_control(self.game_id)
