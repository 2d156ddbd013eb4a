"""A compact text picture of a Shangri-La position, for people (CLI, transcripts, debugging)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from referee.games.shangrila.board import DISCIPLINES, NUM_DISCIPLINES, NUM_VILLAGES, neighbours

if TYPE_CHECKING:
    from referee.games.shangrila.state import ShangriLaState

LETTERS = "RBYV"  # red, blue, yellow, violet


def render(state: ShangriLaState) -> str:
    g = state.game
    phase = "over" if state.over else "setup" if state.in_setup() else "play"
    to_move = "-" if state.over else f"{g.colours[state.player]} ({LETTERS[state.player]}, seat {state.player})"
    lines = [f"{g.game_id}  ply {state.ply}  {phase}  to move: {to_move}"]
    lines.append("  R=master r=student (R+r master with student)  # = Stone")
    header = " ".join(f"{d[:4]:>5}" for d in DISCIPLINES)
    lines.append(f"  vil  {header}  tiles  bridges")
    standing = set(state.standing_bridges())
    for v in range(NUM_VILLAGES):
        cells = []
        tiles = 0
        for d in range(NUM_DISCIPLINES):
            sp = state.space(v, d)
            if sp is None:
                cells.append(f"{'.':>5}")
            else:
                colour, student = sp
                letter = LETTERS[colour]
                cells.append(f"{letter + '+' + letter.lower() if student else letter:>5}")
                tiles += 2 if student else 1
        links = []
        for w in neighbours(v):
            if v not in g.live_villages or w not in g.live_villages:
                continue
            key = (min(v, w), max(v, w))
            links.append(f"{w}" if key in standing else f"x{w}")
        stone = "#" if state.stones >> v & 1 else " "
        lines.append(f"{stone} {v:>3}  {' '.join(cells)}  {tiles:>5}  {' '.join(links)}")
    lines.append("  supply  " + " ".join(f"{d[:4]:>5}" for d in DISCIPLINES) + "  masters villages")
    for c in range(g.num_players):
        sup = " ".join(f"{n:>5}" for n in state.supply_of(c))
        lines.append(f"  {g.colours[c]:<7} {sup}  {state.masters(c):>7} {state.villages_held(c):>8}")
    return "\n".join(lines)
