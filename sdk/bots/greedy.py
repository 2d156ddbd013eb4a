"""``GreedyBot``: the legal action whose resulting position evaluates best, one ply ahead.

The evaluation is ``sdk.heuristics.value`` (the seat's margin over its best opponent). One ply of the
player's own decision is looked at, chance included:

- Shanghaien: ``roll`` is valued as the expectation, over the 21 dice outcomes, of the best direct
  placement (``place`` or ``both``); ``reroll`` likewise; ``wild``/``adjust`` as the best placement that
  follows them. On equal values ``shanghai`` is preferred to ``roll`` (it denies the opponent's dice).
- Shangri-La: every action's resulting position is evaluated, except that a two-student recruit is
  valued as the sum of its two one-student recruits' gains (they are independent but for supply).

Ties are broken at random, from the bot's own generator.
"""

from __future__ import annotations

import random
from typing import Any, Final

from referee.games.shanghaien import ShanghaienState
from referee.games.shanghaien.actions import Kind as HKind
from referee.games.shangrila import ShangriLaState
from sdk.bot import Bot, Turn
from sdk.heuristics import DEFAULT, Weights, margin, shanghaien_value, shangrila_action_values

EPS: Final = 1e-9
SHANGHAI_BONUS: Final = 1e-6  # prefer calling Shanghai to rolling when they are worth the same
_DIRECT: Final = (HKind.PLACE, HKind.BOTH)


# ------------------------------------------------------------------------------ Shanghaien


def best_direct_placement(state: ShanghaienState, seat: int) -> float:
    """At a PLACE node: the best value of a ``place`` or ``both`` (no other trick)."""
    return max(shanghaien_value(state.apply(a), seat) for a in state.legal_actions() if a.kind in _DIRECT)


def expected_after_dice(state: ShanghaienState, seat: int) -> float:
    """At a DICE node: the expectation over the dice of the best direct placement."""
    return sum(p * best_direct_placement(state.apply(d), seat) for d, p in state.chance_outcomes())


def shanghaien_action_value(state: ShanghaienState, action: Any, seat: int) -> float:
    after = state.apply(action)
    kind = action.kind
    if kind is HKind.ROLL or kind is HKind.REROLL:
        return expected_after_dice(after, seat)
    if kind is HKind.WILD or kind is HKind.ADJUST:
        return best_direct_placement(after, seat)
    bonus = SHANGHAI_BONUS if kind is HKind.SHANGHAI else 0.0
    return shanghaien_value(after, seat) + bonus


# ------------------------------------------------------------------------------ Shangri-La


def shangrila_action_margins(state: ShangriLaState, seat: int, w: Weights = DEFAULT) -> list[tuple[Any, float]]:
    """Each legal action with the seat's margin in the position it leads to."""
    return [(a, margin(vals, seat)) for a, vals in shangrila_action_values(state, w)]


# ----------------------------------------------------------------------------------- both


def action_values(state: Any, seat: int) -> list[tuple[Any, float]]:
    """Each legal action of ``state`` (a player's node) with its one-ply value for ``seat``."""
    if isinstance(state, ShanghaienState):
        return [(a, shanghaien_action_value(state, a, seat)) for a in state.legal_actions()]
    return shangrila_action_margins(state, seat)


def greedy_action(state: Any, rng: random.Random) -> Any:
    """The best action one ply ahead for the player to move; ties broken with ``rng``."""
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


class GreedyBot(Bot):
    name = "greedy"
    version = "1.0.0"

    def __init__(self, seed: int | str | None = None) -> None:
        self.rng = random.Random(seed)

    def act(self, turn: Turn) -> Any:
        return greedy_action(turn.state, self.rng)
