"""One-ply evaluations of a position from one seat's side, used by the greedy reference player."""

from __future__ import annotations

from typing import Any

from referee.games.shanghaien import ShanghaienState
from referee.games.shanghaien.deck import CARD_TYPES, NATIONS
from referee.games.shangrila import ShangriLaState


def shangrila_value(state: ShangriLaState, seat: int) -> float:
    """Own masters against the best opponent's, with a small weight for villages held and students."""
    n = state.game.num_players
    mine = state.masters(seat) + 0.1 * state.villages_held(seat)
    best_other = max(state.masters(c) + 0.1 * state.villages_held(c) for c in range(n) if c != seat)
    students = sum(1 for x in state.board if x == seat + 5)
    return mine - best_other + 0.05 * students


def shanghaien_value(state: ShanghaienState, seat: int) -> float:
    """The H9 score difference if the current tavern were distributed now."""
    if state.is_terminal():
        pts = state.points()
        return pts[seat] - pts[1 - seat]
    totals = list(state.nation_total)
    tricks = [sum(state.tricks[:3]), sum(state.tricks[3:])]
    nn = len(NATIONS)
    for position, card in enumerate(state.tavern):
        taker = state.taker(position)
        if taker < 0:
            continue
        ct = CARD_TYPES[card]
        if ct.is_trick:
            tricks[taker] += 1
        else:
            totals[taker * nn + ct.nation] += ct.value
    pts = [tricks[0], tricks[1]]
    for nation in range(nn):
        t0, t1 = totals[nation], totals[nn + nation]
        if t0 and t1:
            if t0 != t1:
                pts[0 if t0 > t1 else 1] += min(t0, t1)
        elif t0 or t1:
            pts[0 if t0 else 1] += t0 or t1
    return pts[seat] - pts[1 - seat]


def value(state: Any, seat: int) -> float:
    if isinstance(state, ShanghaienState):
        return shanghaien_value(state, seat)
    return shangrila_value(state, seat)
