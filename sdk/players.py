"""Reference players as plain policies: (state, rng) -> legal action.

They use only the engine surface, so they run inside the referee (as fallbacks), in local
simulation, and behind the gRPC bot client alike. ``rng`` is the caller's, never a global.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from sdk.heuristics import value

Player = Callable[[Any, random.Random], Any]


def random_player(state: Any, rng: random.Random) -> Any:
    """A uniformly random legal action."""
    return rng.choice(state.legal_actions())


def greedy_player(state: Any, rng: random.Random) -> Any:
    """The action whose resulting position scores best one ply ahead (ties broken at random).

    A chance node that follows (a roll) is valued at the position before it, so the player
    rolls whenever calling Shanghai would not gain on the tavern as it stands.
    """
    seat = state.current_player()
    best: list[Any] = []
    best_value = float("-inf")
    for action in state.legal_actions():
        v = value(state.apply(action), seat)
        if v > best_value + 1e-9:
            best, best_value = [action], v
        elif v > best_value - 1e-9:
            best.append(action)
    return rng.choice(best)


PLAYERS: dict[str, Player] = {"random": random_player, "greedy": greedy_player}
