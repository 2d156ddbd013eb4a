"""What a seat sees of a Shangri-La position. Everything is public (S18), so the view is the whole
position; it is still the one place where hidden information would be filtered."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from referee.games.shangrila.board import DISCIPLINES, NUM_DISCIPLINES, NUM_VILLAGES

if TYPE_CHECKING:
    from referee.games.shangrila.state import ShangriLaState


@dataclass(frozen=True, slots=True)
class Space:
    colour: int
    student: bool


@dataclass(frozen=True, slots=True)
class ShangriLaView:
    game_id: str
    seat: int
    to_move: int
    phase: str  # "setup", "play" or "over"
    ply: int
    colours: tuple[str, ...]
    disciplines: tuple[str, ...]
    villages: tuple[tuple[Space | None, ...], ...]  # [village][discipline]
    supply: tuple[tuple[int, ...], ...]  # [seat][discipline]
    standing_bridges: tuple[tuple[int, int], ...]
    stones: tuple[int, ...]
    consecutive_passes: int
    masters: tuple[int, ...]  # the score so far, per seat

    @classmethod
    def of(cls, state: ShangriLaState, seat: int) -> ShangriLaView:
        n = state.game.num_players
        if not 0 <= seat < n:
            raise ValueError(f"seat {seat} is not a seat of {state.game.game_id}")
        villages = tuple(
            tuple(None if (x := state.space(v, d)) is None else Space(x[0], x[1]) for d in range(NUM_DISCIPLINES))
            for v in range(NUM_VILLAGES)
        )
        return cls(
            game_id=state.game.game_id,
            seat=seat,
            to_move=state.current_player(),
            phase="over" if state.over else "setup" if state.in_setup() else "play",
            ply=state.ply,
            colours=state.game.colours,
            disciplines=DISCIPLINES,
            villages=villages,
            supply=tuple(tuple(state.supply_of(c)) for c in range(n)),
            standing_bridges=tuple(state.standing_bridges()),
            stones=tuple(state.stone_villages()),
            consecutive_passes=state.passes,
            masters=tuple(state.scores()),
        )

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)
