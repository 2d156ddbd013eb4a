"""The rules engines, behind the engine surface of RULINGS.md, and the registry of the games.

``get(game_id)`` returns the ``Game`` of a registered game id (``shangrila-3p``, ``shangrila-4p``,
``shanghaien``); ``game.new_state()`` its initial state. Engines know nothing of gRPC, Redis or clocks.

Each game family is registered once, below (``GameEntry``): its engines, and by name its reference
bots' strategy and its replay drawing, which ``sdk.strategies`` and ``arena.replay`` find from the
entry (``entry_of``). A new game adds its engine package and one ``register`` call here.
"""

from __future__ import annotations

from collections.abc import Mapping

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
from referee.games.registry import GameEntry, load
from referee.games.shanghaien import ShanghaienGame
from referee.games.shangrila import ShangriLaGame

GAMES: dict[str, Game] = {}
"""Game id -> its game, in registration order (the order the CLI lists them in)."""
FAMILIES: dict[str, GameEntry] = {}
"""Game family (``Game.family``) -> its registration."""
GAME_IDS: tuple[str, ...] = ()


def register(entry: GameEntry) -> GameEntry:
    """Add a game family's registration; ValueError if its family or one of its game ids is taken."""
    global GAME_IDS  # noqa: PLW0603 - read as games.GAME_IDS everywhere: it follows GAMES
    taken = [g.game_id for g in entry.games if g.game_id in GAMES]
    if entry.family in FAMILIES or taken:
        raise ValueError(f"already registered: {entry.family} {' '.join(taken)}".rstrip())
    FAMILIES[entry.family] = entry
    GAMES.update((g.game_id, g) for g in entry.games)
    GAME_IDS = tuple(GAMES)
    return entry


def unregister(family: str) -> None:
    """Remove a family's registration (tests register toy games for a while)."""
    global GAME_IDS  # noqa: PLW0603 - read as games.GAME_IDS everywhere: it follows GAMES
    entry = FAMILIES.pop(family)
    for g in entry.games:
        del GAMES[g.game_id]
    GAME_IDS = tuple(GAMES)


def get(game_id: str) -> Game:
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


def entry_of(game: Game) -> GameEntry:
    """The registration of ``game``'s family; KeyError names the known families otherwise."""
    try:
        return FAMILIES[game.family]
    except KeyError:
        raise KeyError(f"no game family {game.family!r} ({game.game_id}) is registered; "
                       f"known: {', '.join(FAMILIES)}") from None  # fmt: skip


register(GameEntry(
    games=(ShangriLaGame(3), ShangriLaGame(4)),
    strategy="sdk.strategies.shangrila:STRATEGY",
    replay="arena.replay.games.shangrila:DRAWING",
))  # fmt: skip
register(GameEntry(
    games=(ShanghaienGame(),),
    strategy="sdk.strategies.shanghaien:STRATEGY",
    replay="arena.replay.games.shanghaien:DRAWING",
))  # fmt: skip

__all__ = [
    "CHANCE",
    "FAMILIES",
    "GAMES",
    "GAME_IDS",
    "TERMINAL",
    "Action",
    "ActionError",
    "ActionSyntaxError",
    "Game",
    "GameEntry",
    "IllegalActionError",
    "ShanghaienGame",
    "ShangriLaGame",
    "State",
    "TimeControl",
    "entry_of",
    "get",
    "load",
    "register",
    "time_control",
    "unregister",
]
