"""The reference bots' Shangri-La evaluation (``sdk.strategies.shangrila``): the incremental one-ply values
are the evaluation of the position each action leads to, the evaluation is the documented formula, and
remembering positions changes no value."""

from __future__ import annotations

import importlib.util
import random
from pathlib import Path
from typing import Any

import pytest

from referee import games
from referee.games.shangrila import ShangriLaState
from referee.games.shangrila.actions import Kind
from sdk.bots import make_bot
from sdk.players import turn_for
from sdk.strategies import shangrila
from sdk.strategies.shangrila import (
    DEFAULT,
    Analysis,
    ShangriLaStrategy,
    shangrila_action_values,
    shangrila_seat_values,
)

ND = 7
STUDENT = 4


def playout(game_id: str, seed: int, random_share: float) -> list[ShangriLaState]:
    """Every position of one game: each move greedy's, or with probability ``random_share`` a random one."""
    game = games.get(game_id)
    rng = random.Random(seed)
    greedy = make_bot("greedy", seed=seed)
    state: Any = game.new_state()
    out = []
    while not state.is_terminal():
        out.append(state)
        if rng.random() < random_share:
            action = rng.choice(state.legal_actions())
        else:
            action = greedy.act(turn_for(state))
        state = state.apply(action)
    return out


POSITIONS = {
    (game_id, share): playout(game_id, seed, share)[::3]
    for seed, game_id in enumerate(("shangrila-3p", "shangrila-4p"))
    for share in (0.0, 0.4, 1.0)
}
CASES = sorted(POSITIONS)


def reference_values(state: ShangriLaState) -> list[float]:
    """The module docstring's evaluation, written out plainly: per colour its masters, then village by
    village 0.1 if it holds the village and 0.05 per student (not in a Stone village), then village by
    village (open, with students) 0.5 * option + 0.5 * threat of the journeys out of it."""
    g = state.game
    n = g.num_players
    board = state.board
    values = [float(board.count(c + 1) + board.count(c + 1 + STUDENT)) for c in range(n)]
    rows = {v: board[v * ND : v * ND + ND] for v in range(len(g.exits))}
    for v in g.live_villages:
        for c in range(n):
            k = rows[v].count(c + 1 + STUDENT)
            if k or c + 1 in rows[v]:
                values[c] += 0.1
                if k and not state.stones >> v & 1:
                    values[c] += 0.05 * k
    for v in g.live_villages:
        if state.stones >> v & 1:
            continue
        studs = [(d, x - STUDENT - 1) for d, x in enumerate(rows[v]) if x > STUDENT]
        if not studs:
            continue
        triggers = {c for _, c in studs}
        best, worst = [0] * n, [0] * n
        for bit, journey in g.exits[v]:
            if not state.bridges & bit:
                continue
            src, dst = rows[v], rows[journey.dest]

            def tiles(row: list[int]) -> tuple[int, int]:
                return sum(2 if x > STUDENT else 1 if x else 0 for x in row), sum(1 for x in row if x)

            stronger = tiles(src) > tiles(dst)  # S12: tiles, then masters
            delta = [0] * n
            for d, c in studs:  # S13: an empty space, or a stronger source takes another colour's master
                y = dst[d]
                if not y:
                    delta[c] += 1
                elif stronger and (y - 1) % STUDENT != c:
                    delta[c] += 1
                    delta[(y - 1) % STUDENT] -= 1
            gainers = {c for c in triggers if delta[c] > 0}
            for c in gainers:
                best[c] = max(best[c], delta[c])
            for c in range(n):
                if gainers - {c}:
                    worst[c] = min(worst[c], delta[c])
        for c in range(n):
            values[c] += 0.5 * best[c] + 0.5 * worst[c]
    return values


@pytest.mark.parametrize("case", CASES, ids=[f"{g}-random{s}" for g, s in CASES])
def test_the_evaluation_is_the_documented_formula_bit_for_bit(case: tuple[str, float]) -> None:
    for state in POSITIONS[case]:
        if not state.is_terminal():
            assert shangrila_seat_values(state) == reference_values(state)
            assert Analysis(state).values() == reference_values(state)


@pytest.mark.parametrize("case", CASES, ids=[f"{g}-random{s}" for g, s in CASES])
def test_one_ply_values_are_the_values_of_the_position_reached(case: tuple[str, float]) -> None:
    """Journeys and passes exactly; places and one-student recruits up to rounding (their contributions
    are swapped in rather than summed afresh); a two-student recruit is its two recruits' gains added."""
    for state in POSITIONS[case]:
        base = shangrila_seat_values(state)
        values = shangrila_action_values(state)
        assert sorted(str(a) for a, _ in values) == sorted(str(a) for a in state.legal_actions())
        single = {a.spaces[0]: vals for a, vals in values if a.kind is Kind.RECRUIT and len(a.spaces) == 1}
        for action, vals in values:
            if action.kind is Kind.RECRUIT and len(action.spaces) == 2:
                s, t = action.spaces
                assert vals == pytest.approx([x + y - z for x, y, z in zip(single[s], single[t], base, strict=True)])
            elif action.kind in (Kind.JOURNEY, Kind.PASS):
                assert vals == shangrila_seat_values(state.apply(action)), str(action)
            else:
                assert vals == pytest.approx(shangrila_seat_values(state.apply(action)), abs=1e-9), str(action)


