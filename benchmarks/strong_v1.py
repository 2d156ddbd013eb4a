"""The strong reference bot as it played Shangri-La before issue 16 (``strong`` 1.0.0), frozen.

``benchmarks/strength.py --pairing strong-strong_v1`` plays today's ``strong`` against this copy, so that
a speed-up of the SDK's Shangri-La strategy can be shown to keep the bot's strength (and, where it does,
its every decision). Everything the old bot ran on a Shangri-La move is copied here unchanged but for
names and trims: the evaluation and one-ply values (``sdk/strategies/shangrila.py``), the generic greedy
policy and rollout (``sdk/strategies/base.py``), the opponent model (``sdk/bots/opponents.py``) and the
search (``sdk/bots/strong.py``), at its measured settings (18 rollouts, 6 candidates, depth 2 rounds).
Only the engine (``referee.games``) is shared with the SDK. Shangri-La only.
"""

from __future__ import annotations

import math
import random
import time
from bisect import bisect_right
from collections.abc import Sequence
from typing import Any, Final

from referee.games.shangrila import ShangriLaState
from referee.games.shangrila.actions import Kind
from referee.games.shangrila.board import NUM_DISCIPLINES
from sdk.bot import Bot, MatchOutcome, Turn

ND: Final = NUM_DISCIPLINES
STUDENT: Final = 4
EPS: Final = 1e-9
MIN_PASSES: Final = 10
RACE_Z: Final = 2.0
TIME_SHARE: Final = 0.8
PRIOR: Final = 2.0
ITERATIONS: Final = 18  # MEASURED for shangrila-3p and shangrila-4p
W_HELD: Final = 0.1
W_STUDENT: Final = 0.05
W_OPTION: Final = 0.5
W_THREAT: Final = 0.5

Strength = tuple[int, int]
Students = list[tuple[int, int]]
Terms = tuple[list[int], list[int]]


def margin(values: Sequence[float], seat: int) -> float:
    return values[seat] - max(v for c, v in enumerate(values) if c != seat)


# ------------------------------------------------------------------ evaluation (sdk/strategies/shangrila.py)


def strength(row: list[int]) -> Strength:
    masters = ND - row.count(0)
    return masters + sum(1 for x in row if x > STUDENT), masters


def students(row: list[int]) -> Students:
    return [(d, x - STUDENT - 1) for d, x in enumerate(row) if x > STUDENT]


def journey_deltas(studs: Students, src: Strength, dst_row: list[int], dst: Strength, n: int) -> list[int]:
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


def _static_values(state: ShangriLaState) -> list[float]:
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
                out[c] += W_HELD
                if k and live:
                    out[c] += W_STUDENT * k
    return out


def _with_terms(values: list[float], terms: dict[int, Terms]) -> list[float]:
    for best, worst in terms.values():
        for c, b in enumerate(best):
            values[c] += W_OPTION * b + W_THREAT * worst[c]
    return values


def seat_values(state: ShangriLaState) -> list[float]:
    if state.is_terminal():
        return final_values(state)
    return _with_terms(_static_values(state), Analysis(state).terms)


def final_values(state: ShangriLaState) -> list[float]:
    return [state.masters(c) + 0.05 * state.villages_held(c) for c in range(state.game.num_players)]


def value(state: ShangriLaState, seat: int) -> float:
    return margin(seat_values(state), seat)


