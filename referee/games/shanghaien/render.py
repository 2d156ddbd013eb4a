"""A compact text picture of a Shanghaien position: tavern, dice, each crew and its tricks."""

from __future__ import annotations

from typing import TYPE_CHECKING

from referee.games.shanghaien.deck import CARD_TYPES, NATIONS, TRICKS
from referee.games.shanghaien.view import PHASES

if TYPE_CHECKING:
    from referee.games.shanghaien.state import ShanghaienState


def render(state: ShanghaienState) -> str:
    to_move = state.current_player()
    who = {-1: "chance", -2: "-"}.get(to_move, f"seat {to_move}")
    orient = ("not chosen", "fwd (value v on position v)", "rev (value v on position 7-v)")[state.orient]
    lines = [
        f"shanghaien  round {state.round}/8  {PHASES[state.phase]}  to move: {who}  "
        f"starter: seat {state.starter}  orientation: {orient}"
    ]
    if state.rolled:
        lines.append(f"  rolled: {state.rolled[0]} {state.rolled[1]}")
    lines.append("  pos  card            die  seat0 seat1")
    for i, c in enumerate(state.tavern):
        die = str(state.position_value(i)) if state.orient else "?"
        d0, d1 = state.dice_on[i * 2], state.dice_on[i * 2 + 1]
        lines.append(f"  {i + 1:>3}  {CARD_TYPES[c].text:<14}  {die:>3}  {'o' * d0:<5} {'o' * d1:<5}")
    points = state.points()
    for seat in (0, 1):
        totals = state.crew_totals(seat)
        crew = " ".join(f"{NATIONS[n]}:{t}" for n, t in enumerate(totals) if t) or "-"
        held = " ".join(f"{TRICKS[k]}x{state.tricks[seat * 3 + k]}" for k in range(3) if state.tricks[seat * 3 + k])
        used = " (trick used)" if state.trick_used[seat] else ""
        lines.append(
            f"  seat {seat}: dice {6 - state.placed[seat]}/6{used}  crew {crew}  tricks {held or '-'}  "
            f"points {points[seat]}"
        )
    lines.append(f"  deck: {state.deck_left} cards left")
    return "\n".join(lines)
