"""``GreedyBot``: the legal action whose resulting position evaluates best, one ply ahead.

The evaluation is the game's strategy (``sdk.strategies``): ``action_values`` gives every legal action the
seat's value one ply of its own decision ahead, chance included (Shanghaien: ``roll`` as the expected
best placement over the dice; Shangri-La: the seat's margin over its best opponent in the position the
action leads to; see ``sdk.strategies.shanghaien`` and ``sdk.strategies.shangrila``).

Ties are broken at random, from the bot's own generator.
"""

from __future__ import annotations

import random
from typing import Any

from sdk.bot import Bot, Turn
from sdk.strategies import EPS, strategy_of

__all__ = ["EPS", "GreedyBot", "action_values", "greedy_action"]


def action_values(state: Any, seat: int) -> list[tuple[Any, float]]:
    """Each legal action of ``state`` (a player's node) with its one-ply value for ``seat``."""
    return strategy_of(state).action_values(state, seat)


def greedy_action(state: Any, rng: random.Random) -> Any:
    """The best action one ply ahead for the player to move; ties broken with ``rng``."""
    return strategy_of(state).greedy_action(state, rng)


class GreedyBot(Bot):
    name = "greedy"
    version = "1.0.0"

    def __init__(self, seed: int | str | None = None) -> None:
        self.rng = random.Random(seed)

    def act(self, turn: Turn) -> Any:
        return greedy_action(turn.state, self.rng)