def action_seat_values(state: ShangriLaState) -> list[tuple[Any, list[float]]]:
    if state.over:
        return []
    legal = state.legal_actions()
    board = state.board
    p = state.player
    n = state.game.num_players
    analysis = Analysis(state)
    base = _with_terms(_static_values(state), analysis.terms)
    out: list[tuple[Any, list[float]]] = []
    single: dict[int, list[float]] = {}
    pairs: list[Any] = []
    own, own_student = p + 1, p + 1 + STUDENT
    for a in legal:
        kind = a.kind
        if kind is Kind.JOURNEY or kind is Kind.PASS:
            out.append((a, seat_values(state.apply(a))))
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
                vals[p] += W_HELD
            row[d] = own
            vals[p] += 1.0
        else:
            row[d] = own_student
            vals[p] += W_STUDENT
        for old, new in analysis.changed(v, row):
            if old is not None:
                ob, ow = old
                for c in range(n):
                    vals[c] -= W_OPTION * ob[c] + W_THREAT * ow[c]
            if new is not None:
                nb, nw = new
                for c in range(n):
                    vals[c] += W_OPTION * nb[c] + W_THREAT * nw[c]
        out.append((a, vals))
        if kind is Kind.RECRUIT:
            single[s] = vals
    for a in pairs:
        s, t = a.spaces
        vs, vt = single[s], single[t]
        out.append((a, [vs[c] + vt[c] - base[c] for c in range(n)]))
    return out


def action_values(state: ShangriLaState, seat: int) -> list[tuple[Any, float]]:
    return [(a, margin(vals, seat)) for a, vals in action_seat_values(state)]


# ------------------------------------------------------------- greedy and rollout (sdk/strategies/base.py)


def greedy_action(state: ShangriLaState, rng: random.Random) -> Any:
    legal = state.legal_actions()
    if len(legal) == 1:
        return legal[0]
    seat = state.current_player()
    best: list[Any] = []
    best_value = float("-inf")
    for action, v in action_values(state, seat):
        if v > best_value + EPS:
            best, best_value = [action], v
        elif v > best_value - EPS:
            best.append(action)
    return best[0] if len(best) == 1 else rng.choice(best)


def rollout(
    state: ShangriLaState, seat: int, erratic: Sequence[float], depth: int, rng: random.Random, deadline: float | None
) -> float | None:
    for _ in range(depth):
        if state.is_terminal():
            break
        if deadline is not None and time.monotonic() > deadline:
            return None
        player = state.current_player()
        if erratic and rng.random() < erratic[player]:
            state = state.apply(rng.choice(state.legal_actions()))
        else:
            state = state.apply(greedy_action(state, rng))
    return value(state, seat)


# ------------------------------------------------------------------ opponent model (sdk/bots/opponents.py)


def shortfall(state: ShangriLaState, action: Any) -> tuple[float, float]:
    values = action_values(state, state.current_player())
    n = len(values)
    ordered = sorted(v for _, v in values)

    def higher(v: float) -> int:
        return n - bisect_right(ordered, v + EPS)

    played = next(v for a, v in values if a == action)
    return higher(played) / (n - 1), sum(higher(v) for v in ordered) / (n * (n - 1))


class OpponentModel:
    def __init__(self, state: ShangriLaState, seat: int) -> None:
        self.state = state
        self.seat = seat
        self.ply = 0
        n = state.game.num_players
        self.decisions = [0] * n
        self.shortfall = [0.0] * n
        self.room = [0.0] * n

    def update(self, history: Sequence[Any]) -> None:
        for action in history[self.ply :]:
            state = self.state
            player = state.current_player()
            if 0 <= player != self.seat and len(state.legal_actions()) > 1:
                played, uniform = shortfall(state, action)
                self.decisions[player] += 1
                self.shortfall[player] += played
                self.room[player] += uniform
            self.state = state.apply(action)
            self.ply += 1

    def erratic(self) -> list[float]:
        return [min(1.0, s / (room + PRIOR)) for s, room in zip(self.shortfall, self.room, strict=True)]


# ---------------------------------------------------------------------------- search (sdk/bots/strong.py)


