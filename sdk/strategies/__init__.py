"""What the reference bots know of each game, keyed by game family (``referee.games`` ``Game.family``).

``strategy_of(state)`` (or ``strategy_for(game)``) is the ``GameStrategy`` the generic bots and
``sdk.heuristics`` use for everything game-specific. Adding a game: write its module (a
``GameStrategy`` subclass with at least ``seat_values`` and ``action_values``) and add one entry below.
"""

from __future__ import annotations

from typing import Any

from referee.games import Game, State
from sdk.strategies import shanghaien, shangrila
from sdk.strategies.base import EPS, GameStrategy, OpponentWatch, margin

STRATEGIES: dict[str, GameStrategy[Any]] = {
    "shanghaien": shanghaien.STRATEGY,
    "shangrila": shangrila.STRATEGY,
}
"""Game family -> the reference bots' strategy for it."""


def strategy_for(game: Game) -> GameStrategy[Any]:
    """The strategy for ``game``'s family; KeyError names the families known otherwise."""
    try:
        return STRATEGIES[game.family]
    except KeyError:
        raise KeyError(
            f"the reference bots know no game family {game.family!r} ({game.game_id}); known: {', '.join(STRATEGIES)}"
        ) from None


def strategy_of(state: State) -> GameStrategy[Any]:
    """The strategy for the game ``state`` belongs to."""
    return strategy_for(state.game)


__all__ = ["EPS", "STRATEGIES", "GameStrategy", "OpponentWatch", "margin", "strategy_for", "strategy_of"]
