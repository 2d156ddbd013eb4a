"""What the reference bots know of each game, found from the game's registration (``referee.games``).

``strategy_of(state)`` (or ``strategy_for(game)``) is the ``GameStrategy`` the generic bots and
``sdk.heuristics`` use for everything game-specific: the one the game family's ``GameEntry.strategy``
names. Adding a game: write its module (a ``GameStrategy`` subclass with at least ``seat_values`` and
``action_values``) and name it in the game's registration; nothing here changes.
"""

from __future__ import annotations

from typing import Any

from referee import games
from referee.games import Game, State
from sdk.strategies.base import EPS, GameStrategy, OpponentWatch, margin

_LOADED: dict[str, GameStrategy[Any]] = {}
"""Entry-point string -> the strategy it names (the bots ask on every move: look it up once)."""


def strategy_for(game: Game) -> GameStrategy[Any]:
    """The strategy ``game``'s registration names; KeyError names the families known otherwise."""
    try:
        ref = games.FAMILIES[game.family].strategy
    except KeyError:
        known = ", ".join(games.FAMILIES)
        raise KeyError(
            f"the reference bots know no game family {game.family!r} ({game.game_id}); known: {known}"
        ) from None
    strategy = _LOADED.get(ref)
    if strategy is None:
        strategy = _LOADED[ref] = games.load(ref)
        if not isinstance(strategy, GameStrategy):
            raise TypeError(f"{ref} is no sdk.strategies.GameStrategy")
    return strategy


def strategy_of(state: State) -> GameStrategy[Any]:
    """The strategy for the game ``state`` belongs to."""
    return strategy_for(state.game)


__all__ = ["EPS", "GameStrategy", "OpponentWatch", "margin", "strategy_for", "strategy_of"]
