"""The rules engines, behind the engine surface of RULINGS.md.

``get(game_id)`` returns the game for ``shangrila-3p``, ``shangrila-4p`` or ``shanghaien``;
``game.new_state()`` its initial state. Engines know nothing of gRPC, Redis or clocks.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal, overload

from referee.games.core import (
    CHANCE,
    TERMINAL,
    Action,
    ActionError,
    ActionSyntaxError,
    Game,
    IllegalActionError,
    State,
    TimeControl,
)
from referee.games.shanghaien import ShanghaienGame
from referee.games.shangrila import ShangriLaGame

GAMES: dict[str, ShangriLaGame | ShanghaienGame] = {
    "shangrila-3p": ShangriLaGame(3),
    "shangrila-4p": ShangriLaGame(4),
    "shanghaien": ShanghaienGame(),
}
GAME_IDS = tuple(GAMES)


@overload
def get(game_id: Literal["shanghaien"]) -> ShanghaienGame: ...
@overload
def get(game_id: Literal["shangrila-3p", "shangrila-4p"]) -> ShangriLaGame: ...
@overload
def get(game_id: str) -> ShangriLaGame | ShanghaienGame: ...
def get(game_id: str) -> ShangriLaGame | ShanghaienGame:
    """The game of ``game_id``; KeyError names the known ids otherwise."""
    try:
        return GAMES[game_id]
    except KeyError:
        raise KeyError(f"unknown game id {game_id!r}; known: {', '.join(GAME_IDS)}") from None


def time_control(game_id: str, overrides: Mapping[str, int | None] | None = None) -> TimeControl:
    """The time control of a match of ``game_id``: the game's default with ``overrides`` (a field given
    as None or 0 keeps the default). The one place a game's default meets what a match asks for, so the
    CLI, the gateway, the referee and a stored match cannot disagree on it. KeyError for an unknown game,
    ValueError for an unknown field or a value out of range (``TimeControl.with_overrides``)."""
    return get(game_id).time_control.with_overrides(**(overrides or {}))


__all__ = [
    "CHANCE",
    "GAMES",
    "GAME_IDS",
    "TERMINAL",
    "Action",
    "ActionError",
    "ActionSyntaxError",
    "Game",
    "IllegalActionError",
    "ShanghaienGame",
    "ShangriLaGame",
    "State",
    "TimeControl",
    "get",
    "time_control",
]
