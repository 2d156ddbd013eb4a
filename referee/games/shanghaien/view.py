"""What a seat sees of a Shanghaien position.

H10: only the future is hidden (the undealt cards' order, dice not yet rolled, the match seed).
The engine holds no hidden state, since chance is explicit; this is still the single place where
a seat's view is cut from a state, so a rule that hid something would filter it here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from referee.games.shanghaien.deck import CARD_TYPES, NATIONS, TRICKS

if TYPE_CHECKING:
    from referee.games.shanghaien.state import ShanghaienState

PHASES = ("deal", "turn", "dice", "place", "over")


@dataclass(frozen=True, slots=True)
class Crew:
    """What one seat has won: sailor cards, wild sailors, unplayed dirty tricks."""

    sailors: tuple[str, ...]  # card texts, e.g. "german-3"
    wild: tuple[tuple[str, str], ...]  # (trick kind, nation)
    strength: dict[str, int]  # nation -> total, wild sailors counted 2
    tricks: dict[str, int]  # trick kind -> unplayed cards held
    dice_in_supply: int
    placed_this_round: int
    trick_used_this_round: bool


@dataclass(frozen=True, slots=True)
class TavernCard:
    position: int  # 1..6
    card: str
    die_value: int | None  # the die value that goes here this round; None before the orientation is set
    dice: tuple[int, int]  # dice on it per seat


@dataclass(frozen=True, slots=True)
class NationScore:
    """One nationality's line of the H9 scoring."""

    nation: str
    totals: tuple[int, int]  # each seat's crew strength in it, wild sailors counted 2
    seat: int  # the seat that scores it; -1 for nobody (no sailors, or equal totals)
    points: int


@dataclass(frozen=True, slots=True)
class ScoreSheet:
    """How ``points`` come about (H9), line by line: what a replay shows at the end of a match."""

    nations: tuple[NationScore, ...]  # every nationality, in deck order
    tricks: tuple[int, int]  # unplayed dirty-tricks cards each seat holds: one point each
    points: tuple[int, int]

    def to_dict(self) -> dict[str, Any]:
        return {
            "nations": [
                {"nation": x.nation, "totals": list(x.totals), "seat": x.seat, "points": x.points} for x in self.nations
            ],
            "tricks": list(self.tricks),
            "points": list(self.points),
        }


@dataclass(frozen=True, slots=True)
class ShanghaienView:
    game_id: str
    seat: int
    to_move: int
    phase: str
    round: int
    starter: int
    orientation: str | None  # "fwd", "rev" or None
    tavern: tuple[TavernCard, ...]
    rolled: tuple[int, ...]
    crews: tuple[Crew, ...]
    deck_left: dict[str, int]  # card text -> copies not yet dealt (public by counting)
    out_of_game: tuple[str, ...]
    points: tuple[int, ...]  # H9 score if the game ended now

    @classmethod
    def of(cls, state: ShanghaienState, seat: int) -> ShanghaienView:
        if seat not in (0, 1):
            raise ValueError(f"seat {seat} is not a seat of shanghaien")
        crews = []
        for s in (0, 1):
            totals = state.crew_totals(s)
            crews.append(
                Crew(
                    sailors=tuple(CARD_TYPES[c].text for c in state.crews[s]),
                    wild=tuple((TRICKS[k], NATIONS[n]) for k, n in state.wilds[s]),
                    strength={NATIONS[n]: t for n, t in enumerate(totals) if t},
                    tricks={TRICKS[k]: state.tricks[s * len(TRICKS) + k] for k in range(len(TRICKS))},
                    dice_in_supply=6 - state.placed[s],
                    placed_this_round=state.placed[s],
                    trick_used_this_round=state.trick_used[s],
                )
            )
        tavern = tuple(
            TavernCard(
                position=i + 1,
                card=CARD_TYPES[c].text,
                die_value=state.position_value(i) if state.orient else None,
                dice=(state.dice_on[i * 2], state.dice_on[i * 2 + 1]),
            )
            for i, c in enumerate(state.tavern)
        )
        return cls(
            game_id="shanghaien",
            seat=seat,
            to_move=state.current_player(),
            phase=PHASES[state.phase],
            round=state.round,
            starter=state.starter,
            orientation=(None, "fwd", "rev")[state.orient],
            tavern=tavern,
            rolled=state.rolled,
            crews=tuple(crews),
            deck_left={CARD_TYPES[t].text: n for t, n in enumerate(state.deck) if n},
            out_of_game=tuple(CARD_TYPES[c].text for c in state.discards),
            points=tuple(state.points()),
        )

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready data, built directly (it is on the referee's per-turn path)."""
        return {
            "game_id": self.game_id,
            "seat": self.seat,
            "to_move": self.to_move,
            "phase": self.phase,
            "round": self.round,
            "starter": self.starter,
            "orientation": self.orientation,
            "tavern": [
                {"position": t.position, "card": t.card, "die_value": t.die_value, "dice": list(t.dice)}
                for t in self.tavern
            ],
            "rolled": list(self.rolled),
            "crews": [
                {
                    "sailors": list(c.sailors),
                    "wild": [list(w) for w in c.wild],
                    "strength": dict(c.strength),
                    "tricks": dict(c.tricks),
                    "dice_in_supply": c.dice_in_supply,
                    "placed_this_round": c.placed_this_round,
                    "trick_used_this_round": c.trick_used_this_round,
                }
                for c in self.crews
            ],
            "deck_left": dict(self.deck_left),
            "out_of_game": list(self.out_of_game),
            "points": list(self.points),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ShanghaienView:
        return cls(
            game_id=data["game_id"],
            seat=data["seat"],
            to_move=data["to_move"],
            phase=data["phase"],
            round=data["round"],
            starter=data["starter"],
            orientation=data["orientation"],
            tavern=tuple(
                TavernCard(t["position"], t["card"], t["die_value"], (t["dice"][0], t["dice"][1]))
                for t in data["tavern"]
            ),
            rolled=tuple(data["rolled"]),
            crews=tuple(
                Crew(
                    sailors=tuple(c["sailors"]),
                    wild=tuple((w[0], w[1]) for w in c["wild"]),
                    strength=dict(c["strength"]),
                    tricks=dict(c["tricks"]),
                    dice_in_supply=c["dice_in_supply"],
                    placed_this_round=c["placed_this_round"],
                    trick_used_this_round=c["trick_used_this_round"],
                )
                for c in data["crews"]
            ),
            deck_left=dict(data["deck_left"]),
            out_of_game=tuple(data["out_of_game"]),
            points=tuple(data["points"]),
        )