class Search:
    def __init__(
        self, state: ShangriLaState, rng: random.Random, candidates: int, depth: int | None, erratic: Sequence[float]
    ) -> None:
        self.state = state
        self.erratic = list(erratic) if any(erratic) else []
        self.rng = rng
        self.seat = state.current_player()
        self.depth = depth if depth is not None else 2 * state.game.num_players
        scored = action_values(state, self.seat)
        rng.shuffle(scored)
        scored.sort(key=lambda x: -x[1])
        scored = scored[:candidates]
        self.actions = [a for a, _ in scored]
        self.children = [state.apply(a) for a in self.actions]
        self.values: list[list[float]] = [[] for _ in self.actions]
        self.alive = list(range(len(self.actions)))
        self.next = 0
        self.passes = 0
        self.seed = rng.getrandbits(32)
        self.done = 0

    @property
    def settled(self) -> bool:
        return len(self.alive) == 1 or (not self.erratic and self.passes >= 1)

    def step(self, deadline: float | None) -> bool:
        i = self.alive[self.next]
        crn = random.Random(self.seed + self.passes)
        v = rollout(self.children[i], self.seat, self.erratic, self.depth, crn, deadline)
        if v is None:
            return False
        self.values[i].append(v)
        self.done += 1
        self.next += 1
        if self.next == len(self.alive):
            self.next = 0
            self.passes += 1
            if self.passes >= MIN_PASSES:
                self._race()
        return True

    def _race(self) -> None:
        n = self.passes
        lead = max(self.alive, key=lambda i: sum(self.values[i][:n]))
        lead_values = self.values[lead]
        keep = []
        for i in self.alive:
            if i != lead:
                diffs = [x - y for x, y in zip(lead_values[:n], self.values[i][:n], strict=True)]
                mean = sum(diffs) / n
                var = sum((d - mean) ** 2 for d in diffs) / (n - 1)
                if mean > 0 and mean * mean * n > RACE_Z * RACE_Z * var:
                    continue
                if var == 0 and mean == 0:
                    continue
            keep.append(i)
        self.alive = keep

    def best(self) -> Any:
        best_i, best_v = self.alive[0], -math.inf
        for i in self.alive:
            vals = self.values[i]
            if vals and sum(vals) / len(vals) > best_v:
                best_i, best_v = i, sum(vals) / len(vals)
        return self.actions[best_i]


def search_action(
    state: ShangriLaState,
    rng: random.Random,
    *,
    deadline: float | None = None,
    iterations: int | None = None,
    candidates: int = 6,
    depth: int | None = None,
    erratic: Sequence[float] = (),
) -> Any:
    legal = state.legal_actions()
    if len(legal) == 1:
        return legal[0]
    search = Search(state, rng, candidates, depth, erratic)
    if len(search.actions) == 1:
        return search.actions[0]
    while (iterations is None or search.done < iterations) and not search.settled:
        if deadline is not None and time.monotonic() >= deadline:
            break
        if not search.step(deadline):
            break
    return search.best()


class StrongV1Bot(Bot):
    """``strong`` 1.0.0 on Shangri-La at its measured rollout count (``iterations``, default 18)."""

    name = "strong_v1"
    version = "1.0.0"

    def __init__(self, seed: int | str | None = None, iterations: int = ITERATIONS) -> None:
        self.rng = random.Random(seed)
        self.iterations = iterations
        self.models: dict[tuple[str, int], OpponentModel] = {}

    def erratic(self, turn: Turn) -> list[float]:
        if len(turn.history) != turn.ply:
            return []
        key = (turn.match_id, turn.seat)
        model = self.models.get(key)
        if model is None or model.ply > turn.ply:
            model = self.models[key] = OpponentModel(turn.state.game.new_state(), turn.seat)
        model.update(turn.history)
        return model.erratic()

    def on_match_end(self, outcome: MatchOutcome) -> None:
        self.models.pop((outcome.match_id, outcome.seat), None)

    def act(self, turn: Turn) -> Any:
        if turn.state.game.family != "shangrila":
            raise ValueError(f"{self.name} plays Shangri-La only, not {turn.game_id}")
        deadline = time.monotonic() + TIME_SHARE * turn.time_left() if turn.move_ms > 0 else None
        return search_action(turn.state, self.rng, deadline=deadline, iterations=self.iterations,
                             erratic=self.erratic(turn))  # fmt: skip
