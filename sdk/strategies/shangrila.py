"""What the reference bots know of The Bridges of Shangri-La (S1-S18): evaluation and one-ply values.

Evaluation (S17 counts masters): a seat's value is

    masters + 0.1 * villages held (the tie-break) + 0.05 * students outside Stone villages
    + 0.5 * options - 0.5 * threats

where, for every village without a Stone that holds students, the seat's *option* is the most masters
it would gain from a journey out of that village that it may start itself (it has a student there),
and its *threat* the most masters it would lose to a journey out of it that another colour may start
and would gain from. ``shangrila_action_values`` values every legal action of a position this way,
recomputing only the villages an action touches (places and recruits), so a greedy move is cheap: a
two-student recruit is valued as the sum of its two one-student recruits' gains (they are independent
but for supply).

Strong: the generic ``GameStrategy`` search (its ``candidates`` best actions, rollouts of ``depth``
plies valued by the seat's margin, opponents modelled by ``sdk.bots.opponents``).
"""

from __future__ import annotations

from typing import Any, Final, NamedTuple

from referee.games.shangrila import ShangriLaState
from referee.games.shangrila.actions import Kind
from referee.games.shangrila.board import NUM_DISCIPLINES
from sdk.strategies.base import GameStrategy, margin

ND: Final = NUM_DISCIPLINES
STUDENT: Final = 4  # the engine's board code: a master's code plus 4 when it has its student


class Weights(NamedTuple):
    """Weights of the Shangri-La seat value (masters count 1)."""

    held: float = 0.1  # per village holding a master of the seat (the S17 tie-break)
    student: float = 0.05  # per student outside Stone villages
    option: float = 0.5  # per master the seat's best journey out of a village would win it
    threat: float = 0.5  # per master another colour's attractive journey out of a village would take


DEFAULT: Final = Weights()


# ------------------------------------------------------------------------------ Shangri-La


Strength = tuple[int, int]
"""(tiles, masters) of a village: S12 compares them in this order, so tuple order is S12's."""

Students = list[tuple[int, int]]
"""(discipline, colour) of each student in a village."""


def strength(row: list[int]) -> Strength:
    masters = ND - row.count(0)
    return masters + sum(1 for x in row if x > STUDENT), masters


def students(row: list[int]) -> Students:
    return [(d, x - STUDENT - 1) for d, x in enumerate(row) if x > STUDENT]


def journey_deltas(studs: Students, src: Strength, dst_row: list[int], dst: Strength, n: int) -> list[int]:
    """Change in each colour's masters if the students ``studs`` of a village of strength ``src``
    travelled to a village with ``dst_row`` of strength ``dst`` (S12, S13)."""
    stronger = src > dst
    delta = [0] * n
    for d, c in studs:
        y = dst_row[d]
        if not y:
            delta[c] += 1
        elif stronger:
            owner = (y - 1) & 3
            if owner != c:
                delta[c] += 1
                delta[owner] -= 1
    return delta


Terms = tuple[list[int], list[int]]
"""(best, worst) per colour from the journeys out of one village: the option and the threat."""


def _terms(studs: Students, deltas: list[list[int]], n: int) -> Terms:
    triggers = 0
    for _, c in studs:
        triggers |= 1 << c
    best = [0] * n
    worst = [0] * n
    for delta in deltas:
        attractive = 0
        for c in range(n):
            if delta[c] > 0 and triggers >> c & 1:
                attractive |= 1 << c
                best[c] = max(best[c], delta[c])
        if attractive:
            for c in range(n):
                if delta[c] < worst[c] and attractive & ~(1 << c):
                    worst[c] = delta[c]
    return best, worst


class Analysis:
    """What the journey terms of a position are built from, kept so that one action's change can be
    re-evaluated village by village."""

    __slots__ = ("board", "exits", "n", "strengths", "studs", "terms")

    def __init__(self, state: ShangriLaState) -> None:
        g = state.game
        board = state.board
        bridges = state.bridges
        stones = state.stones
        self.n = n = g.num_players
        self.board = board
        self.strengths: list[Strength] = [(0, 0)] * len(g.exits)
        self.studs: dict[int, Students] = {}
        self.exits: dict[int, list[int]] = {}
        for v in g.live_villages:
            if stones >> v & 1:
                continue
            row = board[v * ND : v * ND + ND]
            self.strengths[v] = strength(row)
            self.exits[v] = [x.dest for bit, x in g.exits[v] if bridges & bit]
            studs = students(row)
            if studs:
                self.studs[v] = studs
        self.terms: dict[int, Terms] = {}
        for v, studs in self.studs.items():
            sv = self.strengths[v]
            deltas = [
                journey_deltas(studs, sv, board[w * ND : w * ND + ND], self.strengths[w], n) for w in self.exits[v]
            ]
            self.terms[v] = _terms(studs, deltas, n)

    def changed(self, v: int, row: list[int]) -> list[tuple[Terms | None, Terms | None]]:
        """(old, new) terms of each village whose journeys change when village ``v`` becomes ``row``."""
        n = self.n
        board = self.board
        strengths = self.strengths
        sv = strength(row)
        out: list[tuple[Terms | None, Terms | None]] = []
        studs = students(row)
        exits = self.exits[v]
        new: Terms | None = None
        if studs:
            deltas = [journey_deltas(studs, sv, board[w * ND : w * ND + ND], strengths[w], n) for w in exits]
            new = _terms(studs, deltas, n)
        out.append((self.terms.get(v), new))
        for u in exits:
            su = self.studs.get(u)
            if su is None:
                continue
            st = strengths[u]
            deltas = [
                journey_deltas(su, st, row, sv, n)
                if w == v
                else journey_deltas(su, st, board[w * ND : w * ND + ND], strengths[w], n)
                for w in self.exits[u]
            ]
            out.append((self.terms[u], _terms(su, deltas, n)))
        return out