def test_changed_terms_agree_with_the_position_reached() -> None:
    """``Analysis.changed`` (the terms a place or recruit changes) adds up to the new position's value."""
    for state in POSITIONS[("shangrila-4p", 0.4)][20:]:
        if state.is_terminal():
            continue
        analysis = Analysis(state)
        p = state.player
        for action in state.legal_actions():
            if action.kind not in (Kind.PLACE, Kind.RECRUIT) or len(action.spaces) != 1:
                continue
            v, d = divmod(action.spaces[0], ND)
            row = state.board[v * ND : v * ND + ND]
            row[d] = p + 1 if action.kind is Kind.PLACE else p + 1 + STUDENT
            before = reference_values(state)
            after = reference_values(state.apply(action))
            change = [0.0] * state.game.num_players
            for old, new in analysis.changed(v, row):
                for terms, sign in ((old, -1), (new, 1)):
                    if terms is not None:
                        for c in range(len(change)):
                            change[c] += sign * (DEFAULT.option * terms[0][c] + DEFAULT.threat * terms[1][c])
            static = [a - b - c for a, b, c in zip(after, before, change, strict=True)]
            before_row = state.board[v * ND : v * ND + ND]
            held = 0.0 if p + 1 in before_row or p + 1 + STUDENT in before_row else DEFAULT.held
            mover = 1.0 + held if action.kind is Kind.PLACE else DEFAULT.student
            assert static == pytest.approx([mover if c == p else 0.0 for c in range(len(change))], abs=1e-9)


def test_remembered_positions_give_the_same_values_in_fresh_lists() -> None:
    strategy = ShangriLaStrategy()
    states = [s for s in POSITIONS[("shangrila-3p", 0.4)] if not s.is_terminal()][:30]
    first = [strategy.action_values(s, s.current_player()) for s in states]
    assert strategy.misses == len(states) and strategy.hits == 0
    for values in first:
        values.reverse()  # a caller's list is its own
    again = [strategy.action_values(s, s.current_player()) for s in states]
    assert strategy.hits == len(states)
    for state, values in zip(states, again, strict=True):
        assert values == shangrila.shangrila_action_margins(state, state.current_player())
    # Another seat's view is computed, not remembered.
    other = (states[0].current_player() + 1) % 3
    assert strategy.action_values(states[0], other) == shangrila.shangrila_action_margins(states[0], other)
    assert strategy.hits == len(states)


def test_the_remembered_positions_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(shangrila, "POSITIONS_CACHED", 5)
    strategy = ShangriLaStrategy()
    states = [s for s in POSITIONS[("shangrila-4p", 1.0)] if not s.is_terminal()][:12]
    for state in states:
        strategy.action_values(state, state.current_player())
    assert len(strategy._cache) == 5


def _strong_v1() -> Any:
    """``benchmarks/strong_v1.py``: the strong bot and its evaluation as they were before issue 16."""
    path = Path(__file__).resolve().parents[1] / "benchmarks" / "strong_v1.py"
    spec = importlib.util.spec_from_file_location("strong_v1", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("case", CASES, ids=[f"{g}-random{s}" for g, s in CASES])
def test_one_ply_values_are_those_of_strong_1_0_0_bit_for_bit(case: tuple[str, float]) -> None:
    v1 = _strong_v1()
    for state in POSITIONS[case]:
        before = v1.action_seat_values(state)
        now = shangrila_action_values(state)
        assert [a for a, _ in now] == [a for a, _ in before]
        assert [vals for _, vals in now] == [vals for _, vals in before]
        if not state.is_terminal():
            seat = state.current_player()
            assert shangrila.STRATEGY.action_values(state, seat) == v1.action_values(state, seat)


def test_strong_decides_as_strong_1_0_0() -> None:
    v1 = _strong_v1()
    states = [s for s in POSITIONS[("shangrila-3p", 0.4)] + POSITIONS[("shangrila-4p", 0.4)] if s.ply >= 21]
    for k, state in enumerate(states[::6]):
        turn = turn_for(state)
        assert make_bot("strong", seed=k, iterations=18).act(turn) is v1.StrongV1Bot(seed=k).act(turn)
