"""What a seat sees of a Shangri-La position. Everything is public (S18), so the view is the whole
position; it is still the one place where hidden information would be filtered."""

from __future__ import annotations

from dataclasses import dataclass
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
        """Plain JSON-ready data (spaces as ``[colour, student]`` or null), built directly: it is on
        the referee's per-turn path, where ``dataclasses.asdict`` costs ten times more."""
        return {
            "game_id": self.game_id,
            "seat": self.seat,
            "to_move": self.to_move,
            "phase": self.phase,
            "ply": self.ply,
            "colours": list(self.colours),
            "disciplines": list(self.disciplines),
            "villages": [[None if sp is None else [sp.colour, sp.student] for sp in row] for row in self.villages],
            "supply": [list(row) for row in self.supply],
            "standing_bridges": [list(b) for b in self.standing_bridges],
            "stones": list(self.stones),
            "consecutive_passes": self.consecutive_passes,
            "masters": list(self.masters),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ShangriLaView:
        return cls(
            game_id=data["game_id"],
            seat=data["seat"],
            to_move=data["to_move"],
            phase=data["phase"],
            ply=data["ply"],
            colours=tuple(data["colours"]),
            disciplines=tuple(data["disciplines"]),
            villages=tuple(
                tuple(None if sp is None else Space(sp[0], bool(sp[1])) for sp in row) for row in data["villages"]
            ),
            supply=tuple(tuple(row) for row in data["supply"]),
            standing_bridges=tuple((a, b) for a, b in data["standing_bridges"]),
            stones=tuple(data["stones"]),
            consecutive_passes=data["consecutive_passes"],
            masters=tuple(data["masters"]),
        )