def _static_values(state: ShangriLaState, w: Weights) -> list[float]:
    """Masters, villages held and students per colour, weighted (no journey terms)."""
    n = state.game.num_players
    board = state.board
    stones = state.stones
    out = [float(board.count(c + 1) + board.count(c + 1 + STUDENT)) for c in range(n)]
    for v in state.game.live_villages:
        base = v * ND
        row = board[base : base + ND]
        live = not stones >> v & 1
        for c in range(n):
            m = c + 1
            k = row.count(m + STUDENT)
            if k or m in row:
                out[c] += w.held
                if k and live:
                    out[c] += w.student * k
    return out


def _with_terms(values: list[float], terms: dict[int, Terms], w: Weights) -> list[float]:
    for best, worst in terms.values():
        for c, b in enumerate(best):
            values[c] += w.option * b + w.threat * worst[c]
    return values


def shangrila_seat_values(state: ShangriLaState, w: Weights = DEFAULT) -> list[float]:
    """One value per seat: masters + tie-break + students + journey options - journey threats."""
    if state.is_terminal():
        return shangrila_final_values(state)
    return _with_terms(_static_values(state, w), Analysis(state).terms, w)


def shangrila_final_values(state: ShangriLaState) -> list[float]:
    """Masters plus a twentieth of villages held: orders seats exactly as S17 ranks them."""
    return [state.masters(c) + 0.05 * state.villages_held(c) for c in range(state.game.num_players)]


def shangrila_value(state: ShangriLaState, seat: int, w: Weights = DEFAULT) -> float:
    """Own value against the best opponent's (at the end: the S17 score and tie-break margin)."""
    return margin(shangrila_seat_values(state, w), seat)


def shangrila_action_values(state: ShangriLaState, w: Weights = DEFAULT) -> list[tuple[Any, list[float]]]:
    """Every legal action with the seat values of the position it leads to.

    Places and one-student recruits are valued exactly but incrementally: only the journey terms of
    the village they touch and of its neighbours are recomputed. A two-student recruit is valued as
    its two one-student recruits' gains added up. Journeys and passes are applied and evaluated.
    """
    if state.over:
        return []
    legal = state.legal_actions()
    board = state.board
    p = state.player
    n = state.game.num_players
    analysis = Analysis(state)
    base = _with_terms(_static_values(state, w), analysis.terms, w)
    w_option, w_threat = w.option, w.threat
    out: list[tuple[Any, list[float]]] = []
    single: dict[int, list[float]] = {}
    pairs: list[Any] = []
    own, own_student = p + 1, p + 1 + STUDENT
    for a in legal:
        kind = a.kind
        if kind is Kind.JOURNEY or kind is Kind.PASS:
            out.append((a, shangrila_seat_values(state.apply(a), w)))
            continue
        if kind is Kind.RECRUIT and len(a.spaces) == 2:
            pairs.append(a)
            continue
        s = a.spaces[0]
        v, d = divmod(s, ND)
        row = board[v * ND : v * ND + ND]
        vals = base.copy()
        if kind is Kind.PLACE:
            if own not in row and own_student not in row:
                vals[p] += w.held
            row[d] = own
            vals[p] += 1.0
        else:
            row[d] = own_student
            vals[p] += w.student
        for old, new in analysis.changed(v, row):
            if old is not None:
                ob, ow = old
                for c in range(n):
                    vals[c] -= w_option * ob[c] + w_threat * ow[c]
            if new is not None:
                nb, nw = new
                for c in range(n):
                    vals[c] += w_option * nb[c] + w_threat * nw[c]
        out.append((a, vals))
        if kind is Kind.RECRUIT:
            single[s] = vals
    for a in pairs:
        s, t = a.spaces
        vs, vt = single[s], single[t]
        out.append((a, [vs[c] + vt[c] - base[c] for c in range(n)]))
    return out


def shangrila_action_margins(state: ShangriLaState, seat: int, w: Weights = DEFAULT) -> list[tuple[Any, float]]:
    """Each legal action with the seat's margin in the position it leads to."""
    return [(a, margin(vals, seat)) for a, vals in shangrila_action_values(state, w)]


class ShangriLaStrategy(GameStrategy[ShangriLaState]):
    family = "shangrila"

    def seat_values(self, state: ShangriLaState) -> list[float]:
        return shangrila_seat_values(state)

    def action_values(self, state: ShangriLaState, seat: int) -> list[tuple[Any, float]]:
        return shangrila_action_margins(state, seat)


STRATEGY: Final = ShangriLaStrategy()
